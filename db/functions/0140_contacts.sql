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

-- A contact's wire form, as a row of app.contact_record
-- (db/schema/0033_contact_wire_records.sql) built of the fields (an import has them
-- as columns, and taking each field out of a stored contact again costs more than
-- the JSON), and as JSON text written from that row, which costs a third of building
-- jsonb (an import writes ten thousand into its events' payloads); app.contact_json
-- is the same as jsonb, for answers and single events. All are inlined into their
-- callers.
create or replace function app.contact_record_of(id uuid, external_id text, email text, name text, phone text,
  company text, attributes jsonb, created_at timestamptz, updated_at timestamptz) returns app.contact_record
language sql stable as $$
  select row(id, external_id, email, name, phone, company, attributes, app.ms(created_at), app.ms(updated_at))::app.contact_record
$$;

-- (Replaced by app.contact_record_of, which the import writes its payloads from.)
drop function if exists app.contact_wire_of(uuid, text, text, text, text, text, jsonb, timestamptz, timestamptz);

create or replace function app.contact_wire(c app.contacts) returns json language sql stable as $$
  select to_json(app.contact_record_of(c.id, c.external_id, c.email, c.name, c.phone, c.company, c.attributes,
    c.created_at, c.updated_at))
$$;

create or replace function app.contact_json(c app.contacts) returns jsonb language sql stable as $$
  select app.contact_wire(c)::jsonb
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
-- app.clean_identifier). app.record_key_of_trimmed is the same for a caller that has
-- trimmed the text already (an import trims each field once). ASCII text (as many
-- bytes as characters) is NFC as it is, and is not run through normalize.
create or replace function app.record_key_of_trimmed(trimmed text) returns text language sql immutable as $$
  select nullif(case when octet_length(trimmed) = length(trimmed) then trimmed else normalize(trimmed, nfc) end, '')
$$;

create or replace function app.record_key(value text) returns text language sql immutable as $$
  select app.record_key_of_trimmed(app.record_trim(value))
$$;

-- The problem of an optional text field of a record, or null: absent and null are
-- fine (null clears it); otherwise a string, not blank, at most max_units UTF-16 code
-- units after trimming. `trimmed` is app.record_trim of the field's text, for a caller
-- that keeps it (an import makes its contacts of the same trimmed values). (A string
-- of n characters is at most 2n code units, so most values are measured without
-- counting.)
create or replace function app.record_text_issue(r jsonb, field text, trimmed text, max_units numeric) returns jsonb
language sql stable as $$
  select case coalesce(jsonb_typeof(r->field), 'null')
    when 'null' then null
    when 'string' then case
      when trimmed = '' then jsonb_build_object('path', field, 'message', 'must not be blank (send null to clear it)')
      when length(r->>field) * 2 > max_units and app.utf16_length(trimmed) > max_units
        then jsonb_build_object('path', field, 'message', format('at most %s UTF-16 code units', max_units))
    end
    else jsonb_build_object('path', field, 'message', 'must be a string or null')
  end
$$;

create or replace function app.record_text_issue(r jsonb, field text, max_units numeric) returns jsonb
language sql stable as $$
  select app.record_text_issue(r, field, app.record_trim(r->>field), max_units)
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
-- app.contact_limits(). app.contact_trimmed_issues is the same given each text field
-- trimmed by app.record_trim (an import trims each once and keeps the values).
create or replace function app.contact_trimmed_issues(r jsonb, external_id text, email text, name text, phone text,
  company text, lim jsonb) returns jsonb language sql stable as $$
  select case when jsonb_typeof(r) is distinct from 'object'
    then jsonb_build_array(jsonb_build_object('path', '', 'message', 'must be an object'))
    else to_jsonb(array_remove(array[
      app.record_unknown_key(r, array['externalId', 'email', 'name', 'phone', 'company', 'attributes']),
      app.record_text_issue(r, 'externalId', external_id, (lim->>'contact.externalIdMaxUnits')::numeric),
      coalesce(app.record_text_issue(r, 'email', email, (lim->>'contact.emailMaxUnits')::numeric),
        case when jsonb_typeof(r->'email') = 'string' and email !~ '^[^@\s]+@[^@\s]+$'
             then jsonb_build_object('path', 'email', 'message', 'must be an email address') end),
      app.record_text_issue(r, 'name', name, (lim->>'contact.nameMaxUnits')::numeric),
      app.record_text_issue(r, 'phone', phone, (lim->>'contact.phoneMaxUnits')::numeric),
      app.record_text_issue(r, 'company', company, (lim->>'contact.nameMaxUnits')::numeric),
      app.record_attributes_issue(r, (lim->>'contact.attributesMaxBytes')::numeric)
    ], null)) end
$$;

create or replace function app.contact_issues(r jsonb, lim jsonb) returns jsonb language sql stable as $$
  select app.contact_trimmed_issues(r, app.record_trim(r->>'externalId'), app.record_trim(r->>'email'),
    app.record_trim(r->>'name'), app.record_trim(r->>'phone'), app.record_trim(r->>'company'), lim)
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

-- The fields a change touched, by their wire names: app.contact_field_changes of the
-- fields before and after, app.contact_changes of two versions of a contact. Both are
-- inlined (the latter stable as to_jsonb is): called once per changed row of an
-- import, a function call costs more than the comparisons.
create or replace function app.contact_field_changes(was_external_id text, was_email text, was_name text, was_phone text,
  was_company text, was_attributes jsonb, external_id text, email text, name text, phone text, company text,
  attributes jsonb) returns text[] language sql immutable as $$
  select array_remove(array[
    case when was_external_id is distinct from external_id then 'externalId' end,
    case when was_email is distinct from email then 'email' end,
    case when was_name is distinct from name then 'name' end,
    case when was_phone is distinct from phone then 'phone' end,
    case when was_company is distinct from company then 'company' end,
    case when was_attributes is distinct from attributes then 'attributes' end
  ], null)
$$;

create or replace function app.contact_changes(was app.contacts, now_is app.contacts) returns jsonb
language sql stable as $$
  select to_jsonb(app.contact_field_changes(was.external_id, was.email, was.name, was.phone, was.company, was.attributes,
    now_is.external_id, now_is.email, now_is.name, now_is.phone, now_is.company, now_is.attributes))
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
-- the default 4 MB. Its statement is planned for the rows it has, which costs it past
-- jit_above_cost: compiling its expressions took a tenth of an import's time and won
-- back less, so it runs without JIT.
create or replace function api.contacts_bulk(args jsonb) returns jsonb language plpgsql
set work_mem = '32MB'
set jit = off
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
  statement text;
  statement_rest text;
begin
  perform app.contacts_writer();
  if jsonb_typeof(input) is distinct from 'array' then
    perform app.invalid_body('contacts', 'must be a list of contacts');
  end if;
  if jsonb_array_length(input) > (lim->>'contact.bulkMaxRows')::integer then
    perform app.invalid_body('contacts', format('at most %s contacts in one request', lim->>'contact.bulkMaxRows'));
  end if;

  -- One statement (written in two parts, below), planned for each import (execute)
  -- with its figures: a plan cached from a small import (or an empty table) would
  -- join a large one row by row.
  statement := $main$
  -- Each row's text fields trimmed once, checked, and kept for the contact, with
  -- which fields it sends: the row itself is not carried further, where every sort
  -- and store of the import would copy it. The key is in the collation of its column
  -- (db/schema/0032_contact_key_bytes.sql), so that the import's sorts by key compare
  -- bytes as its index does. The rows are counted out by generate_series, whose size
  -- the planner knows (it plans every join below by it; jsonb_array_elements would be
  -- guessed at 100 rows, and a join of 10,000 planned as 100 can run in time
  -- squared). offset 0 keeps each subquery whole, so no element is fetched or trimmed
  -- again where it is used.
  with keyed as materialized (
    select s.idx, s.email, s.name, s.phone, s.company,
           s.r ? 'email' as sent_email, s.r ? 'name' as sent_name, s.r ? 'phone' as sent_phone,
           s.r ? 'company' as sent_company, s.r->'attributes' as sent_attributes,
           app.contact_trimmed_issues(s.r, s.external_id, s.email, s.name, s.phone, s.company, $2) as issues,
           case when jsonb_typeof(s.r->'externalId') = 'string' then app.record_key_of_trimmed(s.external_id) end collate "C" as ext
      from (select e.idx, e.r, app.record_trim(e.r->>'externalId') as external_id,
                   app.record_trim(e.r->>'email') as email, app.record_trim(e.r->>'name') as name,
                   app.record_trim(e.r->>'phone') as phone, app.record_trim(e.r->>'company') as company
              from (select i as idx, $3 -> i as r from generate_series(0, jsonb_array_length($3) - 1) i offset 0) e
            offset 0) s
  ),
  -- The contact each externalId of the rows names, if any, locked in key order, so
  -- two imports naming the same contacts take turns instead of waiting on each other
  -- crosswise. Each is read as locked: the newest version, whatever another writer
  -- committed after this statement began. Looked up key by key, in the order of the
  -- keys, through the key's unique index: a lateral subquery that locks can only be
  -- run for each key in turn, where a join planned from statistics that lag behind
  -- the table (an organization grown by imports since they were taken) read every
  -- contact of the organization.
  held as materialized (
    select n.ext, c.id, c.email, c.name, c.phone, c.company, c.attributes
      from (select distinct k.ext from keyed k where k.ext is not null order by k.ext) n
      cross join lateral (
        select c.id, c.email, c.name, c.phone, c.company, c.attributes
          from app.contacts c
         where c.organization_id = $1 and c.external_id = n.ext
           for update of c) c
  ),
  firsts as (
    select k.*, min(k.idx) filter (where k.issues = '[]'::jsonb) over (partition by k.ext) as first_idx
      from keyed k
  ),
  -- The rules of app.contact_merge (sent fields replace, omitted are kept, attributes
  -- merge), written out over the columns: a function call per row costs the import
  -- more than the rest of its work.
  merged as (
    select f.idx, f.ext, f.issues, f.first_idx, h.id as existing_id,
           h.email as was_email, h.name as was_name, h.phone as was_phone, h.company as was_company,
           h.attributes as was_attributes,
           case when f.sent_email then f.email else h.email end as email,
           case when f.sent_name then f.name else h.name end as name,
           case when f.sent_phone then f.phone else h.phone end as phone,
           case when f.sent_company then f.company else h.company end as company,
           case when f.sent_attributes is not null then coalesce(h.attributes, '{}') || f.sent_attributes
                else coalesce(h.attributes, '{}') end as attributes
      from firsts f
      left join held h on h.ext = f.ext
  ),
  -- Each row judged: its problems (null when it is applied), the contact it writes,
  -- whether it changes an existing one, and as plain flags whether it is applied and
  -- whether it writes (flags the planner can estimate; it takes an IS NULL over an
  -- expression to keep one row in two hundred). offset 0 computes each once.
  judged as materialized (
    select m.idx, m.ext, m.existing_id, m.email, m.name, m.phone, m.company, m.attributes,
           m.was_email, m.was_name, m.was_phone, m.was_company, m.was_attributes,
           v.problems, v.changed, v.problems is null as applies,
           v.problems is null and (m.existing_id is null or v.changed) as writes,
           coalesce(m.existing_id, gen_random_uuid()) as target_id
      from merged m
      cross join lateral (
        select case when m.issues <> '[]'::jsonb then m.issues
                    when m.ext is not null and m.idx <> m.first_idx then jsonb_build_array(jsonb_build_object(
                      'path', 'externalId', 'message', format('repeats the externalId of contacts.%s, which is applied', m.first_idx)))
                    when m.email is null and m.name is null then jsonb_build_array(jsonb_build_object(
                      'path', 'email', 'message', 'a contact needs an email or a name'))
               end as problems,
               m.existing_id is not null
                 and (m.email, m.name, m.phone, m.company, m.attributes)
                     is distinct from (m.was_email, m.was_name, m.was_phone, m.was_company, m.was_attributes) as changed
        offset 0) v
  ),
  -- New contacts inserted and changed ones updated, each in key order as the contacts
  -- were locked: two imports creating the same keys take turns at the first key they
  -- share instead of waiting on each other crosswise. New contacts are inserted
  -- plainly: an INSERT ... ON CONFLICT pays for each row a probe of the key's index
  -- before it, a lock and a second log record after it, about 6% of a create's time.
  -- Should another writer have created one of the new keys since this statement
  -- began, the insert fails as a whole and the statement runs again (below). A
  -- changed contact is held locked, so its key can name no other contact: it is found
  -- by its key as the insert meets it, never joined to the rows by the planner.
  inserted as (
    insert into app.contacts as c (organization_id, id, external_id, email, name, phone, company, attributes,
                                   created_by, created_at, updated_at)
    select $1, j.target_id, j.ext, j.email, j.name, j.phone, j.company, j.attributes, $6, $4, $4
      from judged j
     where j.writes and j.existing_id is null
     order by j.ext, j.idx
  $main$;
  -- The statement's rest: between the two goes what the insert of new contacts does
  -- on meeting a key created meanwhile (nothing: it fails; or, run again, leave it).
  statement_rest := $rest$
    returning c.id, c.external_id, c.email, c.name, c.phone, c.company, c.attributes, c.created_at, c.updated_at
  ),
  updated as (
    insert into app.contacts as c (organization_id, id, external_id, email, name, phone, company, attributes,
                                   created_by, created_at, updated_at)
    select $1, j.target_id, j.ext, j.email, j.name, j.phone, j.company, j.attributes, $6, $4, $4
      from judged j
     where j.writes and j.existing_id is not null
     order by j.ext, j.idx
    on conflict (organization_id, external_id) do update
       set email = excluded.email, name = excluded.name, phone = excluded.phone, company = excluded.company,
           attributes = excluded.attributes, updated_at = excluded.updated_at
     where c.id = excluded.id
    returning c.id, c.external_id, c.email, c.name, c.phone, c.company, c.attributes, c.created_at, c.updated_at
  ),
  written as (
    select * from inserted
    union all
    select * from updated
  ),
  -- Each written contact with the row applied to it (a refused row repeating its key
  -- names the same contact), and for a change the contact before it.
  applied as (
    select j.idx, j.existing_id is not null as was_changed,
           j.was_email, j.was_name, j.was_phone, j.was_company, j.was_attributes, w.*
      from written w join judged j on j.target_id = w.id and j.applies
  ),
  -- The created contacts' events and the changed contacts' events, each kind as one
  -- outbox row holding their payloads in the order of the rows
  -- (db/schema/0031_event_batches.sql), drained as app.raise_event's events are.
  created_events as (
    insert into app.events (organization_id, name, payloads, event_count, project_id, actor_user_id, source_run_id, raised_at)
    select $1, 'contact.created', json_agg(row(app.contact_record_of(a.id, a.external_id, a.email, a.name, a.phone,
             a.company, a.attributes, a.created_at, a.updated_at))::app.contact_created_payload order by a.idx),
           count(*), null, $6, $5, $4
      from applied a
     where not a.was_changed
    having count(*) > 0
  ),
  updated_events as (
    insert into app.events (organization_id, name, payloads, event_count, project_id, actor_user_id, source_run_id, raised_at)
    select $1, 'contact.updated', json_agg(row(
             app.contact_record_of(a.id, a.external_id, a.email, a.name, a.phone, a.company, a.attributes,
                                   a.created_at, a.updated_at),
             -- (an import changes no key: the row's key named the contact)
             app.contact_field_changes(a.external_id, a.was_email, a.was_name, a.was_phone, a.was_company,
                                       a.was_attributes, a.external_id, a.email, a.name, a.phone, a.company,
                                       a.attributes))::app.contact_updated_payload order by a.idx),
           count(*), null, $6, $5, $4
      from applied a
     where a.was_changed
    having count(*) > 0
  ),
  answered as (
    select j.idx, case
             when j.problems is not null then 'error'
             when j.existing_id is not null then 'updated'
             when a.idx is not null then 'created'
             -- Its externalId was created by another writer while the statement ran again.
             else 'retry'
           end as status, j.problems, j.target_id, j.existing_id is not null and a.idx is not null as changed
      from judged j
      left join applied a on a.idx = j.idx
  )
  -- The answers are written as JSON text and read once as jsonb: built as ten
  -- thousand jsonb objects and gathered, they cost five times as much. Only an
  -- error's message and issues need escaping, and jsonb writes those.
  select string_agg(case a.status
           when 'error' then jsonb_build_object('index', a.idx, 'status', 'error', 'error', jsonb_build_object(
             'code', 'INVALID_BODY',
             'message', 'The contact is not valid: ' || (a.problems->0->>'path') || ' ' || (a.problems->0->>'message'),
             'issues', a.problems))::text
           when 'retry' then '{"index":' || a.idx || ',"status":"retry"}'
           else '{"index":' || a.idx || ',"status":"' || a.status || '","id":"' || a.target_id || '"}' end, ',' order by a.idx) as results,
         count(*) filter (where a.status = 'created') as created,
         count(*) filter (where a.status = 'updated') as updated,
         count(*) filter (where a.status = 'error') as failed,
         count(*) filter (where a.status = 'retry') as retried,
         count(*) filter (where a.changed) as changed
    from answered a
  $rest$;
  begin
    execute statement || statement_rest into reply using org, lim, input, stamp, source_run, app.user_id();
  exception when unique_violation then
    -- Another writer created a key of the new rows meanwhile, and has committed it:
    -- all of this import's work is undone with the failed insert and done again,
    -- and this time finds that contact and updates it. A key yet another writer
    -- creates while it runs again is left alone by the insert (its row answered
    -- 'retry'), and that row is applied below by the rules of a single create.
    execute statement || ' on conflict (organization_id, external_id) do nothing ' || statement_rest
       into reply using org, lim, input, stamp, source_run, app.user_id();
  end;

  -- A drain at once when a binding listens, as app.raise_event does.
  if exists (select 1 from app.automation_triggers t
              where t.organization_id = org and t.kind = 'event' and t.enabled
                and ((t.event = 'contact.created' and reply.created > 0) or (t.event = 'contact.updated' and reply.changed > 0))) then
    perform app.enqueue('drain_events', '{}'::jsonb, 'drain_events');
  end if;

  if coalesce(reply.retried, 0) = 0 then
    return ('{"results":[' || coalesce(reply.results, '') || '],"created":' || coalesce(reply.created, 0)
            || ',"updated":' || coalesce(reply.updated, 0) || ',"failed":' || coalesce(reply.failed, 0) || '}')::jsonb;
  end if;

  -- A row whose key another writer created while the statement ran again (three
  -- imports of the same new keys at once): by the rules of a single create, which
  -- now finds and updates that contact (and raises its event). The answers are
  -- rebuilt once, however many.
  results := ('[' || reply.results || ']')::jsonb;
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
  return jsonb_build_object('results', results, 'created', reply.created, 'updated', reply.updated, 'failed', reply.failed);
end $$;

grant execute on function app.contacts_writer, app.contact_record_of, app.contact_wire, app.contact_json, app.contact_limits, app.record_trim, app.record_key_of_trimmed, app.record_key, app.record_text_issue(jsonb, text, text, numeric), app.record_text_issue(jsonb, text, numeric),
  app.record_attributes_issue, app.record_unknown_key, app.contact_trimmed_issues, app.contact_issues, app.contact_merge, app.contact_field_changes, app.contact_changes,
  app.contact_nameless, app.contact_refuse, app.contact, app.contact_upsert, api.contacts_list,
  api.contact_create, api.contact_get, api.contact_update, api.contact_delete, api.contacts_bulk to api;
