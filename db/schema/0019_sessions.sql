-- People signed in to the app. A session is a row; its cookie holds an opaque token
-- whose SHA-256 is stored, as with API keys. A session that passed the password but
-- still owes its second factor is `pending` and authenticates nothing.
create table app.sessions (
  id uuid primary key default gen_random_uuid(),
  token_hash bytea not null unique,
  user_id uuid not null references app.users (id) on delete cascade,
  -- password: the password was checked; a second factor, when the person has one,
  -- completes the sign-in (totp).
  stage text not null check (stage in ('pending', 'complete')),
  -- When the second factor was last proven in this session; null without one.
  mfa_at timestamptz,
  source text,
  user_agent text,
  created_at timestamptz not null default app.now(),
  last_seen_at timestamptz not null default app.now(),
  expires_at timestamptz not null,
  revoked_at timestamptz
);
create index sessions_user_idx on app.sessions (user_id);

-- A person's TOTP second factor (RFC 6238): the shared secret, confirmed once a code
-- made from it was entered; the last time step used, so a code works once.
create table app.user_totp (
  user_id uuid primary key references app.users (id) on delete cascade,
  secret text not null,
  confirmed_at timestamptz,
  last_step bigint,
  created_at timestamptz not null default app.now()
);

-- An organization may require a second factor of everyone who signs in to it
-- through the app or the identity issuer.
alter table app.organizations add column require_mfa boolean not null default false;
