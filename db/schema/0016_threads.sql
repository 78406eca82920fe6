-- Chat threads of one person, personal or in a project, their messages, and the
-- generation a send starts. Row-level security for each table is in
-- db/policies/<table>.sql.

create table app.threads (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id uuid not null default gen_random_uuid(),
  owner_id uuid not null references app.users (id) on delete cascade,
  -- Null for a personal thread; a project thread lives and dies with its project.
  project_id uuid,
  -- 'streaming' from a send until its turn settles, then 'idle' (whatever the outcome).
  generation_status text not null default 'idle' check (generation_status in ('idle', 'streaming')),
  -- The assistant message of the last turn.
  last_message_id uuid,
  created_at timestamptz not null default app.now(),
  updated_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id),
  foreign key (organization_id, project_id) references app.projects (organization_id, id) on delete cascade
);
create index threads_owner_idx on app.threads (organization_id, owner_id, project_id, created_at desc, id desc);

create table app.thread_messages (
  organization_id uuid not null,
  thread_id uuid not null,
  id uuid not null default gen_random_uuid(),
  -- The order of a thread's messages.
  seq bigint generated always as identity,
  role text not null check (role in ('user', 'assistant')),
  -- user messages are complete when written; an assistant message is pending until
  -- the worker takes it, streaming while text arrives, then complete, failed or
  -- stopped (a turn stopped through DELETE .../generation keeps what had arrived).
  status text not null check (status in ('pending', 'streaming', 'complete', 'failed', 'stopped')),
  -- [{type: 'text', text}]
  parts jsonb not null default '[]',
  model text,
  provider_slug text,
  -- An assistant message: the user message it answers and the output ceiling asked.
  reply_to uuid,
  max_output_tokens integer,
  -- A user message: the sender's Idempotency-Key, so a replay answers this message.
  idempotency_key text,
  finish_reason text,
  error_code text,
  error text,
  created_at timestamptz not null default app.now(),
  updated_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id),
  foreign key (organization_id, thread_id) references app.threads (organization_id, id) on delete cascade,
  check ((status = 'failed') = (error_code is not null))
);
create index thread_messages_thread_idx on app.thread_messages (organization_id, thread_id, seq desc);
create unique index thread_messages_idempotency_key on app.thread_messages (organization_id, thread_id, idempotency_key)
  where idempotency_key is not null;
