-- Project agents: a named configuration (harness, model, skills, connectors, tool and
-- secret grants, instructions) an agent run starts from. The rules of a save are in
-- db/functions/0096_agents.sql; row-level security in db/policies/project_agents.sql.

create table app.project_agents (
  organization_id uuid not null,
  project_id uuid not null,
  id uuid not null default gen_random_uuid(),
  -- Trimmed and NFC-normalized; unique in the project ignoring case (the index below).
  name text not null check (name <> ''),
  -- One of app.harnesses() and a model of the organization's catalog when saved; a
  -- catalog that later loses the model leaves the agent as saved, and a run decides.
  harness text not null,
  model text not null,
  -- As sent: null lets the catalog's one provider of the model serve it.
  model_provider text,
  skills text[] not null default '{}',
  connectors text[] not null default '{}',
  -- Grants are sets: stored distinct and sorted, so the same set sent in another order
  -- is the same configuration.
  tools text[] not null default '{}',
  -- Names of app.secrets, never values. A secret deleted later stays named here until
  -- the agent is saved again.
  secrets text[] not null default '{}',
  instructions text,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default app.now(),
  updated_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id),
  foreign key (organization_id, project_id) references app.projects (organization_id, id) on delete cascade
);
-- The name rule, race-safe: of two creates of one name, the index lets one in.
create unique index project_agents_name_key on app.project_agents (organization_id, project_id, lower(name));
