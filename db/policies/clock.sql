-- The clock every rule reads (app.now()): a pinned instant in tests, empty otherwise.
-- Readable by everyone, written only by the owner.
-- Past these policies: none.
alter table app.clock enable row level security;
alter table app.clock force row level security;
select app.drop_policies('app.clock');
grant select on app.clock to api;
create policy clock_select on app.clock for select to api using (true);
