-- A notification exists for its recipient alone, who may mark it read. They are
-- written by the rules that notify (a paused schedule), on the owner's connection.
-- Past these policies: none.
alter table app.notifications enable row level security;
alter table app.notifications force row level security;
select app.drop_policies('app.notifications');
grant select on app.notifications to api;
grant update (read_at) on app.notifications to api;

create policy notifications_select on app.notifications for select to api
  using (organization_id = (select app.org_id()) and recipient_id = (select app.user_id()));

create policy notifications_update on app.notifications for update to api
  using (organization_id = (select app.org_id()) and recipient_id = (select app.user_id()))
  with check (organization_id = (select app.org_id()) and recipient_id = (select app.user_id()));
