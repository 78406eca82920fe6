-- Skills (docs/skills.md): markdown instructions an agent is given, saved by slug,
-- personal (their owner's alone) or shared with the whole organization. Browser
-- sessions: cookies (and local storage) operators import so the service can act in a
-- signed-in browser; stored sealed, never readable by the request role.

create table app.skills (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id uuid not null default gen_random_uuid(),
  slug text not null check (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  visibility text not null check (visibility in ('personal', 'organization')),
  -- The member a personal skill belongs to; null for an organization skill.
  owner_id uuid references app.users (id) on delete cascade,
  name text not null check (btrim(name) <> ''),
  description text not null default '',
  content text not null,
  created_by uuid references app.users (id) on delete set null,
  updated_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default app.now(),
  updated_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id),
  check ((visibility = 'personal') = (owner_id is not null))
);
-- A slug is unique per owner among personal skills and per organization among shared
-- ones; a personal skill may carry the slug of a shared one (it resolves first for
-- its owner).
create unique index skills_personal_slug_key on app.skills (organization_id, owner_id, slug) where visibility = 'personal';
create unique index skills_organization_slug_key on app.skills (organization_id, slug) where visibility = 'organization';

create table app.browser_sessions (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  -- Chosen by the server before sealing: the ciphertext is bound to it.
  id uuid not null,
  name text not null check (btrim(name) <> ''),
  -- What may be shown: the cookies' domains, how many there are, when the last lapses.
  domains text[] not null default '{}',
  cookie_count integer not null check (cookie_count >= 0),
  expires_at timestamptz,
  -- AES-256-GCM (version, nonce, tag, ciphertext) under BROWSER_SESSION_KEY, sealed by
  -- the server (server/core/sealed.ts); erased when the session is revoked.
  sealed bytea,
  -- Which key sealed it (a digest of the key, never the key).
  key_id text not null,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default app.now(),
  revoked_at timestamptz,
  revoked_by uuid references app.users (id) on delete set null,
  primary key (organization_id, id),
  unique (id),
  check (revoked_at is not null or sealed is not null)
);
create index browser_sessions_created_idx on app.browser_sessions (organization_id, created_at desc, id desc);
