-- Task comments: post (as the key's user, or a run's action step), list newest page
-- first; @mentions of organization members notify those who see the project.

create or replace function app.comment_json(c app.task_comments) returns jsonb language sql stable as $$
  select jsonb_build_object('id', c.id, 'taskId', c.task_id, 'authorType', c.author_type,
    'authorId', c.author_user_id, 'authorName', (select u.name from app.users u where u.id = c.author_user_id),
    'runId', c.author_run_id, 'body', c.body, 'mentions', to_jsonb(c.mentions), 'createdAt', app.ms(c.created_at))
$$;

-- The active members of the organization a body mentions: `@` followed by a member's
-- email address (ignoring case), or by a handle that names exactly one member, their
-- name without spaces or the part of their email before the @.
create or replace function app.mentioned_members(organization uuid, body text) returns uuid[] language sql stable as $$
  with tokens as (
    select distinct lower(regexp_replace(m[1], '[.]+$', '')) as token
      from regexp_matches(body, '(?:^|[^A-Za-z0-9._%+-])@([A-Za-z0-9._%+-]+(?:@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)?)', 'g') m
  ), members as (
    select u.id, lower(u.email) as email, lower(split_part(u.email, '@', 1)) as local, lower(replace(u.name, ' ', '')) as handle
      from app.memberships ms join app.users u on u.id = ms.user_id
     where ms.organization_id = organization and not ms.disabled
  ), by_email as (
    select m.id from tokens k join members m on m.email = k.token
  ), by_handle as (
    select min(m.id::text)::uuid as id from tokens k join members m on k.token in (m.local, m.handle)
     where position('@' in k.token) = 0
     group by k.token having count(distinct m.id) = 1
  )
  select coalesce(array_agg(distinct id order by id), '{}') from (select id from by_email union select id from by_handle) found
$$;

-- A personal notification about a task to a member who sees its project; nobody else
-- is told, and the person who acted is never told of their own act.
-- SECURITY DEFINER: whether another member sees a project depends on their grants and
-- teams, which the caller's policies hide, and the notification is theirs, not the
-- caller's. It reads membership and access of that one project only, and writes one
-- notification in the caller's organization.
create or replace function app.task_notify(t app.tasks, recipient uuid, kind text, extra jsonb) returns boolean
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  p app.projects;
begin
  if recipient is null or recipient is not distinct from app.user_id() or t.organization_id is distinct from app.org_id() then
    return false;
  end if;
  select * into p from app.projects where organization_id = t.organization_id and id = t.project_id;
  if app.member_project_access(t.organization_id, recipient, p.id) is null then
    return false;
  end if;
  insert into app.notifications (organization_id, recipient_id, kind, stream, params)
  values (t.organization_id, recipient, kind, 'personal',
          jsonb_build_object('projectId', p.id, 'projectName', p.name, 'taskId', t.id,
                             'taskIdentifier', p.key || '-' || t.number, 'taskTitle', t.title) || coalesce(extra, '{}'));
  return true;
end $$;

-- Adds a comment and tells who it concerns: comment.created, and per mentioned member
-- who sees the project a notification and comment.mentioned. author_type 'user' posts
-- as the caller; 'automation' as the run `run` (step_key, kept as the comment's
-- source_key, makes a repeated step's comment one comment).
drop function if exists app.task_comment_add(app.tasks, text, text, uuid, text);
create or replace function app.task_comment_add(t app.tasks, body text, author_type text, run uuid, step_key text)
returns app.task_comments language plpgsql as $$
declare
  c app.task_comments;
  mentioned uuid;
  -- A run's comment is signed by its automation.
  author_name text := coalesce((select u.name from app.users u where u.id = app.user_id()),
                               (select r.automation_name from app.runs r where r.organization_id = t.organization_id and r.id = run));
  issues jsonb := app.units_issue('body', body, app.limit('comment.bodyMaxUnits'));
begin
  if body is null or app.trim_space(body) = '' then
    issues := jsonb_build_array(jsonb_build_object('path', 'body', 'message', 'required, not blank')) || issues;
  end if;
  if jsonb_array_length(issues) > 0 then
    perform app.fail('INVALID_BODY', 400, 'The comment is not valid: body ' || (issues->0->>'message'),
      jsonb_build_object('issues', issues));
  end if;
  insert into app.task_comments (organization_id, project_id, task_id, author_type, author_user_id, author_run_id, body,
                                 mentions, source_key)
  values (t.organization_id, t.project_id, t.id, author_type, app.user_id(), run, body,
          app.mentioned_members(t.organization_id, body), step_key)
  on conflict (organization_id, source_key) where source_key is not null do nothing
  returning * into c;
  if c.id is null then
    -- The step was repeated (a worker that died after writing it): the comment stands.
    select * into c from app.task_comments where organization_id = t.organization_id and source_key = step_key;
    return c;
  end if;
  perform app.raise_event(t.organization_id, 'comment.created',
    jsonb_build_object('task', app.task_brief(t), 'comment', app.comment_json(c)), t.project_id, author_type);
  foreach mentioned in array c.mentions loop
    if app.task_notify(t, mentioned, 'comment.mentioned', jsonb_build_object(
         'commentId', c.id, 'authorName', author_name,
         'excerpt', app.utf16_left(body, 280))) then
      perform app.raise_event(t.organization_id, 'comment.mentioned',
        jsonb_build_object('task', app.task_brief(t), 'comment', app.comment_json(c), 'mentionedUserId', mentioned),
        t.project_id, author_type);
    end if;
  end loop;
  return c;
end $$;

-- Project readers may comment; the project must be active.
create or replace function api.task_comment_create(args jsonb) returns jsonb language plpgsql as $$
declare
  t app.tasks := app.task_visible(args->>'taskId', args->>'id');
  c app.task_comments;
begin
  if exists (select 1 from app.projects p where p.organization_id = t.organization_id and p.id = t.project_id
                and p.archived_at is not null) then
    perform app.fail('PROJECT_ARCHIVED', 403, 'The project is archived; restore it before changing it.');
  end if;
  c := app.task_comment_add(t, args->>'body', 'user', null, null);
  return jsonb_build_object('comment', jsonb_build_object('id', c.id));
end $$;

-- Newest page first, chronological inside the page.
create or replace function api.task_comments_list(args jsonb) returns jsonb language plpgsql stable as $$
declare
  t app.tasks := app.task_visible(args->>'taskId', args->>'id');
  page_size integer := least(coalesce((args->>'limit')::numeric, app.limit('page.comments.defaultSize')),
                             app.limit('page.comments.maxSize'))::integer;
  filters jsonb := jsonb_build_object('taskId', t.id);
  page_start record := app.keyset_resume(args->>'cursor', 'task_comments', filters);
  rows jsonb;
  positions jsonb[];
begin
  select jsonb_agg(app.comment_json(page.c) order by (page.c).created_at, (page.c).id) filter (where page.n <= page_size),
         array_agg(app.keyset_position((page.c).created_at, (page.c).id) order by page.n)
    into rows, positions
    from (select cm as c, row_number() over (order by cm.created_at desc, cm.id desc) as n
            from app.task_comments cm
           where cm.organization_id = t.organization_id and cm.task_id = t.id
             and (cm.created_at, cm.id) < (page_start.after_created, page_start.after_id)
           order by cm.created_at desc, cm.id desc
           limit page_size + 1) page;
  -- positions run newest first, so positions[page_size] is the page's oldest row. The
  -- deprecated `cursor` twin belongs to the project and file lists only.
  if coalesce(cardinality(positions), 0) > page_size then
    return app.keyset_reply('comments', 'task_comments', filters, rows, positions[page_size]) - 'cursor';
  end if;
  return app.keyset_reply('comments', 'task_comments', filters, rows, null);
end $$;

grant execute on function app.comment_json, app.mentioned_members, app.task_notify, app.task_comment_add,
  api.task_comment_create, api.task_comments_list to api;
