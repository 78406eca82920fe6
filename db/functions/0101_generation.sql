-- The worker's side of a chat turn (jobs/tasks/generate-reply.ts): take the pending
-- answer, write its text as it streams, settle it. Owner-only: nothing here is granted
-- to the request role. Every write is conditional on the answer still being the
-- worker's (pending or streaming), so a turn stopped meanwhile stays stopped.

-- Starts an answer: marks it streaming and returns what the provider needs (the
-- model with its provider's address and key, the output ceiling, the conversation up
-- to the message it answers); null when the answer is no longer waiting for a worker.
-- A worker that died mid-stream leaves it streaming: its job's retry starts over.
create or replace function app.worker_generation_start(organization uuid, message uuid) returns jsonb language plpgsql as $$
declare
  reply app.thread_messages;
  asked app.thread_messages;
begin
  update app.thread_messages set status = 'streaming', parts = '[]', updated_at = app.now()
   where organization_id = organization and id = message and role = 'assistant' and status in ('pending', 'streaming')
  returning * into reply;
  if reply.id is null then
    return null;
  end if;
  select * into asked from app.thread_messages where organization_id = organization and id = reply.reply_to;
  return jsonb_build_object(
    -- A project thread's assistant may use the project's files (app.worker_thread_tool).
    'projectId', (select t.project_id from app.threads t where t.organization_id = organization and t.id = reply.thread_id),
    'model', (select jsonb_build_object('id', c.id, 'providerSlug', c.provider_slug, 'maxOutputTokens', c.max_output_tokens,
                                        'baseUrl', p.base_url, 'apiKey', p.api_key)
                from app.model_catalog(organization) c
                left join app.model_providers p on p.organization_id = organization and p.slug = c.provider_slug
               where c.id = reply.model and c.provider_slug = reply.provider_slug),
    'maxOutputTokens', reply.max_output_tokens,
    'messages', coalesce((select jsonb_agg(jsonb_build_object('role', m.role, 'content', app.message_text(m)) order by m.seq)
                            from app.thread_messages m
                           where m.organization_id = organization and m.thread_id = reply.thread_id and m.seq <= asked.seq
                             and (m.role = 'user' or m.status = 'complete')), '[]'));
end $$;

-- The text so far. False when the turn was stopped: the worker stops the provider.
create or replace function app.worker_generation_progress(organization uuid, message uuid, answer text) returns boolean
language sql as $$
  with written as (
    update app.thread_messages
       set parts = jsonb_build_array(jsonb_build_object('type', 'text', 'text', answer)), updated_at = app.now()
     where organization_id = organization and id = message and status = 'streaming'
    returning 1
  ) select exists (select 1 from written)
$$;

-- Settles an answer: complete (finishReason stop or length) or failed (errorCode and
-- error, with whatever text arrived), and the thread idle again when this was its
-- turn. A turn stopped meanwhile is left as it is.
create or replace function app.worker_generation_settle(organization uuid, message uuid, outcome jsonb) returns void
language plpgsql as $$
declare
  reply app.thread_messages;
begin
  update app.thread_messages
     set status = case when outcome->>'errorCode' is null then 'complete' else 'failed' end,
         parts = case when coalesce(outcome->>'text', '') = '' then '[]'::jsonb
                      else jsonb_build_array(jsonb_build_object('type', 'text', 'text', outcome->>'text')) end,
         finish_reason = outcome->>'finishReason', error_code = outcome->>'errorCode', error = outcome->>'error',
         updated_at = app.now()
   where organization_id = organization and id = message and status in ('pending', 'streaming')
  returning * into reply;
  if reply.id is not null then
    update app.threads set generation_status = 'idle', updated_at = app.now()
     where organization_id = organization and id = reply.thread_id and last_message_id = reply.id;
  end if;
end $$;
