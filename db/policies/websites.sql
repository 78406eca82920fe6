-- Past these policies: app.website_schedule and app.website_unschedule (adding, syncing
-- and deleting a website schedule its scan job); the crawl job writes scans on the
-- owner connection.
-- Websites belong to the organization: every member reads them; Editors and above
-- add, change and delete them. The crawler service's own websites (no organization)
-- are never a member's.
alter table app.websites enable row level security;
alter table app.websites force row level security;
select app.drop_policies('app.websites');
grant select, insert, delete on app.websites to api;
-- What a member changes: the interval, and a scan asked for now. Scan results are the
-- crawl job's.
grant update (scan_interval, status, next_scan_at, updated_at) on app.websites to api;

create policy websites_select on app.websites for select to api
  using (organization_id = (select app.org_id()));

create policy websites_insert on app.websites for insert to api
  with check (organization_id = (select app.org_id()) and (select app.has_editing_role())
              and created_by = (select app.user_id()));

create policy websites_update on app.websites for update to api
  using (organization_id = (select app.org_id()) and (select app.has_editing_role()))
  with check (organization_id = (select app.org_id()));

create policy websites_delete on app.websites for delete to api
  using (organization_id = (select app.org_id()) and (select app.has_editing_role()));
