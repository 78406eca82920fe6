-- The operator command that narrows an organization's uploads (admin CLI, seed
-- files). Never the request role's.

-- Operators narrow an organization's uploads; null restores the service default.
create or replace function app.operator_upload_policy_set(organization uuid, max_bytes bigint, extensions text[])
returns void language plpgsql as $$
declare
  unknown text[];
begin
  extensions := (select array_agg(distinct lower(e) order by lower(e)) from unnest(extensions) e);
  unknown := array(select e from unnest(extensions) e where not exists (select 1 from app.file_types t where t.extension = e));
  if cardinality(unknown) > 0 then
    raise exception 'unsupported file types: %', array_to_string(unknown, ', ');
  end if;
  if max_bytes > app.limit('upload.maxBytes') then
    raise exception 'the upload limit may only be lowered: at most % bytes', app.limit('upload.maxBytes');
  end if;
  update app.organizations set upload_max_bytes = max_bytes, upload_extensions = extensions where id = organization;
end $$;
