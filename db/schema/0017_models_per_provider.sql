-- A model id may be served by several providers of an organization (the same model
-- through two gateways): a catalog row is a model of one provider, and a request
-- names the provider when the id alone is ambiguous.
alter table app.models drop constraint models_pkey;
alter table app.models add primary key (organization_id, provider_slug, id);
