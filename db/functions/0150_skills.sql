-- Skills (docs/skills.md): markdown instructions saved by slug, personal or shared
-- with the whole organization. The route checks shapes and the body's size
-- (server/routes/skills.ts); the policies of db/policies/skills.sql decide which rows
-- exist for the caller and who writes them, the checks below name the refusals.
--
-- Addressing: a path's slug names the caller's personal skill of that slug when there
-- is one, else the organization's; `visibility` names one of the two explicitly.

-- Sharing a skill needs the skillPublish capability (app.can_publish_skills, in
-- db/functions/0010_identity.sql, the rule /me reports too).
create or replace function app.skill_publisher() returns void language plpgsql stable as $$
begin
  if not app.can_publish_skills() then
    perform app.fail('SKILL_PUBLISH_FORBIDDEN', 403,
      'Sharing a skill with the organization needs the skillPublish capability: the organization''s skill sharing policy '
      || 'admits your role, or you hold a live skills.publish grant.',
      jsonb_build_object('capability', 'skillPublish'));
  end if;
end $$;

create or replace function app.skill_summary_json(s app.skills) returns jsonb language sql stable as $$
  select jsonb_build_object('slug', s.slug, 'visibility', s.visibility, 'name', s.name, 'description', s.description,
    'size', octet_length(s.content), 'createdBy', s.created_by, 'updatedBy', s.updated_by,
    'createdAt', app.ms(s.created_at), 'updatedAt', app.ms(s.updated_at))
$$;

create or replace function app.skill_json(s app.skills) returns jsonb language sql stable as $$
  select app.skill_summary_json(s) || jsonb_build_object('content', s.content)
$$;

-- The skill a path names, as the caller sees it: the personal one first unless
-- `visibility` picks; 404 SKILL_NOT_FOUND when there is none (also for a slug that
-- cannot be one, and for another member's personal skill, which no policy shows).
create or replace function app.skill_by_slug(wanted_slug text, wanted_visibility text) returns app.skills
language plpgsql stable as $$
declare
  s app.skills;
begin
  select * into s from app.skills k
   where k.organization_id = app.org_id() and k.slug = wanted_slug
     and (wanted_visibility is null or k.visibility = wanted_visibility)
   order by k.visibility = 'personal' desc
   limit 1;
  if s.id is null then
    perform app.fail('SKILL_NOT_FOUND', 404, 'Skill not found.', jsonb_build_object('slug', wanted_slug));
  end if;
  return s;
end $$;

create or replace function api.skills_list(args jsonb) returns jsonb language plpgsql stable as $$
begin
  return jsonb_build_object('skills', (
    select coalesce(jsonb_agg(app.skill_summary_json(s) order by s.slug, s.visibility = 'organization', s.id), '[]')
      from app.skills s
     where s.organization_id = app.org_id()));
end $$;

create or replace function api.skill_get(args jsonb) returns jsonb language plpgsql stable as $$
begin
  return jsonb_build_object('skill', app.skill_json(app.skill_by_slug(args->>'slug', args->>'visibility')));
end $$;

-- PUT: creates the skill of (visibility, slug) or replaces its name, description and
-- content. An organization skill needs skillPublish, to create and to replace alike.
-- Answers {created, skill}: 201 when created, 200 when replaced.
create or replace function api.skill_save(args jsonb) returns jsonb language plpgsql as $$
declare
  skill_slug text := args->>'slug';
  skill_visibility text := coalesce(args->>'visibility', 'personal');
  skill_name text := app.clean_identifier(args->>'name');
  skill_description text := coalesce(args->>'description', '');
  skill_content text := args->>'content';
  s app.skills;
  saved uuid;
  created boolean;
begin
  if skill_slug is null or skill_slug !~ '^[a-z0-9][a-z0-9-]{0,62}$' then
    perform app.invalid_body('slug',
      'the path''s slug must be 1 to 63 lowercase letters, digits or hyphens, starting with a letter or digit');
  end if;
  if skill_visibility = 'organization' then
    perform app.skill_publisher();
  end if;
  if skill_name is null then
    perform app.invalid_body('name', 'must not be blank');
  end if;

  -- xmax is 0 on a row this statement inserted, the locking transaction's id on one
  -- it updated: created or replaced, told apart without a second look.
  if skill_visibility = 'personal' then
    insert into app.skills as k (organization_id, slug, visibility, owner_id, name, description, content, created_by, updated_by)
    values (app.org_id(), skill_slug, 'personal', app.user_id(), skill_name, skill_description, skill_content, app.user_id(), app.user_id())
    on conflict (organization_id, owner_id, slug) where visibility = 'personal'
    do update set name = excluded.name, description = excluded.description, content = excluded.content,
                  updated_by = excluded.updated_by, updated_at = app.now()
    returning k.id, k.xmax = 0 into saved, created;
    select * into s from app.skills k where k.organization_id = app.org_id() and k.id = saved;
  else
    insert into app.skills as k (organization_id, slug, visibility, owner_id, name, description, content, created_by, updated_by)
    values (app.org_id(), skill_slug, 'organization', null, skill_name, skill_description, skill_content, app.user_id(), app.user_id())
    on conflict (organization_id, slug) where visibility = 'organization'
    do update set name = excluded.name, description = excluded.description, content = excluded.content,
                  updated_by = excluded.updated_by, updated_at = app.now()
    returning k.id, k.xmax = 0 into saved, created;
    select * into s from app.skills k where k.organization_id = app.org_id() and k.id = saved;
    -- Who shares what with the organization is governance: audited.
    perform app.audit(case when created then 'skill.published' else 'skill.updated' end, 'skill', s.id::text,
      jsonb_build_object('slug', s.slug, 'name', s.name, 'size', octet_length(s.content)));
  end if;
  return jsonb_build_object('created', created, 'skill', app.skill_json(s));
end $$;

-- The personal skill of the slug first, unless `visibility` picks; an organization
-- skill needs skillPublish (403 SKILL_PUBLISH_FORBIDDEN), a personal one only its owner.
create or replace function api.skill_delete(args jsonb) returns jsonb language plpgsql as $$
declare
  s app.skills := app.skill_by_slug(args->>'slug', args->>'visibility');
begin
  if s.visibility = 'organization' then
    perform app.skill_publisher();
  end if;
  delete from app.skills where organization_id = s.organization_id and id = s.id;
  if s.visibility = 'organization' then
    perform app.audit('skill.deleted', 'skill', s.id::text, jsonb_build_object('slug', s.slug, 'name', s.name));
  end if;
  return null;
end $$;

grant execute on function app.can_publish_skills, app.skill_publisher, app.skill_summary_json, app.skill_json,
  app.skill_by_slug, api.skills_list, api.skill_get, api.skill_save, api.skill_delete to api;
