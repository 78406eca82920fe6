-- Policy files are re-applied whenever they change. Each starts by dropping every
-- policy on its table, so a policy removed from the file is removed from the database.
create function app.reset_policies(target regclass) returns void language plpgsql as $$
declare
  policy record;
begin
  for policy in select polname from pg_policy where polrelid = target loop
    execute format('drop policy %I on %s', policy.polname, target);
  end loop;
  execute format('alter table %s enable row level security', target);
  execute format('alter table %s force row level security', target);
end $$;
