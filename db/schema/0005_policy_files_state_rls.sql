-- Policy files now enable and force row-level security themselves, where a reader of
-- the file sees it; app.drop_policies (db/functions) only clears old policies.
drop function app.reset_policies(regclass);
