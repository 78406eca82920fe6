-- Competence grants made in the app (POST /api/app/governance/competences) are
-- records of a decision: the evidence the granting owner or admin gave, and who ended
-- the grant. Grants made by an operator (the seed file, the admin CLI) and grants from
-- before this migration carry no evidence, hence null rather than a made-up text.
alter table app.competence_grants
  add column evidence text check (evidence is null or btrim(evidence) <> ''),
  add column revoked_by uuid references app.users (id) on delete set null,
  add constraint competence_grants_revoked_by_revocation check (revoked_by is null or revoked_at is not null);
