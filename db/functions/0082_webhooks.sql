-- Webhook deliveries: the keyless POST to a trigger's URL. One statement decides a
-- delivery and, when it is accepted, writes the delivery and its run together, so an
-- accepted delivery always has its run and a refused one leaves nothing behind.
--
-- Refusals are returned, not raised: the sender's token taken before the token check
-- must stay taken when the answer is 404, or guessing tokens would cost nothing.

create or replace function app.webhook_refusal(code text, status integer, message text, data jsonb default '{}')
returns jsonb language sql immutable as $$
  select jsonb_build_object('error', jsonb_build_object('code', code, 'status', status, 'message', message,
                                                        'data', coalesce(data, '{}'::jsonb)))
$$;

-- Every token problem looks the same: unknown, disabled, of another kind, mistyped.
create or replace function app.webhook_not_found() returns jsonb language sql immutable as $$
  select app.webhook_refusal('NOT_FOUND', 404, 'Not found.')
$$;

-- budget: the one refusing, for the server's metrics; never sent.
drop function if exists app.webhook_rate_limited(integer);
create or replace function app.webhook_rate_limited(wait integer, budget text) returns jsonb language sql immutable as $$
  select jsonb_build_object('error', jsonb_build_object('code', 'RATE_LIMITED', 'status', 429,
    'message', 'Rate limit reached; retry after the indicated number of seconds.', 'data', '{}'::jsonb,
    'retryAfter', wait, 'budget', budget))
$$;

-- The whole seconds until a bucket holds a token, read without locking it (0: it does).
create or replace function app.bucket_peek(spec jsonb) returns integer language plpgsql stable as $$
declare
  wait integer;
begin
  select app.bucket_wait(app.bucket_level(r.tokens, r.refreshed_at, app.now(), (spec->>'perMinute')::double precision,
                                          (spec->>'burst')::double precision),
                         (spec->>'perMinute')::double precision)
    into wait
    from app.rate_buckets r where r.bucket = spec->>'key';
  return greatest(coalesce(wait, 0), 0);
end $$;

-- A delivery's answer, once the buckets it draws on have paid for it; 429 instead when
-- one of them has run out meanwhile (a refused delivery costs nothing).
create or replace function app.webhook_charged(buckets jsonb, outcome jsonb) returns jsonb language plpgsql as $$
declare
  wait integer := app.take_tokens(buckets);
begin
  if wait > 0 then
    return app.webhook_rate_limited(wait, app.refused_budget());
  end if;
  return outcome;
end $$;

-- args: tokenHash (hex SHA-256 of the URL token), projectId (the project URL's id as
-- sent, null on the organization URL), deliveryId (the Idempotency-Key header),
-- bodyHash (hex SHA-256 of the body bytes), payload (the body as JSON, or its text),
-- senderBucket {key, perMinute, burst}, triggerBudget {perMinute, burst}, validated
-- {automationId, version, issues} (the server's check of the run input against that
-- version's inputs schema).
--
-- Answers {status, body}, {error}, or {revalidate: {automationId, version, inputs}}
-- when the server has not checked the input against the deployed version yet (then
-- nothing is charged, and the server calls again with its verdict).
--
-- The budgets are checked where the rules put them (the sender's before the token,
-- the trigger's after it) with plain reads, and charged at the end, after the writes:
-- the bucket rows every delivery of a sender or a trigger shares are locked for the
-- last moments of the transaction only.
--
-- SECURITY DEFINER: the caller-less path of webhooks. No caller exists until the
-- token names a trigger, and the trigger's organization is the only one it reaches.
create or replace function app.webhook_deliver(args jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  at timestamptz := app.now();
  wait integer;
  sender jsonb := args->'senderBucket';
  buckets jsonb;
  t app.automation_triggers;
  a app.automations;
  installed uuid[];
  project app.projects;
  delivery_scope uuid := '00000000-0000-0000-0000-000000000000';
  delivery text := args->>'deliveryId';
  body_digest bytea := decode(args->>'bodyHash', 'hex');
  validated jsonb := args->'validated';
  seen record;
  new_run uuid := gen_random_uuid();
  accepted bigint;
begin
  wait := app.bucket_peek(sender);
  if wait > 0 then
    return app.webhook_rate_limited(wait, 'webhookSender');
  end if;

  select * into t from app.automation_triggers
   where token_hash = decode(args->>'tokenHash', 'hex') and kind = 'webhook' and enabled;
  if t.id is null then
    return app.webhook_charged(jsonb_build_array(sender), app.webhook_not_found());
  end if;
  select * into a from app.automations where organization_id = t.organization_id and id = t.automation_id;

  -- The input is checked by the server against the deployed version's schema; a
  -- version it has not checked against is handed back before anything is spent.
  if a.deployed_version is not null
     and (validated is null or validated->>'automationId' is distinct from a.id::text
          or (validated->>'version')::integer is distinct from a.deployed_version) then
    return jsonb_build_object('revalidate', jsonb_build_object(
      'automationId', a.id, 'version', a.deployed_version,
      'inputs', (select v.document->'inputs' from app.automation_versions v
                  where v.organization_id = a.organization_id and v.automation_id = a.id
                    and v.version = a.deployed_version)));
  end if;

  buckets := jsonb_build_array(sender, jsonb_build_object(
    'key', 'webhook-trigger:' || t.id,
    'perMinute', args->'triggerBudget'->'perMinute', 'burst', args->'triggerBudget'->'burst'));
  wait := app.bucket_peek(buckets->1);
  if wait > 0 then
    return app.webhook_rate_limited(wait, 'webhookTrigger');
  end if;

  select coalesce(array_agg(i.project_id), '{}') into installed from app.automation_installs i
   where i.organization_id = a.organization_id and i.automation_id = a.id;
  if args->>'projectId' is null then
    if cardinality(installed) > 0 then
      return app.webhook_charged(buckets, app.webhook_refusal('AUTOMATION_PROJECT_SCOPE_REQUIRED', 409,
        'This automation is installed in projects; deliver to a project''s webhook URL.'));
    end if;
  else
    -- Missing, archived and not installed read alike, and the automation goes unnamed.
    select * into project from app.projects p
     where p.organization_id = t.organization_id and p.id = app.as_uuid(args->>'projectId');
    if project.id is null or project.archived_at is not null or not project.id = any (installed) then
      return app.webhook_charged(buckets,
        app.webhook_refusal('AUTOMATION_PROJECT_FORBIDDEN', 403, 'Deliveries to this project are not accepted.'));
    end if;
    delivery_scope := project.id;
  end if;

  if a.deployed_version is null then
    -- Not remembered for deduplication: the same delivery is accepted once deployed.
    perform app.trigger_skip(t, 'not_deployed', at);
    return app.webhook_charged(buckets,
      app.webhook_refusal('AUTOMATION_NOT_DEPLOYED', 409, 'The automation has no deployed version.'));
  end if;

  if delivery is not null then
    for seen in
      select d.scope, d.run_id from app.webhook_deliveries d
       where d.trigger_id = t.id and d.delivery_id = delivery and d.received_at >= t.bound_at
         and d.received_at > at - make_interval(secs => app.limit('webhook.deliveryIdWindowSeconds'))
    loop
      if seen.scope = delivery_scope then
        return app.webhook_charged(buckets,
          jsonb_build_object('status', 202, 'body', jsonb_build_object('runId', seen.run_id, 'duplicate', true)));
      end if;
      if (seen.scope = '00000000-0000-0000-0000-000000000000') <> (delivery_scope = '00000000-0000-0000-0000-000000000000') then
        return app.webhook_charged(buckets, app.webhook_refusal('AUTOMATION_DELIVERY_SCOPE_MISMATCH', 409,
          'This delivery id was first used at another webhook URL of the automation.'));
      end if;
    end loop;
  else
    -- Identical bytes within the window are one delivery; the lock makes two at once
    -- agree on which was first.
    perform pg_advisory_xact_lock(hashtextextended(t.id::text || delivery_scope::text || encode(body_digest, 'hex'), 0));
    select d.run_id into seen from app.webhook_deliveries d
     where d.trigger_id = t.id and d.scope = delivery_scope and d.delivery_id is null and d.body_hash = body_digest
       and d.received_at >= t.bound_at and d.received_at > at - make_interval(secs => app.limit('webhook.bodyWindowSeconds'))
     order by d.received_at desc limit 1;
    if found then
      return app.webhook_charged(buckets,
        jsonb_build_object('status', 202, 'body', jsonb_build_object('runId', seen.run_id, 'duplicate', true)));
    end if;
  end if;

  if jsonb_array_length(coalesce(validated->'issues', '[]')) > 0 then
    return app.webhook_charged(buckets, app.webhook_refusal('AUTOMATION_INPUT_INVALID', 400,
      'The delivery does not match the automation''s inputs.', jsonb_build_object('issues', validated->'issues')));
  end if;

  -- Accepted: the delivery, its run and its job, then the budgets, the rows every
  -- delivery of this sender and trigger shares, locked last so they are held only
  -- while this transaction commits. A budget that ran out since
  -- it was read undoes the delivery: a refused delivery costs nothing.
  begin
    insert into app.webhook_deliveries (organization_id, trigger_id, scope, delivery_id, body_hash, run_id, received_at)
    values (t.organization_id, t.id, delivery_scope, delivery, body_digest, new_run, at)
    on conflict (trigger_id, scope, delivery_id) where delivery_id is not null do update
       set body_hash = excluded.body_hash, run_id = excluded.run_id, received_at = excluded.received_at
     -- An id remembered past its window is a new delivery, whether or not the sweep
     -- has forgotten it yet.
     where webhook_deliveries.received_at <= excluded.received_at
                                            - make_interval(secs => app.limit('webhook.deliveryIdWindowSeconds'))
        -- or one remembered for an earlier binding of the trigger: each binding
        -- deduplicates its own deliveries
        or webhook_deliveries.received_at < t.bound_at
    returning id into accepted;
    if accepted is null then
      -- The same delivery id was accepted concurrently: answer with its run.
      select d.run_id into new_run from app.webhook_deliveries d
       where d.trigger_id = t.id and d.scope = delivery_scope and d.delivery_id = delivery;
      return app.webhook_charged(buckets,
        jsonb_build_object('status', 202, 'body', jsonb_build_object('runId', new_run, 'duplicate', true)));
    end if;
    perform app.trigger_start_run(t, a, project.id, jsonb_build_object('trigger', 'webhook', 'payload', args->'payload'),
                                  'webhook', new_run, at);
    wait := app.take_tokens(buckets);
    if wait > 0 then
      -- Rolling the delivery back forgets the refused bucket: its budget rides along.
      raise exception using errcode = 'TL429', message = wait::text, detail = app.refused_budget();
    end if;
  exception when sqlstate 'TL429' then
    declare
      budget text;
    begin
      get stacked diagnostics budget = pg_exception_detail;
      return app.webhook_rate_limited(sqlerrm::integer, budget);
    end;
  end;
  return jsonb_build_object('status', 202, 'body', jsonb_build_object('runId', new_run));
end $$;

-- Deliveries past both deduplication windows are forgotten.
create or replace function app.webhook_deliveries_sweep() returns integer language sql as $$
  with gone as (
    delete from app.webhook_deliveries
     where received_at < app.now() - make_interval(secs => greatest(app.limit('webhook.deliveryIdWindowSeconds'),
                                                                    app.limit('webhook.bodyWindowSeconds')))
        or (delivery_id is null and received_at < app.now() - make_interval(secs => app.limit('webhook.bodyWindowSeconds')))
    returning 1
  ) select count(*)::integer from gone
$$;

revoke execute on function app.webhook_deliver(jsonb) from public;
grant execute on function app.webhook_deliver(jsonb) to api;
