-- Governance grants, the app's session routes (server/routes/governance.ts): owners
-- and admins grant a member a competence with the evidence for it, read a member's
-- grants, and revoke them. A revoked grant is never deleted: its row stays as the
-- audit trail, beside the audit log's own rows.
--
-- Competences carry the vendor prefix on the wire (tale:notifications.export) and are
-- stored bare, as the seed file stores them (db/functions/0030_operators.sql). When a
-- member is removed or disabled, the memberships trigger of that file revokes their
-- live grants; /me reads live grants through app.live_competences, so every change
-- here shows in the capabilities at once.

-- The competences a grant may name, as the wire spells them.
create or replace function app.competence_names() returns text[] language sql immutable as $$
  select array['tale:notifications.export', 'tale:skills.publish', 'tale:rest.act-as']
$$;

-- One grant on the wire. Live as app.live_competences counts it: neither revoked nor
-- expired.
create or replace function app.competence_grant_json(g app.competence_grants) returns jsonb language sql stable as $$
  select jsonb_build_object(
    'recordId', g.id, 'userId', g.user_id, 'competence', 'tale:' || g.competence, 'evidence', g.evidence,
    'expiresAt', app.ms(g.expires_at), 'grantedBy', g.granted_by, 'createdAt', app.ms(g.created_at),
    'revokedAt', app.ms(g.revoked_at), 'revokedBy', g.revoked_by,
    'live', g.revoked_at is null and (g.expires_at is null or g.expires_at > app.now()))
$$;

-- Reads too need Owner or Admin: a grant's evidence may name what a member did or
-- failed at, which is no business of the other members. (A holder's own live grants
-- show in /me as capabilities.)
create or replace function app.require_governance() returns void language plpgsql as $$
begin
  if not coalesce(app.is_admin(), false) then
    perform app.fail('COMPETENCE_FORBIDDEN', 403, 'Only owners and admins manage competence grants.',
      jsonb_build_object('role', app.role()));
  end if;
end $$;

-- POST /api/app/governance/competences: {userId, competence, evidence, expiresAt?}.
-- The shape (a uuid, a non-blank bounded evidence, a whole-millisecond expiry in
-- range) is checked by the server; the rules that need the clock, the roster and the
-- existing grants are here.
create or replace function api.competence_grant_create(args jsonb) returns jsonb language plpgsql as $$
declare
  wire text := args->>'competence';
  bare text := case when wire = any (app.competence_names()) then substr(wire, length('tale:') + 1) end;
  until_at timestamptz := app.from_ms((args->>'expiresAt')::bigint);
  holder uuid := app.as_uuid(args->>'userId');
  evidence text := app.trim_space(args->>'evidence');
  live app.competence_grants;
  granted uuid;
begin
  perform app.require_governance();
  if bare is null then
    -- The bare names the seed file accepts are refused here: on this wire a name
    -- always carries the prefix, so one spelling reaches clients and the audit.
    perform app.fail('COMPETENCE_CAPABILITY_UNKNOWN', 400, 'Unknown competence; name one of data.competences.',
      jsonb_build_object('competence', wire, 'competences', to_jsonb(app.competence_names())));
  end if;
  -- An expiry at this very instant would be born expired.
  if until_at is not null and until_at <= app.now() then
    perform app.fail('COMPETENCE_EXPIRY_IN_PAST', 400, 'expiresAt must lie in the future.',
      jsonb_build_object('expiresAt', app.ms(until_at), 'now', app.ms(app.now())));
  end if;
  -- The roster of the selected organization is all the caller's policies show, so a
  -- person of another organization is simply not a member here.
  if holder is null or not exists (select 1 from app.memberships m
                                    where m.organization_id = app.org_id() and m.user_id = holder and not m.disabled) then
    perform app.fail('COMPETENCE_USER_NOT_MEMBER', 400, 'The user is not an active member of this organization.',
      jsonb_build_object('userId', args->>'userId'));
  end if;

  -- Two grants of one competence to one member at once: the second waits for the
  -- first and then sees it (no unique index can say "live", which depends on the clock).
  perform pg_advisory_xact_lock(hashtextextended('competence-grant:' || app.org_id() || ':' || holder || ':' || bare, 0));
  select * into live from app.competence_grants g
   where g.organization_id = app.org_id() and g.user_id = holder and g.competence = bare
     and g.revoked_at is null and (g.expires_at is null or g.expires_at > app.now())
   order by g.created_at desc limit 1;
  if live.id is not null then
    perform app.fail('COMPETENCE_ALREADY_GRANTED', 409, 'The member already holds a live grant of this competence; revoke it first.',
      jsonb_build_object('recordId', live.id, 'userId', holder, 'competence', wire, 'expiresAt', app.ms(live.expires_at)));
  end if;

  insert into app.competence_grants (organization_id, user_id, competence, expires_at, granted_by, evidence)
  values (app.org_id(), holder, bare, until_at, app.user_id(), evidence)
  returning id into granted;
  perform app.audit('competence.granted', 'competence_grant', granted::text,
    jsonb_build_object('userId', holder, 'competence', bare, 'expiresAt', app.ms(until_at), 'evidence', evidence));
  return jsonb_build_object('recordId', granted);
end $$;

-- GET /api/app/governance/competences?userId=: every grant the member ever held in the
-- organization, newest first, revoked and expired ones included (the audit trail). A
-- person who is no longer a member still has their past grants listed; anyone else
-- has none, which is an empty list rather than a refusal.
create or replace function api.competence_grants_list(args jsonb) returns jsonb language plpgsql as $$
declare
  holder uuid := app.as_uuid(args->>'userId');
begin
  perform app.require_governance();
  return jsonb_build_object('grants', (
    select coalesce(jsonb_agg(app.competence_grant_json(g) order by g.created_at desc, g.id desc), '[]')
      from app.competence_grants g
     where g.organization_id = app.org_id() and g.user_id = holder));
end $$;

-- POST /api/app/governance/competences/{recordId}/revoke. Idempotent: revoking a
-- revoked grant answers the first revocation and writes nothing, so a retried click
-- or a lost answer is harmless. An expired grant is revoked all the same (the record
-- then says that someone ended it, not only the clock).
create or replace function api.competence_grant_revoke(args jsonb) returns jsonb language plpgsql as $$
declare
  target uuid := app.as_uuid(args->>'recordId');
  g app.competence_grants;
begin
  perform app.require_governance();
  update app.competence_grants set revoked_at = app.now(), revoked_by = app.user_id()
   where organization_id = app.org_id() and id = target and revoked_at is null
  returning * into g;
  if g.id is not null then
    perform app.audit('competence.revoked', 'competence_grant', g.id::text,
      jsonb_build_object('userId', g.user_id, 'competence', g.competence, 'reason', 'revoked'));
  else
    select * into g from app.competence_grants c where c.organization_id = app.org_id() and c.id = target;
    if g.id is null then
      perform app.fail('NOT_FOUND', 404, 'No competence grant with that record id in this organization.');
    end if;
  end if;
  return jsonb_build_object('recordId', g.id, 'revokedAt', app.ms(g.revoked_at), 'revokedBy', g.revoked_by);
end $$;

grant execute on function app.competence_names, app.competence_grant_json, app.require_governance,
  api.competence_grant_create, api.competence_grants_list, api.competence_grant_revoke to api;
