-- The identity issuer (OpenID Connect, server/oidc): the applications an organization
-- registers, what oidc-provider keeps between requests, the keys ID tokens are signed
-- with, and a person's picture for the profile claims.

-- A registered application, bound to exactly one organization and named there by its
-- key. Only the SHA-256 of its secret is kept: the secret is shown once, when made.
create table app.identity_clients (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  key text not null,
  client_id text not null,
  name text not null,
  redirect_uri text not null,
  secret_hash bytea not null,
  disabled boolean not null default false,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default app.now(),
  updated_at timestamptz not null default app.now(),
  primary key (organization_id, key)
);
create unique index identity_clients_client_id_key on app.identity_clients (client_id);

-- oidc-provider's models (sessions, interactions, grants, codes, access tokens) as it
-- hands them to its adapter. expires_at is reckoned on app.now(), so a pinned clock
-- expires them as it expires everything else.
create table app.issuer_payloads (
  model text not null,
  id text not null,
  payload jsonb not null,
  grant_id text,
  uid text,
  expires_at timestamptz,
  consumed_at timestamptz,
  primary key (model, id)
);
create index issuer_payloads_grant_idx on app.issuer_payloads (grant_id) where grant_id is not null;
create index issuer_payloads_uid_idx on app.issuer_payloads (model, uid) where uid is not null;
create index issuer_payloads_expiry_idx on app.issuer_payloads (expires_at) where expires_at is not null;

-- RS256 signing keys (private JWKs). One key is active and signs; retired keys stay
-- published for a while so tokens they signed still verify.
create table app.issuer_signing_keys (
  kid text primary key,
  jwk jsonb not null,
  created_at timestamptz not null default app.now(),
  retired_at timestamptz
);
create unique index issuer_signing_keys_one_active on app.issuer_signing_keys ((true)) where retired_at is null;

-- The profile's picture claim: an address, when the person has one.
alter table app.users add column picture text;
