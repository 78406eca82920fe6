-- A competence grant is revoked, not erased, when its holder leaves the organization:
-- the row stays as the audit trail. It now refers to the user, not the membership.
alter table app.competence_grants drop constraint competence_grants_organization_id_user_id_fkey;
alter table app.competence_grants add foreign key (user_id) references app.users (id) on delete cascade;
