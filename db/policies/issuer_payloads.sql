-- What oidc-provider keeps between requests: sessions, interactions, grants, codes
-- and access tokens of the identity issuer. Credentials, not tenant data: no policy
-- admits the request role.
-- Past these policies: app.issuer_store (oidc-provider's adapter: clients present codes
-- and tokens with no caller to admit them).
alter table app.issuer_payloads enable row level security;
alter table app.issuer_payloads force row level security;
select app.drop_policies('app.issuer_payloads');
