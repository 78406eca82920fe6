-- Second-factor secrets are credentials. No policy admits the request role.
-- Past these policies: app.sign_in_lookup (whether a person has a factor),
-- app.session_pending_factor and app.session_complete (the factor of a sign-in and
-- its last step), app.totp_status, app.totp_set, app.totp_remove (a signed-in
-- person's own factor).
alter table app.user_totp enable row level security;
alter table app.user_totp force row level security;
select app.drop_policies('app.user_totp');
