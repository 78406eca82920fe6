-- Contacts and products (docs/records.md): the organization's records of people and
-- of what it sells, each with an optional natural key (externalId) that a repeat
-- create updates instead of duplicating. Both are listed newest change first, by
-- (updated_at, id). Row-level security is in db/policies/contacts.sql and products.sql.

create table app.contacts (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id uuid not null default gen_random_uuid(),
  -- The natural key: the contact's id in another system. Stored trimmed and
  -- NFC-normalized; null for a contact no other system names.
  external_id text check (external_id <> ''),
  email text check (email <> ''),
  name text check (name <> ''),
  phone text check (phone <> ''),
  company text check (company <> ''),
  attributes jsonb not null default '{}' check (jsonb_typeof(attributes) = 'object'),
  created_by uuid references app.users (id) on delete set null,
  -- The run whose contact.upsert step created the contact, when one did.
  created_by_run_id uuid,
  created_at timestamptz not null default app.now(),
  updated_at timestamptz not null default app.now(),
  -- No unique (id) beside the key: nothing references a contact, and an import
  -- maintains every index of every row it writes.
  primary key (organization_id, id),
  -- A contact names someone: by email or by name.
  check (email is not null or name is not null)
);
-- Nulls are distinct: any number of contacts without an externalId.
create unique index contacts_external_key on app.contacts (organization_id, external_id);
create index contacts_updated_idx on app.contacts (organization_id, updated_at desc, id desc);
-- contact.upsert by email and the list's email filter, ignoring case.
create index contacts_email_idx on app.contacts (organization_id, lower(email)) where email is not null;

create table app.products (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id uuid not null default gen_random_uuid(),
  external_id text check (external_id <> ''),
  name text not null check (name <> ''),
  description text,
  sku text check (sku <> ''),
  -- A price is in a currency (ISO 4217 code).
  price numeric check (price >= 0),
  currency text check (currency ~ '^[A-Z]{3}$'),
  attributes jsonb not null default '{}' check (jsonb_typeof(attributes) = 'object'),
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default app.now(),
  updated_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id),
  check (price is null or currency is not null)
);
create unique index products_external_key on app.products (organization_id, external_id);
create index products_updated_idx on app.products (organization_id, updated_at desc, id desc);

update app.platform_events set raised = true
 where name in ('contact.created', 'contact.updated', 'contact.deleted');
