-- The event outbox. An operation raises events of its own organization into it
-- (app.raise_event); only the worker, as the owner, reads and drains it.
-- Past these policies: none.
alter table app.events enable row level security;
alter table app.events force row level security;
select app.drop_policies('app.events');
grant insert on app.events to api;

create policy events_insert on app.events for insert to api
  with check (organization_id = (select app.org_id()) and drained_at is null and drained_count = 0);
