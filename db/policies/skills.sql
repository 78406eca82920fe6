-- Skills: an organization skill is read by every member of the organization and
-- written (saved, replaced, deleted) by holders of the skillPublish capability
-- (app.can_publish_skills); a personal skill exists for its owner alone, who alone
-- writes it. The rules and their refusals are in db/functions/0150_skills.sql.
-- Past these policies: none.
alter table app.skills enable row level security;
alter table app.skills force row level security;
select app.drop_policies('app.skills');
grant select, insert, delete on app.skills to api;
-- The slug, the visibility, the owner and the creation are fixed once written.
grant update (name, description, content, updated_by, updated_at) on app.skills to api;

create policy skills_select on app.skills for select to api
  using (organization_id = (select app.org_id())
         and (visibility = 'organization' or owner_id = (select app.user_id())));

create policy skills_insert on app.skills for insert to api
  with check (organization_id = (select app.org_id()) and created_by = (select app.user_id())
              and case visibility when 'personal' then owner_id = (select app.user_id())
                                  else (select app.can_publish_skills()) end);

create policy skills_update on app.skills for update to api
  using (organization_id = (select app.org_id())
         and case visibility when 'personal' then owner_id = (select app.user_id())
                             else (select app.can_publish_skills()) end)
  with check (organization_id = (select app.org_id()) and updated_by = (select app.user_id()));

create policy skills_delete on app.skills for delete to api
  using (organization_id = (select app.org_id())
         and case visibility when 'personal' then owner_id = (select app.user_id())
                             else (select app.can_publish_skills()) end);
