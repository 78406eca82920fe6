-- A notification exists for its recipient, who may mark it read, and for the holders
-- of the notificationExport capability, who read the organization's notifications to
-- export them (GET /notifications/sync) and never change them. They are written by
-- the rules that notify (a paused schedule on the owner's connection, task
-- assignments and mentions through app.task_notify).
-- Past these policies: app.task_notify (a task notification goes to another member,
-- whose grants and teams the caller's policies hide).
alter table app.notifications enable row level security;
alter table app.notifications force row level security;
select app.drop_policies('app.notifications');
grant select on app.notifications to api;
grant update (read_at) on app.notifications to api;

create policy notifications_select on app.notifications for select to api
  using (organization_id = (select app.org_id())
         and (recipient_id = (select app.user_id()) or (select app.can_export_notifications())));

create policy notifications_update on app.notifications for update to api
  using (organization_id = (select app.org_id()) and recipient_id = (select app.user_id()))
  with check (organization_id = (select app.org_id()) and recipient_id = (select app.user_id()));
