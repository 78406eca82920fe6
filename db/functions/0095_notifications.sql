-- The notification export (GET /api/v1/notifications/sync) and marking a
-- notification read. A notification is stored as its kind and params and rendered
-- here, in the locale the export asks for, each time it is read: new wording or
-- another locale reaches every row, and changes its version.

-- A text in the locale asked for: en unless de or fr.
create or replace function app.in_locale(locale text, en text, de text, fr text) returns text language sql immutable as $$
  select case locale when 'de' then de when 'fr' then fr else en end
$$;

-- The template filled with a value, or null without one (format alone would leave
-- the template's words around an empty string).
create or replace function app.fill(template text, value text) returns text language sql immutable as $$
  select case when value is not null then format(template, value) end
$$;

-- The task a text names: its identifier, when it has one, and its title in the
-- locale's quotation marks.
create or replace function app.notification_task(params jsonb, locale text) returns text language sql immutable as $$
  select concat_ws(' ', nullif(params->>'taskIdentifier', ''),
    app.fill(app.in_locale(locale, '“%s”', '„%s“', U&'«\00A0%s\00A0»'), nullif(params->>'taskTitle', '')))
$$;

-- The person a text names, or someone when the name is missing.
create or replace function app.notification_person(name text, locale text) returns text language sql immutable as $$
  select coalesce(nullif(btrim(name), ''), app.in_locale(locale, 'Someone', 'Jemand', U&'Quelqu\2019un'))
$$;

-- " in the project Alpha", or nothing when the project's name is missing.
create or replace function app.notification_in_project(params jsonb, locale text) returns text language sql immutable as $$
  select coalesce(app.fill(app.in_locale(locale, ' in the project %s', ' im Projekt %s', ' du projet %s'),
                           nullif(params->>'projectName', '')), '')
$$;

-- Paths are relative to the dashboard's origin and start with the organization. An id
-- that cannot be one leads to the organization's start page rather than nowhere.
create or replace function app.notification_task_path(params jsonb, org_slug text) returns text language sql immutable as $$
  select case when app.as_uuid(params->>'projectId') is null or app.as_uuid(params->>'taskId') is null then '/' || org_slug
              else format('/%s/projects/%s/tasks/%s', org_slug, app.as_uuid(params->>'projectId'), app.as_uuid(params->>'taskId')) end
$$;

create or replace function app.notification_task_assigned(params jsonb, locale text, org_slug text) returns jsonb
language plpgsql immutable as $$
declare
  task text := app.notification_task(params, locale);
  by_name text := app.notification_person(params->>'assignedByName', locale);
  in_project text := app.notification_in_project(params, locale);
begin
  return jsonb_build_object(
    'title', format(app.in_locale(locale, 'Assigned to you: %s', 'Ihnen zugewiesen: %s',
                                  U&'Tâche qui vous est attribuée\00A0: %s'), task),
    'body', format(app.in_locale(locale, '%s assigned you the task %s%s.', '%s hat Ihnen die Aufgabe %s%s zugewiesen.',
                                 '%s vous a attribué la tâche %s%s.'), by_name, task, in_project),
    'path', app.notification_task_path(params, org_slug));
end $$;

create or replace function app.notification_comment_mentioned(params jsonb, locale text, org_slug text) returns jsonb
language plpgsql immutable as $$
declare
  task text := app.notification_task(params, locale);
  author text := app.notification_person(params->>'authorName', locale);
  excerpt text := nullif(params->>'excerpt', '');
  task_path text := app.notification_task_path(params, org_slug);
  said text := format(app.in_locale(locale, '%s mentioned you in a comment on the task %s%s',
                                    '%s hat Sie in einem Kommentar zur Aufgabe %s%s erwähnt',
                                    '%s vous a mentionné dans un commentaire sur la tâche %s%s'),
                      author, task, app.notification_in_project(params, locale));
begin
  return jsonb_build_object(
    'title', format(app.in_locale(locale, '%s mentioned you: %s', '%s hat Sie erwähnt: %s', U&'%s vous a mentionné\00A0: %s'),
                    author, task),
    -- The excerpt is quoted after a blank line, as it was written.
    'body', case when excerpt is null then said || '.'
                 else said || app.in_locale(locale, ':', ':', U&'\00A0:') || E'\n\n' || excerpt end,
    'path', task_path || case when task_path <> ('/' || org_slug) and app.as_uuid(params->>'commentId') is not null
                              then '#comment-' || app.as_uuid(params->>'commentId') else '' end);
end $$;

create or replace function app.notification_trigger_paused(params jsonb, locale text, org_slug text) returns jsonb
language plpgsql immutable as $$
declare
  name text := coalesce(nullif(params->>'automation', ''), '?');
  failures text := coalesce(params->>'failures', app.in_locale(locale, 'several', 'mehreren', 'plusieurs'));
  last_failure text := coalesce(app.fill(app.in_locale(locale, ' (last failure: %s)', ' (zuletzt: %s)',
                                                       U&' (dernière erreur\00A0: %s)'), nullif(params->>'lastFailureCode', '')), '');
begin
  return jsonb_build_object(
    'title', format(app.in_locale(locale, 'Schedule paused: %s', 'Zeitplan pausiert: %s', U&'Planification suspendue\00A0: %s'),
                    name),
    'body', format(app.in_locale(locale,
        'The schedule of the automation %s was paused after %s failed runs in a row%s. '
          || 'Fix the cause, then enable the schedule again.',
        'Der Zeitplan der Automatisierung %s wurde nach %s fehlgeschlagenen Läufen in Folge pausiert%s. '
          || 'Beheben Sie die Ursache und aktivieren Sie den Zeitplan danach wieder.',
        U&'La planification de l\2019automatisation %s a été suspendue après %s exécutions consécutives en échec%s. '
          || 'Corrigez la cause, puis réactivez la planification.'),
      name, failures, last_failure),
    -- URLs write each "/" of an automation name as "__".
    'path', case when name ~ '^[A-Za-z0-9][A-Za-z0-9._/-]*$'
                 then format('/%s/automations/%s', org_slug, replace(name, '/', '__'))
                 else format('/%s/automations', org_slug) end);
end $$;

-- A kind this file does not know yet (a newer writer, an older reader) still reads as
-- a notification rather than as nothing.
create or replace function app.notification_other(kind text, locale text, org_slug text) returns jsonb
language sql immutable as $$
  select jsonb_build_object(
    'title', app.in_locale(locale, 'New notification', 'Neue Benachrichtigung', 'Nouvelle notification'),
    'body', format(app.in_locale(locale, 'You have a new notification (%s).', 'Sie haben eine neue Benachrichtigung (%s).',
                                 'Vous avez une nouvelle notification (%s).'), kind),
    'path', '/' || org_slug)
$$;

-- Title, body and path of a notification in a locale, the texts cut at their limits
-- in UTF-16 code units (never inside a surrogate pair).
create or replace function app.notification_text(n app.notifications, locale text, org_slug text) returns jsonb
language plpgsql stable as $$
declare
  rendered jsonb := case n.kind
    when 'task.assigned' then app.notification_task_assigned(n.params, locale, org_slug)
    when 'comment.mentioned' then app.notification_comment_mentioned(n.params, locale, org_slug)
    when 'automation.trigger.paused' then app.notification_trigger_paused(n.params, locale, org_slug)
    else app.notification_other(n.kind, locale, org_slug) end;
begin
  return jsonb_build_object(
    'title', app.utf16_left(rendered->>'title', app.limit('notification.titleMaxUnits')::integer),
    'body', app.utf16_left(rendered->>'body', app.limit('notification.bodyMaxUnits')::integer),
    'path', rendered->>'path');
end $$;

-- The export's key of a notification, stable across syncs of one recipient's mirror.
create or replace function app.notification_export_id(n app.notifications) returns text language sql immutable as $$
  select n.organization_id || ':' || n.stream || ':' || n.id
$$;

-- The text JSON.stringify writes for a flat object as the client receives it from
-- jsonb: its keys in jsonb's order (by length, then bytewise), no white space. A
-- scalar's jsonb text is already what JSON.stringify writes for it (strings escaped
-- alike, whole numbers in digits), so only the separators are jsonb's own.
create or replace function app.json_compact(object jsonb) returns text language sql immutable as $$
  select '{' || coalesce(string_agg(to_json(e.key)::text || ':' || e.value::text, ',' order by e.n), '') || '}'
    from jsonb_each(object) with ordinality e(key, value, n)
$$;

-- An export row. version is the SHA-256 of the row without it, as a client that
-- received the row computes it: sha256(JSON.stringify(row without version)).
create or replace function app.notification_row(n app.notifications, locale text, org_slug text) returns jsonb
language plpgsql stable as $$
declare
  rendered jsonb := app.notification_text(n, locale, org_slug);
  row jsonb := rendered || jsonb_build_object('id', app.notification_export_id(n), 'createdAt', app.ms(n.created_at),
                                              'read', n.read_at is not null, 'kind', n.kind);
begin
  return row || jsonb_build_object('version', encode(sha256(convert_to(app.json_compact(row), 'UTF8')), 'hex'));
end $$;

-- The member an export names: the one active membership of the organization whose
-- user has this email (ignoring case) and has verified it; null when there is none
-- or more than one.
create or replace function app.notification_recipient(address text) returns uuid language plpgsql stable as $$
declare
  found uuid[] := array(
    select m.user_id from app.memberships m join app.users u on u.id = m.user_id
     where m.organization_id = app.org_id() and not m.disabled and u.email_verified and lower(u.email) = lower(address)
     limit 2);
begin
  return case when cardinality(found) = 1 then found[1] end;
end $$;

-- The export's page size: limit arrives as sent, so a non-integer is the export's
-- own INVALID_LIMIT, and a whole number outside 1 to page.notifications.maxSize (also
-- the default) is clamped.
create or replace function app.notification_page_size(requested text) returns integer language plpgsql stable as $$
declare
  ceiling integer := app.limit('page.notifications.maxSize');
begin
  if requested !~ '^-?[0-9]+$' then
    perform app.fail('INVALID_LIMIT', 400, 'limit must be a whole number; values outside 1 to ' || ceiling || ' are clamped.',
      jsonb_build_object('issues', jsonb_build_array(jsonb_build_object('path', 'limit', 'message', 'must be a whole number'))));
  end if;
  return greatest(1, least(coalesce(requested::numeric, ceiling), ceiling))::integer;
end $$;

create or replace function api.notifications_sync(args jsonb) returns jsonb language plpgsql stable as $$
declare
  stream text := args->>'stream';
  page_size integer;
  org_slug text;
  locale text;
  recipient uuid;
  filters jsonb;
  after_seq bigint;
  page_start record;
  rows jsonb;
  positions jsonb[];
begin
  if not app.can_export_notifications() then
    perform app.fail('ROLE_FORBIDDEN', 403,
      'Exporting notifications needs the notificationExport capability: Owner, Admin or a live notifications.export grant.');
  end if;
  page_size := app.notification_page_size(args->>'limit');
  select o.slug, coalesce(args->>'locale', o.language) into org_slug, locale from app.organizations o where o.id = app.org_id();
  recipient := app.notification_recipient(args->>'recipientEmail');
  -- The cursor names the recipient it was issued for: once the email names another
  -- member, or none, it is refused rather than continued for someone else.
  filters := jsonb_build_object('recipientId', recipient, 'stream', stream);
  if stream = 'personal' then
    after_seq := coalesce((app.cursor_read(args->>'cursor', 'notifications', filters)->>0)::bigint, 9223372036854775807);
  else
    page_start := app.keyset_resume(args->>'cursor', 'notifications', filters);
  end if;
  if recipient is null then
    return jsonb_build_object('recipientId', null, 'page', '[]'::jsonb, 'isDone', true, 'continueCursor', '');
  end if;

  if stream = 'personal' then
    select jsonb_agg(app.notification_row(page.n, locale, org_slug) order by (page.n).seq desc),
           array_agg(jsonb_build_array((page.n).seq) order by (page.n).seq desc)
      into rows, positions
      from (select n from app.notifications n
             where n.organization_id = app.org_id() and n.recipient_id = recipient and n.stream = 'personal'
               and n.seq < after_seq
             order by n.seq desc limit page_size + 1) page;
  else
    select jsonb_agg(app.notification_row(page.n, locale, org_slug) order by (page.n).created_at desc, (page.n).id desc),
           array_agg(app.keyset_position((page.n).created_at, (page.n).id) order by (page.n).created_at desc, (page.n).id desc)
      into rows, positions
      from (select n from app.notifications n
             where n.organization_id = app.org_id() and n.recipient_id = recipient and n.stream = 'organization'
               and (n.created_at, n.id) < (page_start.after_created, page_start.after_id)
             order by n.created_at desc, n.id desc limit page_size + 1) page;
  end if;
  -- The export has no deprecated cursor twin.
  return jsonb_build_object('recipientId', recipient)
    || (app.keyset_page('page', 'notifications', filters, page_size, rows, positions) - 'cursor');
end $$;

-- The recipient marks their own notification read, named by its id or by its export
-- row's id. Reading again keeps the first readAt.
create or replace function api.notification_read(args jsonb) returns jsonb language plpgsql as $$
declare
  ref text := args->>'notificationId';
  row_id text[] := regexp_match(ref, '^([^:]+):(personal|organization):([^:]+)$');
  n app.notifications;
begin
  update app.notifications
     set read_at = coalesce(read_at, app.now())
   where organization_id = app.org_id() and recipient_id = app.user_id()
     and id = app.as_uuid(coalesce(row_id[3], ref))
     and (row_id is null or (organization_id = app.as_uuid(row_id[1]) and stream = row_id[2]))
  returning * into n;
  if n.id is null then
    perform app.fail('NOT_FOUND', 404, 'Notification not found.');
  end if;
  return jsonb_build_object('notification',
    jsonb_build_object('id', app.notification_export_id(n), 'read', true, 'readAt', app.ms(n.read_at)));
end $$;

-- The operator's choice (the seed file's organization language) of the language an
-- export renders in when it names none.
create or replace function app.operator_org_language_set(organization uuid, language text) returns void language sql as $$
  update app.organizations set language = operator_org_language_set.language where id = organization
$$;

grant execute on function app.in_locale, app.fill, app.notification_task, app.notification_person, app.notification_in_project,
  app.notification_task_path, app.notification_task_assigned, app.notification_comment_mentioned,
  app.notification_trigger_paused, app.notification_other, app.notification_text, app.notification_export_id,
  app.json_compact, app.notification_row, app.notification_recipient, app.notification_page_size,
  api.notifications_sync, api.notification_read to api;
