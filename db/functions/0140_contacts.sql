-- Contacts (docs/records.md): the organization's people, by an optional natural key
-- (externalId). Every member reads them; Editors and above write them (the policies
-- of db/policies/contacts.sql decide, app.contacts_writer only names the refusal).
-- The same rules serve a person's key (api.contact_*), the bulk import
-- (api.contacts_bulk, set-based) and a run's contact.upsert step (app.worker_action,
-- db/functions/0092_task_actions.sql); `actor` says which: 'person' or 'automation'.
-- Every change raises its event (contact.created, contact.updated, contact.deleted)
-- into the outbox in the same transaction.

create or replace function app.contacts_writer() returns void language plpgsql stable as $$
begin
  if not app.has_editing_role() then
    perform app.fail('ROLE_FORBIDDEN', 403, 'Changing the organization''s contacts needs the Editor role or above.');
  end if;
end $$;

create or replace function app.contact_json(c app.contacts) returns jsonb language sql stable as $$
  select jsonb_build_object('id', c.id, 'externalId', c.external_id, 'email', c.email, 'name', c.name,
    'phone', c.phone, 'company', c.company, 'attributes', c.attributes,
    'createdAt', app.ms(c.created_at), 'updatedAt', app.ms(c.updated_at))
$$;

-- The limits a contact's fields are held to, read once per operation (a bulk import
-- checks thousands of rows against them).
create or replace function app.contact_limits() returns jsonb language sql stable as $$
  select coalesce(jsonb_object_agg(l.name, l.value), '{}') from app.limits l
   where l.name like 'contact.%' or l.name like 'product.%'
$$;

-- Trimmed of the white space JavaScript's trim removes, as app.trim_space, by btrim
-- over the same characters (no regular expression: an import trims many thousands
-- of fields).
create or replace function app.record_trim(value text) returns text language sql immutable as $$
  select btrim(value, U&' \0009\000A\000B\000C\000D\00A0\1680\2000\2001\2002\2003\2004\2005\2006\2007\2008\2009\200A\2028\2029\202F\205F\3000\FEFF')
$$;

-- A natural key as stored and looked up: trimmed, NFC-normalized, null when blank (as
-- app.clean_identifier).
create or replace function app.record_key(value text) returns text language sql immutable as $$
  select nullif(normalize(app.record_trim(value), nfc), '')
$$;

-- The problem of an optional text field of a record, or null: absent and null are
-- fine (null clears it); otherwise a string, not blank, at most max_units UTF-16 code
-- units after trimming. (A string of n characters is at most 2n code units, so most
-- values are measured without counting.)
create or replace function app.record_text_issue(r jsonb, field text, max_units numeric) returns jsonb
language sql stable as $$
  select case coalesce(jsonb_typeof(r->field), 'null')
    when 'null' then null
    when 'string' then case
      when app.record_trim(r->>field) = '' then jsonb_build_object('path', field, 'message', 'must not be blank (send null to clear it)')
      when length(r->>field) * 2 > max_units and app.utf16_length(app.record_trim(r->>field)) > max_units
        then jsonb_build_object('path', field, 'message', format('at most %s UTF-16 code units', max_units))
    end
    else jsonb_build_object('path', field, 'message', 'must be a string or null')
  end
$$;

-- The problem of a record's attributes, or null: an object of at most max_bytes as JSON.
create or replace function app.record_attributes_issue(r jsonb, max_bytes numeric) returns jsonb
language sql stable as $$
  select case
    when not (r ? 'attributes') then null
    when jsonb_typeof(r->'attributes') <> 'object' then jsonb_build_object('path', 'attributes', 'message', 'must be an object')
    when octet_length((r->'attributes')::text) > max_bytes
      then jsonb_build_object('path', 'attributes', 'message', format('must be at most %s bytes as JSON', max_bytes))
  end
$$;

-- The first key of a record outside `known`, as an issue, or null.
create or replace function app.record_unknown_key(r jsonb, known text[]) returns jsonb language sql stable as $$
  select case when (r - known) <> '{}'::jsonb then
    jsonb_build_object('path', jsonb_path_query_first(r - known, '$.keyvalue().key') #>> '{}',
      'message', format('unknown key "%s"', jsonb_path_query_first(r - known, '$.keyvalue().key') #>> '{}')) end
$$;

-- Every problem of a contact's fields as sent (a create, an import row, a change or a
-- contact.upsert step), each with its path; '[]' when there is none. The server's
-- shape checks find the same first; these hold for every caller. `lim` is
-- app.contact_limits().
create or replace function app.contact_issues(r jsonb, lim jsonb) returns jsonb language sql stable as $$
  select case when jsonb_typeof(r) is distinct from 'object'
    then jsonb_build_array(jsonb_build_object('path', '', 'message', 'must be an object'))
    else to_jsonb(array_remove(array[
      app.record_unknown_key(r, array['externalId', 'email', 'name', 'phone', 'company', 'attributes']),
      app.record_text_issue(r, 'externalId', (lim->>'contact.externalIdMaxUnits')::numeric),
      coalesce(app.record_text_issue(r, 'email', (lim->>'contact.emailMaxUnits')::numeric),
        case when jsonb_typeof(r->'email') = 'string' and app.record_trim(r->>'email') !~ '^[^@\s]+@[^@\s]+$'
             then jsonb_build_object('path', 'email', 'message', 'must be an email address') end),
      app.record_text_issue(r, 'name', (lim->>'contact.nameMaxUnits')::numeric),
      app.record_text_issue(r, 'phone', (lim->>'contact.phoneMaxUnits')::numeric),
      app.record_text_issue(r, 'company', (lim->>'contact.nameMaxUnits')::numeric),
      app.record_attributes_issue(r, (lim->>'contact.attributesMaxBytes')::numeric)
    ], null)) end
$$;

-- The contact a record makes of c (null: a new contact): the fields sent replace the
-- stored ones (null clears), the omitted ones are kept. attributes sent replace the
-- stored object (a change, PATCH) or are merged into it key by key (a create by
-- natural key, an import row, a contact.upsert step).
create or replace function app.contact_merge(c app.contacts, r jsonb, replace_attributes boolean) returns app.contacts
language plpgsql immutable as $$
begin
  if r ? 'externalId' then c.external_id := app.record_key(r->>'externalId'); end if;
  if r ? 'email' then c.email := app.record_trim(r->>'email'); end if;
  if r ? 'name' then c.name := app.record_trim(r->>'name'); end if;
  if r ? 'phone' then c.phone := app.record_trim(r->>'phone'); end if;
  if r ? 'company' then c.company := app.record_trim(r->>'company'); end if;
  if r ? 'attributes' and not replace_attributes then
    c.attributes := coalesce(c.attributes, '{}') || (r->'attributes');
  elsif r ? 'attributes' then
    c.attributes := r->'attributes';
  else
    c.attributes := coalesce(c.attributes, '{}');
  end if;
  return c;
end $$;

-- The fields a change touched, by their wire names.
create or replace function app.contact_changes(was app.contacts, now_is app.contacts) returns jsonb
language sql immutable as $$
  select to_jsonb(array_remove(array[
    case when was.external_id is distinct from now_is.external_id then 'externalId' end,
    case when was.email is distinct from now_is.email then 'email' end,
    case when was.name is distinct from now_is.name then 'name' end,
    case when was.phone is distinct from now_is.phone then 'phone' end,
    case when was.company is distinct from now_is.company then 'company' end,
    case when was.attributes is distinct from now_is.attributes then 'attributes' end
  ], null))
$$;

-- The issue of a contact that would name no one, or null.
create or replace function app.contact_nameless(c app.contacts) returns jsonb language sql immutable as $$
  select case when c.email is null and c.name is null
    then jsonb_build_object('path', 'email', 'message', 'a contact needs an email or a name') end
$$;

create or replace function app.contact_refuse(issues jsonb) returns void language plpgsql as $$
begin
  perform app.fail('INVALID_BODY', 400, 'The contact is not valid: ' || (issues->0->>'path') || ' ' || (issues->0->>'message'),
    jsonb_build_object('issues', issues));
end $$;

-- A contact of the caller's organization, or 404 CONTACT_NOT_FOUND alike for ids
-- that are missing or another organization's.
create or replace function app.contact(contact text) returns app.contacts language plpgsql stable as $$
declare
  c app.contacts;
begin
  select * into c from app.contacts where organization_id = app.org_id() and id = app.as_uuid(contact);
  if c.id is null then
    perform app.fail('CONTACT_NOT_FOUND', 404, 'Contact not found.');
  end if;
  return c;
end $$;

-- Creates a contact, or updates the one its externalId names (with by_email, a
-- contact.upsert step's, also the one its email names). Returns the
-- contact as stored, whether it was created and whether anything changed; a repeat
-- that changes nothing writes nothing and raises nothing.
create or replace function app.contact_upsert(r jsonb, actor text, run uuid, by_email boolean,
  out c app.contacts, out created boolean, out changed boolean) language plpgsql as $$
declare
  issues jsonb := app.contact_issues(r, app.contact_limits());
  org uuid := app.org_id();
  ext text := app.record_key(r->>'externalId');
  existing app.contacts;
  stamp timestamptz := app.now();
begin
  -- A step's externalId of null (a template of an absent value) names no key and
  -- clears none.
  if by_email and jsonb_typeof(r->'externalId') = 'null' then
    r := r - 'externalId';
  end if;
  if jsonb_array_length(issues) > 0 then
    perform app.contact_refuse(issues);
  end if;
  if by_email and ext is null and app.record_trim(r->>'email') is null then
    perform app.contact_refuse(jsonb_build_array(jsonb_build_object('path', 'externalId',
      'message', 'name the contact by externalId or email')));
  end if;
  created := false;
  changed := false;
  if ext is not null then
    select * into existing from app.contacts where organization_id = org and external_id = ext for update;
  end if;
  -- A step names a contact by email when no contact holds its externalId: the oldest
  -- contact of that email (ignoring case) with no externalId of its own, or with none
  -- sent, any.
  if existing.id is null and by_email and jsonb_typeof(r->'email') = 'string' then
    select * into existing from app.contacts
     where organization_id = org and email is not null and lower(email) = lower(app.record_trim(r->>'email'))
       and (ext is null or external_id is null)
     order by created_at, id limit 1 for update;
  end if;

  if existing.id is null then
    c := app.contact_merge(null, r, false);
    issues := app.contact_nameless(c);
    if issues is not null then
      perform app.contact_refuse(jsonb_build_array(issues));
    end if;
    insert into app.contacts (organization_id, external_id, email, name, phone, company, attributes,
                              created_by, created_by_run_id, created_at, updated_at)
    values (org, c.external_id, c.email, c.name, c.phone, c.company, c.attributes, app.user_id(), run, stamp, stamp)
    on conflict (organization_id, external_id) do nothing
    returning * into c;
    if c.id is not null then
      created := true;
      changed := true;
      perform app.raise_event(org, 'contact.created', jsonb_build_object('contact', app.contact_json(c)), null, actor);
      return;
    end if;
    -- The same key was created concurrently: this create is a repeat of it.
    select * into existing from app.contacts where organization_id = org and external_id = ext for update;
  end if;

  c := app.contact_merge(existing, r, false);
  issues := app.contact_nameless(c);
  if issues is not null then
    perform app.contact_refuse(jsonb_build_array(issues));
  end if;
  if row(c.*) is not distinct from row(existing.*) then
    return;
  end if;
  update app.contacts
     set external_id = c.external_id, email = c.email, name = c.name, phone = c.phone, company = c.company,
         attributes = c.attributes, updated_at = stamp
   where organization_id = org and id = existing.id
  returning * into c;
  changed := true;
  perform app.raise_event(org, 'contact.updated',
    jsonb_build_object('contact', app.contact_json(c), 'changes', app.contact_changes(existing, c)), null, actor);
end $$;

create or replace function api.contacts_list(args jsonb) returns jsonb language plpgsql stable as $$
declare
  page_size integer := app.page_size(args->>'limit', 'page.contacts.maxSize');
  filters jsonb := jsonb_strip_nulls(jsonb_build_object(
    'externalId', app.record_key(args->>'externalId'), 'email', lower(app.record_trim(args->>'email'))));
  page_start record := app.keyset_resume(args->>'cursor', 'contacts', filters);
  rows jsonb;
  positions jsonb[];
begin
  -- Newest change first: (updated_at, id) descending; the cursor carries both.
  select jsonb_agg(app.contact_json(c) order by c.updated_at desc, c.id desc),
         array_agg(app.keyset_position(c.updated_at, c.id) order by c.updated_at desc, c.id desc)
    into rows, positions
    from (select * from app.contacts c
           where c.organization_id = app.org_id()
             and (c.updated_at, c.id) < (page_start.after_created, page_start.after_id)
             and (filters->>'externalId' is null or c.external_id = filters->>'externalId')
             and (filters->>'email' is null or (c.email is not null and lower(c.email) = filters->>'email'))
           order by c.updated_at desc, c.id desc
           limit page_size + 1) c;
  return app.keyset_page('page', 'contacts', filters, page_size, rows, positions) - 'cursor';
end $$;

-- POST /contacts: a create, or with an externalId already held, an update of that
-- contact (created: false).
create or replace function api.contact_create(args jsonb) returns jsonb language plpgsql as $$
declare
  upserted record;
begin
  perform app.contacts_writer();
  upserted := app.contact_upsert(args, 'person', null, false);
  return jsonb_build_object('contact', app.contact_json(upserted.c), 'created', upserted.created);
end $$;

create or replace function api.contact_get(args jsonb) returns jsonb language plpgsql stable as $$
begin
  return jsonb_build_object('contact', app.contact_json(app.contact(args->>'id')));
end $$;

-- PATCH: the fields sent replace the stored ones (null clears; attributes are
-- replaced whole). A new externalId another contact holds answers 409.
create or replace function api.contact_update(args jsonb) returns jsonb language plpgsql as $$
declare
  c app.contacts := app.contact(args->>'id');
  body jsonb := args - 'id';
  issues jsonb;
  changed app.contacts;
  holder uuid;
begin
  perform app.contacts_writer();
  issues := app.contact_issues(body, app.contact_limits());
  if jsonb_array_length(issues) > 0 then
    perform app.contact_refuse(issues);
  end if;
  select * into c from app.contacts where organization_id = c.organization_id and id = c.id for update;
  changed := app.contact_merge(c, body, true);
  issues := app.contact_nameless(changed);
  if issues is not null then
    perform app.contact_refuse(jsonb_build_array(issues));
  end if;
  if row(changed.*) is not distinct from row(c.*) then
    return jsonb_build_object('contact', app.contact_json(c));
  end if;
  if changed.external_id is distinct from c.external_id and changed.external_id is not null then
    select id into holder from app.contacts where organization_id = c.organization_id and external_id = changed.external_id;
    if holder is not null then
      perform app.fail('CONTACT_DUPLICATE_EXTERNAL_ID', 409, 'Another contact holds that externalId.',
        jsonb_build_object('externalId', changed.external_id, 'contactId', holder));
    end if;
  end if;
  begin
    update app.contacts
       set external_id = changed.external_id, email = changed.email, name = changed.name, phone = changed.phone,
           company = changed.company, attributes = changed.attributes, updated_at = app.now()
     where organization_id = c.organization_id and id = c.id
    returning * into changed;
  exception when unique_violation then
    perform app.fail('CONTACT_DUPLICATE_EXTERNAL_ID', 409, 'Another contact holds that externalId.',
      jsonb_build_object('externalId', changed.external_id));
  end;
  perform app.raise_event(c.organization_id, 'contact.updated',
    jsonb_build_object('contact', app.contact_json(changed), 'changes', app.contact_changes(c, changed)));
  return jsonb_build_object('contact', app.contact_json(changed));
end $$;

create or replace function api.contact_delete(args jsonb) returns jsonb language plpgsql as $$
declare
  c app.contacts := app.contact(args->>'id');
begin
  perform app.contacts_writer();
  delete from app.contacts where organization_id = c.organization_id and id = c.id;
  perform app.raise_event(c.organization_id, 'contact.deleted', jsonb_build_object('contact', app.contact_json(c)));
  return null;
end $$;

-- POST /contacts/bulk: creates or updates many contacts in this one transaction, by
-- the rules of POST /contacts applied to each row, set-based. Each row answers for
-- itself: created, updated (its externalId named a contact), or error (its fields are
-- invalid, or it repeats the externalId of an earlier row of the request, which alone
-- is applied); the valid rows land whatever the others answer. Each created or
-- changed contact raises its event.
-- An import's sorts (its rows by key, the contacts it names, the rows in order) hold
-- the largest import (contact.bulkMaxBytes) in memory rather than spilling to disk at
-- the default 4 MB.
create or replace function api.contacts_bulk(args jsonb) returns jsonb language plpgsql
set work_mem = '32MB'
as $$
declare
  org uuid := app.org_id();
  lim jsonb := app.contact_limits();
  input jsonb := args->'contacts';
  stamp timestamptz := app.now();
  source_run uuid := nullif(current_setting('app.run_id', true), '')::uuid;
  reply record;
  results jsonb;
  raced record;
  upserted record;
  retried jsonb := '{}';
begin
  perform app.contacts_writer();
  if jsonb_typeof(input) is distinct from 'array' then
    perform app.invalid_body('contacts', 'must be a list of contacts');
  end if;
  if jsonb_array_length(input) > (lim->>'contact.bulkMaxRows')::integer then
    perform app.invalid_body('contacts', format('at most %s contacts in one request', lim->>'contact.bulkMaxRows'));
  end if;

  -- One statement, planned for each import (execute) with its figures: a plan cached
  -- from a small import (or an empty table) would join a large one row by row.
  execute $main$
  with keyed as materialized (
    select (e.ord - 1)::integer as idx, e.value as r, app.contact_issues(e.value, $2) as issues,
           case when jsonb_typeof(e.value->'externalId') = 'string' then app.record_key(e.value->>'externalId') end as ext
      from jsonb_array_elements($3) with ordinality e(value, ord)
  ),
  -- The contacts the rows name by externalId, locked in key order, so two imports
  -- naming the same contacts take turns instead of waiting on each other crosswise.
  -- They are read as locked: the newest version of each, whatever another writer
  -- committed after this statement began.
  held as materialized (
    select c.external_id as ext, c as contact
      from (select distinct k.ext from keyed k where k.ext is not null) named
      join app.contacts c on c.organization_id = $1 and c.external_id = named.ext
     order by named.ext
       for update of c
  ),
  firsts as (
    select k.*, min(k.idx) filter (where k.issues = '[]'::jsonb) over (partition by k.ext) as first_idx
      from keyed k
  ),
  -- The rules of app.contact_merge (sent fields replace, omitted are kept, attributes
  -- merge), written out over the columns: a function call per row costs the import
  -- more than the rest of its work.
  merged as (
    select f.idx, f.ext, f.issues, f.first_idx, (h.contact).id as existing_id, h.contact as existing,
           case when f.r ? 'email' then app.record_trim(f.r->>'email') else (h.contact).email end as email,
           case when f.r ? 'name' then app.record_trim(f.r->>'name') else (h.contact).name end as name,
           case when f.r ? 'phone' then app.record_trim(f.r->>'phone') else (h.contact).phone end as phone,
           case when f.r ? 'company' then app.record_trim(f.r->>'company') else (h.contact).company end as company,
           case when f.r ? 'attributes' then coalesce((h.contact).attributes, '{}') || (f.r->'attributes')
                else coalesce((h.contact).attributes, '{}') end as attributes
      from firsts f
      left join held h on h.ext = f.ext
  ),
  judged as materialized (
    select m.idx, m.ext, m.existing_id, m.existing, m.email, m.name, m.phone, m.company, m.attributes,
           case when m.issues <> '[]'::jsonb then m.issues
                when m.ext is not null and m.idx <> m.first_idx then jsonb_build_array(jsonb_build_object(
                  'path', 'externalId', 'message', format('repeats the externalId of contacts.%s, which is applied', m.first_idx)))
                when m.email is null and m.name is null then jsonb_build_array(jsonb_build_object(
                  'path', 'email', 'message', 'a contact needs an email or a name'))
           end as problems,
           coalesce(m.existing_id, gen_random_uuid()) as target_id,
           m.existing_id is not null
             and (m.email, m.name, m.phone, m.company, m.attributes)
                 is distinct from ((m.existing).email, (m.existing).name, (m.existing).phone, (m.existing).company,
                                   (m.existing).attributes) as changed
      from merged m
  ),
  inserted as (
    insert into app.contacts as c (organization_id, id, external_id, email, name, phone, company, attributes,
                                   created_by, created_at, updated_at)
    select $1, j.target_id, j.ext, j.email, j.name, j.phone, j.company, j.attributes, app.user_id(), $4, $4
      from judged j
     where j.problems is null and j.existing_id is null
     -- In key order, as the contacts were locked: two imports creating the same keys
     -- take turns at the first key they share instead of waiting on each other crosswise.
     order by j.ext, j.idx
    on conflict (organization_id, external_id) do nothing
    returning c.id, jsonb_build_object('contact', app.contact_json(c)) as payload
  ),
  updated as (
    update app.contacts c
       set email = j.email, name = j.name, phone = j.phone, company = j.company, attributes = j.attributes, updated_at = $4
      from judged j
     where j.problems is null and j.changed and c.organization_id = $1 and c.id = j.target_id
    returning c.id, j.idx, jsonb_build_object('contact', app.contact_json(c), 'changes', app.contact_changes(j.existing, c)) as payload
  ),
  -- Each created or changed contact's event, into the outbox as app.raise_event writes
  -- it (the same columns, the same drain), in the order of the rows.
  created_events as (
    insert into app.events (organization_id, name, payload, project_id, actor_user_id, source_run_id, raised_at)
    -- (a new contact's id is its row's alone: only the row applied for a key is inserted)
    select $1, 'contact.created', i.payload, null, app.user_id(), $5, $4
      from inserted i join judged j on j.target_id = i.id
     order by j.idx
  ),
  updated_events as (
    insert into app.events (organization_id, name, payload, project_id, actor_user_id, source_run_id, raised_at)
    select $1, 'contact.updated', u.payload, null, app.user_id(), $5, $4 from updated u order by u.idx
  ),
  answered as (
    select j.idx, case
             when j.problems is not null then 'error'
             when j.existing_id is not null then 'updated'
             when i.id is not null then 'created'
             -- Its externalId was created by another writer since this statement began.
             else 'retry'
           end as status, j.problems, j.target_id
      from judged j
      left join inserted i on i.id = j.target_id
  )
  select jsonb_agg(case a.status
           when 'error' then jsonb_build_object('index', a.idx, 'status', 'error', 'error', jsonb_build_object(
             'code', 'INVALID_BODY',
             'message', 'The contact is not valid: ' || (a.problems->0->>'path') || ' ' || (a.problems->0->>'message'),
             'issues', a.problems))
           when 'retry' then jsonb_build_object('index', a.idx, 'status', 'retry')
           else jsonb_build_object('index', a.idx, 'status', a.status, 'id', a.target_id) end order by a.idx) as results,
         count(*) filter (where a.status = 'created') as created,
         count(*) filter (where a.status = 'updated') as updated,
         count(*) filter (where a.status = 'error') as failed,
         count(*) filter (where a.status = 'retry') as retried,
         (select count(*) from updated) as changed
    from answered a
  $main$ into reply using org, lim, input, stamp, source_run;
  results := coalesce(reply.results, '[]');

  -- A drain at once when a binding listens, as app.raise_event does.
  if exists (select 1 from app.automation_triggers t
              where t.organization_id = org and t.kind = 'event' and t.enabled
                and ((t.event = 'contact.created' and reply.created > 0) or (t.event = 'contact.updated' and reply.changed > 0))) then
    perform app.enqueue('drain_events', '{}'::jsonb, 'drain_events');
  end if;

  -- A row whose key another writer created meanwhile (two imports of the same new
  -- keys at once): by the rules of a single create, which now finds and updates that
  -- contact (and raises its event). The answers are rebuilt once, however many.
  if reply.retried > 0 then
    for raced in select (a->>'index')::integer as idx from jsonb_array_elements(results) a where a->>'status' = 'retry' loop
      upserted := app.contact_upsert(input->raced.idx, 'person', null, false);
      retried := retried || jsonb_build_object(raced.idx::text, jsonb_build_object('index', raced.idx,
        'status', case when upserted.created then 'created' else 'updated' end, 'id', (upserted.c).id));
      if upserted.created then
        reply.created := reply.created + 1;
      else
        reply.updated := reply.updated + 1;
      end if;
    end loop;
    select jsonb_agg(coalesce(retried->(r.ord - 1)::text, r.answer) order by r.ord) into results
      from jsonb_array_elements(results) with ordinality r(answer, ord);
  end if;

  return jsonb_build_object('results', results, 'created', coalesce(reply.created, 0),
                            'updated', coalesce(reply.updated, 0), 'failed', coalesce(reply.failed, 0));
end $$;

grant execute on function app.contacts_writer, app.contact_json, app.contact_limits, app.record_trim, app.record_key, app.record_text_issue,
  app.record_attributes_issue, app.record_unknown_key, app.contact_issues, app.contact_merge, app.contact_changes,
  app.contact_nameless, app.contact_refuse, app.contact, app.contact_upsert, api.contacts_list,
  api.contact_create, api.contact_get, api.contact_update, api.contact_delete, api.contacts_bulk to api;
