-- The identity issuer's RS256 signing keys, private halves included. No policy admits
-- the request role; `admin oidc rotate-keys` runs as the owner.
-- Past these policies: app.issuer_keys (the issuer reads the keys it signs and
-- publishes with through this door only, and stores its first one).
alter table app.issuer_signing_keys enable row level security;
alter table app.issuer_signing_keys force row level security;
select app.drop_policies('app.issuer_signing_keys');
