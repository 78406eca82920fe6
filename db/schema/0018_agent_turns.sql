-- Agent steps that really run. A run parked on an `agent` step hands its prompt to a
-- project agent: one turn row per hand-over, which the run_agent job takes, answers
-- through the agent's model and granted tools, and settles; the run then resumes with
-- the answer or fails with the turn's failure code (db/functions/0097_agent_turns.sql).

-- The coding harnesses this deployment can run project agents on. Deployment-wide:
-- an operator removes one the deployment cannot run (`admin harness remove`), and
-- agents on it are refused when saved and when a run's step reaches them.
create table app.deployment_harnesses (
  id text primary key check (id ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  name text not null check (name <> ''),
  position integer not null default 0
);
insert into app.deployment_harnesses (id, name, position)
values ('claude-code', 'Claude Code', 1), ('codex', 'Codex', 2), ('opencode', 'OpenCode', 3);

create table app.agent_turns (
  organization_id uuid not null,
  id uuid not null default gen_random_uuid(),
  run_id uuid not null,
  -- The step that handed work over and the run's seq when it parked: an answer is
  -- taken only while the run still waits at that very step.
  step_slug text not null,
  run_seq integer not null,
  -- The agent as resolved when the step ran; null once the agent is deleted.
  agent_id uuid,
  agent_name text not null,
  prompt text not null,
  -- The step's answer shape: {outputFormat, outputSchema} as the step declared them.
  answer_format jsonb not null default '{}',
  status text not null default 'queued' check (status in ('queued', 'running', 'completed', 'failed', 'void')),
  -- The conversation as the agent held it (system, user, assistant and tool turns).
  transcript jsonb not null default '[]',
  -- Platform writes the agent's tools made, listed in the run's effects when it settles.
  effects jsonb not null default '[]',
  output jsonb,
  failure_code text,
  detail text,
  created_at timestamptz not null default app.now(),
  started_at timestamptz,
  -- The run's clock keeps going while its agent works: the turn must end by then,
  -- also when its job is repeated.
  deadline_at timestamptz,
  finished_at timestamptz,
  primary key (organization_id, id),
  unique (id),
  foreign key (organization_id, run_id) references app.runs (organization_id, id) on delete cascade,
  check ((status = 'failed') = (failure_code is not null))
);
create index agent_turns_run_idx on app.agent_turns (organization_id, run_id);
