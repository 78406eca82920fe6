-- A contact's wire form as a row type, its attributes named as GET /contacts/{id}
-- shows them, and the payloads of its created and updated events as row types around
-- it. to_json of such a row writes each field's name from the type, where
-- json_build_object looks up the type of every key and every value on every call: an
-- import writes ten thousand payloads, and written from these rows they cost it half
-- as much (db/functions/0140_contacts.sql). The types are the wire form of every
-- contact the API answers and every contact event: like every schema file this one
-- runs once, so a change to them is a new schema file (alter type), never an edit.
create type app.contact_record as (
  "id" uuid,
  "externalId" text,
  "email" text,
  "name" text,
  "phone" text,
  "company" text,
  "attributes" jsonb,
  "createdAt" bigint,
  "updatedAt" bigint
);

create type app.contact_created_payload as ("contact" app.contact_record);

create type app.contact_updated_payload as ("contact" app.contact_record, "changes" text[]);
