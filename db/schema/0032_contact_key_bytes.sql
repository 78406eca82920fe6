-- A contact's natural key is compared byte for byte (collation "C"). It is only ever
-- matched for equality, and equality is the same under either collation (C.UTF-8 is
-- deterministic); what changes is the cost of every comparison in its unique index
-- and in an import's sorts by key, which under the database's collation copy both
-- strings and call strcoll. An import of 10,000 rows makes several hundred thousand
-- of them. The column keeps its values; its unique index is rebuilt.
alter table app.contacts alter column external_id type text collate "C";
