-- The identity issuer's applications (SPEC "Identity issuer (OpenID Connect)"):
-- registration, secret rotation and status by an organization's owners and admins,
-- signed in to the app; and the two caller-less lookups the issuer makes for every
-- authorization, token and userinfo request (server/oidc).

-- A client as the routes answer it. Columns are named one by one: the request role
-- may not read the secret's hash.
create or replace function app.identity_client_json(org uuid, client_key text) returns jsonb language sql stable as $$
  select jsonb_build_object('client_id', c.client_id, 'key', c.key, 'name', c.name, 'redirectUri', c.redirect_uri,
    'organizationId', c.organization_id, 'disabled', c.disabled,
    'createdAt', app.ms(c.created_at), 'updatedAt', app.ms(c.updated_at))
    from app.identity_clients c where c.organization_id = org and c.key = client_key
$$;

-- A callback is one exact address: HTTPS, or plain HTTP only to this machine's
-- loopback (a developer's local app). No fragment, no credentials, no wildcard host.
create or replace function app.identity_callback_allowed(uri text) returns boolean language sql immutable as $$
  select length(uri) <= 2000
     and uri !~ '[[:space:][:cntrl:]#]'
     and (uri ~ '^https://([A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?(/[^#]*)?$'
          or uri ~* '^http://(localhost|127\.0\.0\.1|\[::1\])(:[0-9]{1,5})?(/[^#]*)?$')
$$;

-- Random bytes, base64url: a client secret (256 bits), or a client id (128 bits).
create or replace function app.identity_random(bytes integer) returns text language sql volatile as $$
  select app.base64url(public.gen_random_bytes(bytes))
$$;

create or replace function app.identity_require_admin() returns void language plpgsql stable as $$
begin
  if not app.is_admin() then
    perform app.fail('ROLE_FORBIDDEN', 403, 'Only owners and admins of the organization manage its applications.');
  end if;
end $$;

-- The client_id of the organization's client named by key, its row locked (the caller
-- changes it); 404 otherwise.
create or replace function app.identity_client_locked(client_key text) returns text
language plpgsql as $$
declare
  found text;
begin
  select c.client_id into found from app.identity_clients c
   where c.organization_id = app.org_id() and c.key = client_key for update;
  if found is null then
    perform app.fail('IDENTITY_CLIENT_NOT_FOUND', 404, 'The organization has no application with that key.',
      jsonb_build_object('key', client_key));
  end if;
  return found;
end $$;

-- POST /api/app/identity/clients: the first registration of a key creates the client
-- and shows its secret once (201); the same configuration again answers the client as
-- it is (200, no secret); a different name or callback for the key is refused (409),
-- so a repeated deployment script never changes an application by accident.
create or replace function api.identity_client_register(args jsonb) returns jsonb language plpgsql as $$
declare
  client_key text := args->>'key';
  client_name text := app.trim_space(args->>'name');
  callback text := args->>'redirectUri';
  secret text := app.identity_random(32);
  created text;
  existing record;
  differs jsonb;
begin
  perform app.identity_require_admin();
  if not app.identity_callback_allowed(callback) then
    perform app.fail('IDENTITY_CLIENT_CALLBACK_INVALID', 400,
      'redirectUri must be one exact https:// address (http:// only on localhost, 127.0.0.1 or [::1]), without a fragment.',
      jsonb_build_object('redirectUri', callback));
  end if;
  insert into app.identity_clients (organization_id, key, client_id, name, redirect_uri, secret_hash, created_by)
  values (app.org_id(), client_key, 'tale_' || app.identity_random(16), client_name, callback,
          sha256(convert_to(secret, 'UTF8')), app.user_id())
  on conflict (organization_id, key) do nothing
  returning client_id into created;
  if created is not null then
    perform app.audit('identity_client.registered', 'identity_client', created,
      jsonb_build_object('key', client_key, 'redirectUri', callback));
    return jsonb_build_object('created', true,
      'client', app.identity_client_json(app.org_id(), client_key) || jsonb_build_object('client_secret', secret));
  end if;

  select c.name, c.redirect_uri into existing from app.identity_clients c
   where c.organization_id = app.org_id() and c.key = client_key;
  differs := to_jsonb(array_remove(array[
    case when existing.redirect_uri <> callback then 'redirectUri' end,
    case when existing.name <> client_name then 'name' end], null));
  if jsonb_array_length(differs) > 0 then
    perform app.fail('IDENTITY_CLIENT_CONFLICT', 409,
      'An application with this key is registered with another configuration; it is not changed by registering again.',
      jsonb_build_object('key', client_key, 'fields', differs));
  end if;
  return jsonb_build_object('created', false, 'client', app.identity_client_json(app.org_id(), client_key));
end $$;

-- A new secret, shown once; the previous one stops working at once (only the new
-- hash is kept, and the issuer reads the client afresh at every request).
create or replace function api.identity_client_rotate_secret(args jsonb) returns jsonb language plpgsql as $$
declare
  client_key text := args->>'key';
  found text;
  secret text := app.identity_random(32);
begin
  perform app.identity_require_admin();
  found := app.identity_client_locked(client_key);
  update app.identity_clients set secret_hash = sha256(convert_to(secret, 'UTF8')), updated_at = app.now()
   where organization_id = app.org_id() and key = client_key;
  perform app.audit('identity_client.secret_rotated', 'identity_client', found, jsonb_build_object('key', client_key));
  return jsonb_build_object('client', app.identity_client_json(app.org_id(), client_key) || jsonb_build_object('client_secret', secret));
end $$;

-- Disables or restores a client. A disabled client is unknown to the issuer: no
-- authorization, no token, and its access tokens stop serving userinfo.
create or replace function api.identity_client_status(args jsonb) returns jsonb language plpgsql as $$
declare
  client_key text := args->>'key';
  wanted boolean := (args->>'disabled')::boolean;
  found text;
  changed boolean;
begin
  perform app.identity_require_admin();
  found := app.identity_client_locked(client_key);
  update app.identity_clients set disabled = wanted, updated_at = app.now()
   where organization_id = app.org_id() and key = client_key and disabled is distinct from wanted
  returning true into changed;
  if changed then
    perform app.audit(case when wanted then 'identity_client.disabled' else 'identity_client.restored' end,
      'identity_client', found, jsonb_build_object('key', client_key));
  end if;
  return jsonb_build_object('client', app.identity_client_json(app.org_id(), client_key));
end $$;

-- The issuer's view of a client, as oidc-provider's client metadata; null for an
-- unknown or disabled client. client_secret is the stored SHA-256 (hex): the issuer
-- compares the hash of what a client presents (server/oidc/provider.ts).
-- SECURITY DEFINER: the caller-less path. No person is signed in at the token and
-- userinfo endpoints, and no policy could admit a lookup by client id alone.
create or replace function app.issuer_client(wanted_client_id text) returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select jsonb_build_object('client_id', c.client_id, 'client_secret', encode(c.secret_hash, 'hex'),
           'client_name', c.name, 'redirect_uris', jsonb_build_array(c.redirect_uri),
           'grant_types', jsonb_build_array('authorization_code'), 'response_types', jsonb_build_array('code'),
           'token_endpoint_auth_method', 'client_secret_basic', 'id_token_signed_response_alg', 'RS256')
    from app.identity_clients c
   where c.client_id = wanted_client_id and not c.disabled
$$;

-- What the issuer may say about a person to a client, decided afresh at each
-- authorization, code exchange and userinfo read: the client is live, the person is
-- an active member of the client's one organization with a verified email, and the
-- organization's second-factor rule is met by the sign-in (mfa). Then
-- {claims, clientName, organizationName}; else {refused: <reason>}.
-- Names split on white space: family_name is the last word when there are two or
-- more, given_name the words before it (or the one word).
-- SECURITY DEFINER: the caller-less path; the person is the subject of the token, not
-- a caller whose policies apply, and the client's organization decides.
create or replace function app.issuer_account(wanted_client_id text, person uuid, mfa boolean) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, app as $$
declare
  c app.identity_clients;
  o app.organizations;
  m app.memberships;
  u app.users;
  words text[];
  claims jsonb;
begin
  select * into c from app.identity_clients where client_id = wanted_client_id and not disabled;
  if c.client_id is null then
    return jsonb_build_object('refused', 'client_unknown');
  end if;
  select * into o from app.organizations where id = c.organization_id;
  select * into m from app.memberships where organization_id = c.organization_id and user_id = person;
  select * into u from app.users where id = person;
  if u.id is null or m.user_id is null or m.disabled then
    return jsonb_build_object('refused', 'not_member');
  end if;
  if not u.email_verified then
    return jsonb_build_object('refused', 'email_unverified');
  end if;
  if o.require_mfa and not coalesce(mfa, false) then
    return jsonb_build_object('refused', 'mfa_required');
  end if;
  words := regexp_split_to_array(app.trim_space(u.name), '\s+');
  claims := jsonb_build_object('sub', u.id, 'email', u.email, 'email_verified', true,
    'organization', jsonb_build_object('id', o.id, 'slug', o.slug, 'role', m.role));
  if app.trim_space(u.name) <> '' then
    claims := claims || jsonb_build_object('name', array_to_string(words, ' '),
      'given_name', case when cardinality(words) > 1 then array_to_string(words[1:cardinality(words) - 1], ' ') else words[1] end);
    if cardinality(words) > 1 then
      claims := claims || jsonb_build_object('family_name', words[cardinality(words)]);
    end if;
  end if;
  if nullif(u.picture, '') is not null then
    claims := claims || jsonb_build_object('picture', u.picture);
  end if;
  return jsonb_build_object('claims', claims, 'clientName', c.name, 'organizationName', o.name);
end $$;

grant execute on function api.identity_client_register, api.identity_client_rotate_secret, api.identity_client_status,
  app.identity_client_json, app.identity_callback_allowed, app.identity_random, app.identity_require_admin,
  app.identity_client_locked, app.issuer_client, app.issuer_account to api;
