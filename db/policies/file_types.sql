-- The supported file types are public knowledge; the owner maintains the list.
-- Past these policies: none.
alter table app.file_types enable row level security;
alter table app.file_types force row level security;
select app.drop_policies('app.file_types');
grant select on app.file_types to api;
create policy file_types_select on app.file_types for select to api using (true);
