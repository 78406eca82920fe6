-- Deployment-wide secrets (the cursor signing key). Never readable by the request
-- role: no grant and no policy.
-- Past these policies: app.cursor_issue and app.cursor_read (sign and verify keyset
-- cursors with the key, which the caller must never see).
alter table app.deployment_secrets enable row level security;
alter table app.deployment_secrets force row level security;
select app.drop_policies('app.deployment_secrets');
