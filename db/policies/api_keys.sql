-- Past these policies: app.authenticate (finds a key by its hash and records its use
-- before any caller exists).
alter table app.api_keys enable row level security;
alter table app.api_keys force row level security;
select app.drop_policies('app.api_keys');
grant select (id, user_id, name, expires_at, revoked_at, last_used_at, created_at) on app.api_keys to api;

-- Keys are not managed over REST; a caller sees only their own key metadata.
create policy api_keys_select on app.api_keys for select to api
  using (user_id = (select app.user_id()));
