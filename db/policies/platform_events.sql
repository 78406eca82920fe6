-- The platform's events and whether this deployment raises each: public knowledge,
-- changed only by migrations.
-- Past these policies: none.
alter table app.platform_events enable row level security;
alter table app.platform_events force row level security;
select app.drop_policies('app.platform_events');
grant select on app.platform_events to api;
create policy platform_events_select on app.platform_events for select to api using (true);
