-- Past these policies: app.authenticate (finds a key by its hash and records its use
-- before any caller exists).
alter table app.api_keys enable row level security;
alter table app.api_keys force row level security;
select app.drop_policies('app.api_keys');
grant select (id, user_id, name, expires_at, revoked_at, last_used_at, created_at) on app.api_keys to api;
grant insert (user_id, name, key_hash, expires_at) on app.api_keys to api;
grant update (revoked_at) on app.api_keys to api;

-- Keys are not managed over REST; a caller sees only their own key metadata.
create policy api_keys_select on app.api_keys for select to api
  using (user_id = (select app.user_id()));

-- A person signed in to the app (never an API key) makes keys for themself with the
-- developer capability (Settings > API > REST), and revokes their own.
create policy api_keys_insert on app.api_keys for insert to api
  with check (user_id = (select app.user_id()) and (select app.has_developer_role())
              and coalesce(current_setting('app.session_id', true), '') <> '');

create policy api_keys_revoke on app.api_keys for update to api
  using (user_id = (select app.user_id()) and coalesce(current_setting('app.session_id', true), '') <> '')
  with check (user_id = (select app.user_id()) and revoked_at is not null);
