-- Keyset cursors: opaque, signed, bound to the list, the organization, the caller
-- and the list's filters, so a cursor from another list, tenant or filter is refused.
--
-- SECURITY DEFINER: the signing key lives in app.deployment_secrets, which the
-- request role must never read.

create or replace function app.base64url(data bytea) returns text language sql immutable as $$
  select rtrim(translate(replace(encode(data, 'base64'), E'\n', ''), '+/', '-_'), '=')
$$;

create or replace function app.base64url_decode(data text) returns bytea language sql immutable as $$
  select decode(rpad(translate(data, '-_', '+/'), ((length(data) + 3) / 4) * 4, '='), 'base64')
$$;

-- position: the sort key of the last row served, as JSON.
create or replace function app.cursor_issue(list text, filters jsonb, at_row jsonb) returns text
language plpgsql stable security definer set search_path = pg_catalog, app as $$
declare
  payload bytea := convert_to(jsonb_build_object(
    'l', list, 'o', app.org_id(), 'u', app.user_id(), 'f', filters, 'p', at_row)::text, 'UTF8');
  signing_key bytea := (select value from app.deployment_secrets where name = 'cursor_signing_key');
begin
  return app.base64url(payload) || '.' || app.base64url(public.hmac(payload, signing_key, 'sha256'));
end $$;

-- Returns the position a cursor carries, or refuses it with 400 INVALID_CURSOR.
-- The empty string is the end-of-list marker and is never a valid request cursor.
create or replace function app.cursor_read(cursor text, list text, filters jsonb) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, app as $$
declare
  parts text[];
  payload bytea;
  claims jsonb;
  signing_key bytea := (select value from app.deployment_secrets where name = 'cursor_signing_key');
begin
  if cursor is null then
    return null;
  end if;
  if cursor = '' then
    perform app.fail('INVALID_QUERY', 400,
      'The empty cursor marks the last page; omit cursor to start from the first page.',
      jsonb_build_object('issues', jsonb_build_array(jsonb_build_object('path', 'cursor', 'message', 'empty cursor'))));
  end if;
  begin
    parts := string_to_array(cursor, '.');
    if array_length(parts, 1) <> 2 then
      raise exception 'malformed';
    end if;
    payload := app.base64url_decode(parts[1]);
    if app.base64url(public.hmac(payload, signing_key, 'sha256')) <> parts[2] then
      raise exception 'bad signature';
    end if;
    claims := convert_from(payload, 'UTF8')::jsonb;
  exception when others then
    claims := null;
  end;
  if claims is null
     or claims->>'l' is distinct from list
     or claims->>'o' is distinct from app.org_id()::text
     or claims->>'u' is distinct from app.user_id()::text
     or claims->'f' is distinct from filters then
    perform app.fail('INVALID_CURSOR', 400,
      'The cursor is not valid for this list; restart from the first page.');
  end if;
  return claims->'p';
end $$;

-- Lists ordered newest first by (created_at, id) share these. A page resumes just
-- below the cursor's row; without a cursor it starts above every row, so the keyset
-- condition is always an index range, also in a generic plan.
create or replace function app.keyset_resume(cursor text, list text, filters jsonb,
  out after_created timestamptz, out after_id uuid) language plpgsql stable as $$
declare
  position jsonb := app.cursor_read(cursor, list, filters);
begin
  if position is null then
    after_created := 'infinity';
    after_id := 'ffffffff-ffff-ffff-ffff-ffffffffffff';
  else
    after_created := timestamptz 'epoch' + (position->>0)::bigint * interval '1 microsecond';
    after_id := (position->>1)::uuid;
  end if;
end $$;

-- A page's size: the requested limit (page.defaultSize when absent) clamped at the
-- list's ceiling, a limit of db/limits.json. numeric first: a limit beyond the
-- integer range is clamped like any other.
drop function if exists app.page_size(text, integer);
create or replace function app.page_size(requested text, ceiling text) returns integer language plpgsql stable as $$
begin
  return least(coalesce(requested::numeric, app.limit('page.defaultSize')), app.limit(ceiling))::integer;
end $$;

create or replace function app.keyset_position(created_at timestamptz, id uuid) returns jsonb language sql immutable as $$
  select jsonb_build_array((extract(epoch from created_at) * 1000000)::bigint, id)
$$;

-- The response of a keyset page: rows under their collection name and, when another
-- page follows, continueCursor (and `cursor`, its deprecated twin) resuming after
-- next_position, the position of the last row served.
create or replace function app.keyset_reply(collection text, list text, filters jsonb, rows jsonb, next_position jsonb)
returns jsonb language plpgsql stable as $$
declare
  next_cursor text;
begin
  if next_position is not null then
    next_cursor := app.cursor_issue(list, filters, next_position);
    return jsonb_build_object(collection, coalesce(rows, '[]'), 'isDone', false,
                              'continueCursor', next_cursor, 'cursor', next_cursor);
  end if;
  return jsonb_build_object(collection, coalesce(rows, '[]'), 'isDone', true, 'continueCursor', '');
end $$;

-- The one keyset page of every list: a list resumes with app.keyset_resume, selects
-- at most page_size + 1 candidate rows below the resume point in its order, and hands
-- their bodies and positions here, so it writes only its filter and its order. The
-- first page_size are served; a further candidate means another page follows. rows
-- may stop short of the candidates past the page (a page that ends early by size).
-- (GET /projects, the hottest list, computes the same in one pass and answers with
-- app.keyset_reply directly: trimming the extra row here costs it measurably.)
drop function if exists app.keyset_page(text, jsonb, boolean, text, jsonb, jsonb);
create or replace function app.keyset_page(collection text, list text, filters jsonb, page_size integer,
  rows jsonb, positions jsonb[]) returns jsonb language plpgsql stable as $$
begin
  if coalesce(cardinality(positions), 0) > page_size then
    return app.keyset_reply(collection, list, filters,
      case when jsonb_array_length(rows) > page_size then rows - page_size else rows end, positions[page_size]);
  end if;
  return app.keyset_reply(collection, list, filters, rows, null);
end $$;

grant execute on function app.base64url, app.base64url_decode, app.cursor_issue, app.cursor_read, app.keyset_resume,
  app.page_size, app.keyset_position, app.keyset_reply, app.keyset_page to api;
