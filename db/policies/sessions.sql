-- Sessions are credentials, not tenant data. No policy admits the request role: the
-- sign-in functions (caller-less paths, like API key lookups) own their use.
-- Past these policies: app.session_open, app.session_pending_factor,
-- app.session_complete, app.session_close, app.session_holder (resolves a session
-- cookie to its person for app.authenticate and the identity issuer).
alter table app.sessions enable row level security;
alter table app.sessions force row level security;
select app.drop_policies('app.sessions');
