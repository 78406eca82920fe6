-- Chat threads: create, list, send (which starts a generation), the generation's
-- state and stop, and the messages. A thread is its owner's alone, in the scope it
-- was made in: personal (project_id null) or a project's. The route names the scope:
-- `id` (the project) on the project routes, nothing on the personal ones.

-- Tokens of a text as the service estimates them before a send: four UTF-16 code
-- units to a token, rounded up (providers count exactly; the estimate only has to
-- refuse what cannot fit).
create or replace function app.token_estimate(value text) returns integer language sql immutable as $$
  select ceil(coalesce(app.utf16_length(value), 0) / 4.0)::integer
$$;

create or replace function app.message_text(m app.thread_messages) returns text language sql immutable as $$
  select coalesce(string_agg(p->>'text', '' order by n), '')
    from jsonb_array_elements(m.parts) with ordinality e(p, n) where p->>'type' = 'text'
$$;

create or replace function app.thread_json(t app.threads) returns jsonb language sql stable as $$
  select jsonb_build_object('id', t.id, 'projectId', t.project_id,
    'generation', jsonb_build_object('status', t.generation_status, 'lastMessageId', t.last_message_id),
    'createdAt', app.ms(t.created_at), 'updatedAt', app.ms(t.updated_at))
$$;

create or replace function app.message_json(m app.thread_messages) returns jsonb language sql stable as $$
  select jsonb_build_object('id', m.id, 'threadId', m.thread_id, 'role', m.role, 'status', m.status, 'parts', m.parts,
    'model', m.model, 'providerSlug', m.provider_slug, 'replyTo', m.reply_to, 'finishReason', m.finish_reason,
    'errorCode', m.error_code, 'error', m.error, 'createdAt', app.ms(m.created_at), 'updatedAt', app.ms(m.updated_at))
$$;

-- The generation route of a thread, in the scope it lives in.
create or replace function app.thread_path(t app.threads) returns text language sql immutable as $$
  select case when t.project_id is null then '/api/v1/threads/' || t.id
              else '/api/v1/projects/' || t.project_id || '/threads/' || t.id end
$$;

-- The caller's thread in the route's scope (project: the project is visible to the
-- caller and the thread lives in it; personal: the thread is personal), or 404 for
-- every other thread, another person's included.
create or replace function app.thread_visible(thread text, project text) returns app.threads language plpgsql stable as $$
declare
  t app.threads;
  p app.projects;
begin
  if project is not null then
    p := app.project_for_read(project);
  end if;
  select * into t from app.threads
   where organization_id = app.org_id() and id = app.as_uuid(thread) and owner_id = app.user_id()
     and project_id is not distinct from p.id;
  if t.id is null then
    perform app.fail('NOT_FOUND', 404, 'Thread not found.');
  end if;
  return t;
end $$;

-- Project readers may chat; a project thread is made in an active project.
create or replace function api.thread_create(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects;
  t app.threads;
begin
  if args->>'id' is not null then
    p := app.project_for_read(args->>'id');
    if p.archived_at is not null then
      perform app.fail('PROJECT_ARCHIVED', 403, 'The project is archived; restore it before changing it.');
    end if;
  end if;
  insert into app.threads (organization_id, owner_id, project_id) values (app.org_id(), app.user_id(), p.id)
  returning * into t;
  return jsonb_build_object('id', t.id);
end $$;

-- The caller's threads of the scope, newest first.
create or replace function api.threads_list(args jsonb) returns jsonb language plpgsql stable as $$
declare
  p app.projects;
  page_size integer := app.page_size(args->>'limit', 'page.threads.maxSize');
  filters jsonb;
  page_start record;
  rows jsonb;
  positions jsonb[];
begin
  if args->>'id' is not null then
    p := app.project_for_read(args->>'id');
  end if;
  filters := jsonb_build_object('projectId', p.id);
  page_start := app.keyset_resume(args->>'cursor', 'threads', filters);
  select jsonb_agg(app.thread_json(c) order by c.created_at desc, c.id desc),
         array_agg(app.keyset_position(c.created_at, c.id) order by c.created_at desc, c.id desc)
    into rows, positions
    from (select * from app.threads t
           where t.organization_id = app.org_id() and t.owner_id = app.user_id() and t.project_id is not distinct from p.id
             and (t.created_at, t.id) < (page_start.after_created, page_start.after_id)
           order by t.created_at desc, t.id desc
           limit page_size + 1) c;
  return app.keyset_page('page', 'threads', filters, page_size, rows, positions) - 'cursor';
end $$;

-- The catalog model a send names: by id, and by provider when several serve it. Its
-- problems are the body's, at the path that names them.
drop function if exists app.chat_model(text, text);
create or replace function app.chat_model(model_id text, provider text, out id text, out provider_slug text,
  out context_window integer, out max_output_tokens integer) language plpgsql stable as $$
declare
  providers integer;
begin
  select count(*) into providers from app.model_catalog() c where c.id = model_id;
  if providers = 0 then
    perform app.invalid_body('model', 'not a model of the organization''s catalog (GET /api/v1/models)');
  elsif provider is null and providers > 1 then
    perform app.invalid_body('providerSlug', 'several providers serve this model; name one');
  end if;
  select c.id, c.provider_slug, c.context_window, c.max_output_tokens
    into id, provider_slug, context_window, max_output_tokens
    from app.model_catalog() c where c.id = model_id and (provider is null or c.provider_slug = provider);
  if id is null then
    perform app.invalid_body('providerSlug', 'this provider does not serve the model');
  end if;
end $$;

-- The 202 of a send, also answered to an Idempotency-Key replay.
create or replace function app.send_json(t app.threads, sent app.thread_messages, reply uuid) returns jsonb language sql stable as $$
  select jsonb_build_object('messageId', sent.id, 'threadId', t.id, 'status', 'accepted', 'model', sent.model,
                            'replyMessageId', reply, 'poll', app.thread_path(t) || '/generation')
$$;

-- A send: the person's message, the assistant message that will answer it (pending),
-- the thread streaming, and the generation job, in one transaction. Refused up front
-- when the conversation cannot fit the model's context window with the output asked,
-- or more output is asked than the model gives.
create or replace function api.thread_send(args jsonb) returns jsonb language plpgsql as $$
declare
  t app.threads := app.thread_visible(args->>'threadId', args->>'id');
  key text := args->>'idempotencyKey';
  m record;
  asked integer := (args->>'maxOutputTokens')::integer;
  output_tokens integer;
  needed integer;
  sent app.thread_messages;
  reply app.thread_messages;
begin
  -- One send at a time per thread: the lock orders a replay after the send it repeats.
  select * into t from app.threads where organization_id = t.organization_id and id = t.id for update;
  if key is not null then
    select * into sent from app.thread_messages
     where organization_id = t.organization_id and thread_id = t.id and idempotency_key = key;
    if sent.id is not null then
      return app.send_json(t, sent, (select r.id from app.thread_messages r
                                      where r.organization_id = t.organization_id and r.reply_to = sent.id));
    end if;
  end if;
  if t.project_id is not null and exists (select 1 from app.projects p where p.organization_id = t.organization_id
                                              and p.id = t.project_id and p.archived_at is not null) then
    perform app.fail('PROJECT_ARCHIVED', 403, 'The project is archived; restore it before changing it.');
  end if;
  m := app.chat_model(args->>'model', args->>'providerSlug');
  if asked is not null and m.max_output_tokens is not null and asked > m.max_output_tokens then
    perform app.fail('INVALID_BODY', 400, format('The model gives at most %s output tokens.', m.max_output_tokens),
      jsonb_build_object('maxOutputTokens', m.max_output_tokens, 'issues', jsonb_build_array(jsonb_build_object(
        'path', 'maxOutputTokens', 'message', format('at most %s for this model', m.max_output_tokens)))));
  end if;
  if t.generation_status = 'streaming' then
    perform app.fail('GENERATION_IN_PROGRESS', 409, 'The thread is answering a message; wait for it to settle or stop it.',
      jsonb_build_object('lastMessageId', t.last_message_id));
  end if;
  output_tokens := coalesce(asked, m.max_output_tokens, 0);
  select coalesce(sum(app.token_estimate(app.message_text(x))), 0) + app.token_estimate(args->>'content') + output_tokens
    into needed
    from app.thread_messages x where x.organization_id = t.organization_id and x.thread_id = t.id;
  if needed > m.context_window then
    perform app.fail('INVALID_BODY', 400,
      format('The conversation needs about %s tokens with its output; the model''s context window is %s.', needed, m.context_window),
      jsonb_build_object('contextWindow', m.context_window, 'estimatedTokens', needed, 'issues', jsonb_build_array(
        jsonb_build_object('path', 'content', 'message', 'the conversation does not fit the model''s context window'))));
  end if;

  insert into app.thread_messages (organization_id, thread_id, role, status, parts, model, provider_slug, idempotency_key)
  values (t.organization_id, t.id, 'user', 'complete', jsonb_build_array(jsonb_build_object('type', 'text', 'text', args->>'content')),
          m.id, m.provider_slug, key)
  returning * into sent;
  insert into app.thread_messages (organization_id, thread_id, role, status, model, provider_slug, reply_to, max_output_tokens)
  values (t.organization_id, t.id, 'assistant', 'pending', m.id, m.provider_slug, sent.id, nullif(output_tokens, 0))
  returning * into reply;
  update app.threads set generation_status = 'streaming', last_message_id = reply.id, updated_at = app.now()
   where organization_id = t.organization_id and id = t.id
  returning * into t;
  perform app.enqueue('generate_reply', jsonb_build_object('organizationId', t.organization_id, 'messageId', reply.id),
                      'reply:' || reply.id);
  return app.send_json(t, sent, reply.id);
end $$;

create or replace function api.thread_generation(args jsonb) returns jsonb language plpgsql stable as $$
declare
  t app.threads := app.thread_visible(args->>'threadId', args->>'id');
begin
  return jsonb_build_object('status', t.generation_status, 'lastMessageId', t.last_message_id);
end $$;

-- Stops the turn, also while it is still queued: the answer keeps what had arrived,
-- the thread settles idle, and the worker stops at its next progress write.
create or replace function api.thread_generation_stop(args jsonb) returns jsonb language plpgsql as $$
declare
  t app.threads := app.thread_visible(args->>'threadId', args->>'id');
begin
  select * into t from app.threads where organization_id = t.organization_id and id = t.id for update;
  if t.generation_status = 'streaming' then
    update app.thread_messages set status = 'stopped', finish_reason = 'stopped', updated_at = app.now()
     where organization_id = t.organization_id and id = t.last_message_id and status in ('pending', 'streaming');
    update app.threads set generation_status = 'idle', updated_at = app.now()
     where organization_id = t.organization_id and id = t.id
    returning * into t;
  end if;
  return jsonb_build_object('status', t.generation_status, 'lastMessageId', t.last_message_id);
end $$;

-- A thread's messages, newest first.
create or replace function api.thread_messages_list(args jsonb) returns jsonb language plpgsql stable as $$
declare
  t app.threads := app.thread_visible(args->>'threadId', args->>'id');
  page_size integer := app.page_size(args->>'limit', 'page.messages.maxSize');
  filters jsonb := jsonb_build_object('threadId', t.id);
  after_seq bigint := coalesce((app.cursor_read(args->>'cursor', 'thread_messages', filters)->>0)::bigint, 9223372036854775807);
  rows jsonb;
  positions jsonb[];
begin
  select jsonb_agg(app.message_json(page.m) order by (page.m).seq desc),
         array_agg(jsonb_build_array((page.m).seq) order by (page.m).seq desc)
    into rows, positions
    from (select m from app.thread_messages m
           where m.organization_id = t.organization_id and m.thread_id = t.id and m.seq < after_seq
           order by m.seq desc limit page_size + 1) page;
  return app.keyset_page('page', 'thread_messages', filters, page_size, rows, positions) - 'cursor';
end $$;

create or replace function api.thread_message_get(args jsonb) returns jsonb language plpgsql stable as $$
declare
  t app.threads := app.thread_visible(args->>'threadId', args->>'id');
  m app.thread_messages;
begin
  select * into m from app.thread_messages
   where organization_id = t.organization_id and thread_id = t.id and id = app.as_uuid(args->>'messageId');
  if m.id is null then
    perform app.fail('NOT_FOUND', 404, 'Message not found.');
  end if;
  return app.message_json(m);
end $$;

grant execute on function app.token_estimate, app.message_text, app.thread_json, app.message_json, app.thread_path,
  app.thread_visible, api.thread_create, api.threads_list, app.chat_model, app.send_json, api.thread_send,
  api.thread_generation, api.thread_generation_stop, api.thread_messages_list, api.thread_message_get to api;
