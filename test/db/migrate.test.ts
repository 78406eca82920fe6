// The migrator: schema files once, functions and policies re-applied on change,
// replicas serialized by one advisory lock.
import { cp, writeFile, appendFile, mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import postgres from 'postgres'
import t, { type Test } from 'tap'
import { ownerPool } from '../../server/core/db/connection.ts'
import { dbRoot, migrate, pendingMigrations, readSqlFiles } from '../../server/core/db/migrate.ts'
import { databaseUrl, freshDatabase, withDatabase } from '../lib/db.ts'

async function emptyDatabase(t: Test): Promise<{ url: string }> {
  const name = `tale_migrate_${Math.random().toString(16).slice(2, 10)}`
  const maintenance = postgres(withDatabase(databaseUrl(), 'postgres'), { max: 1, onnotice: () => {} })
  await maintenance.unsafe(`create database "${name}"`)
  t.teardown(async () => {
    await maintenance.unsafe(`drop database if exists "${name}" with (force)`)
    await maintenance.end()
  })
  return { url: withDatabase(databaseUrl(), name) }
}

t.test('files apply once, in name order, recorded by file name', async (t) => {
  const { url } = await emptyDatabase(t)
  const sql = ownerPool(url, 2)
  t.teardown(() => sql.end())
  const first = await migrate(sql, url)
  t.ok(first.applied.length > 10)
  t.same(first.applied.filter((f) => f.startsWith('schema/')), [...first.applied.filter((f) => f.startsWith('schema/'))].sort(),
    'schema files in name order')
  t.ok(first.applied.indexOf('functions/0001_core.sql') > first.applied.indexOf('schema/0001_foundation.sql'), 'functions after schema')
  t.ok(first.applied.findIndex((f) => f.startsWith('policies/')) > first.applied.findLastIndex((f) => f.startsWith('functions/')),
    'policies after functions')
  const second = await migrate(sql, url)
  t.same(second.applied, [], 'nothing runs twice')
  const recorded = await sql`select kind, name from public.schema_migrations where kind = 'schema' order by name`
  t.same(recorded.map((r) => r.name), first.applied.filter((f) => f.startsWith('schema/')).map((f) => f.slice('schema/'.length)))
})

t.test('changed function and policy files are re-applied; schema files are not', async (t) => {
  const { url } = await emptyDatabase(t)
  const root = await mkdtemp(path.join(tmpdir(), 'tale-db-'))
  await cp(dbRoot, root, { recursive: true })
  const sql = ownerPool(url, 2)
  t.teardown(() => sql.end())
  await migrate(sql, url, root)

  await appendFile(path.join(root, 'functions', '0001_core.sql'),
    '\ncreate or replace function app.migration_probe() returns text language sql as $$ select \'v2\' $$;\n')
  await appendFile(path.join(root, 'schema', '0001_foundation.sql'), '\ncreate table app.never_created (x int);\n')
  const report = await migrate(sql, url, root)
  t.same(report.applied, ['functions/0001_core.sql'])
  const [probe] = await sql`select app.migration_probe() as v`
  t.equal(probe!.v, 'v2')
  const [table] = await sql`select to_regclass('app.never_created') as t`
  t.equal(table!.t, null, 'an applied schema file never runs again')

  // A policy dropped from its file is dropped from the database.
  await writeFile(path.join(root, 'policies', 'teams.sql'),
    "alter table app.teams enable row level security;\nalter table app.teams force row level security;\nselect app.drop_policies('app.teams');\n")
  t.same((await migrate(sql, url, root)).applied, ['policies/teams.sql'])
  const policies = await sql`select polname from pg_policy where polrelid = 'app.teams'::regclass`
  t.same(policies, [])
})

t.test('pending migrations are what migrate would apply: none on a migrated database, every file on an empty one', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  t.same(await pendingMigrations(db.owner), [], 'a migrated database is up to date')

  // A schema file not recorded and a function file whose recorded checksum differs
  // (changed since it was applied) are both pending, in the order migrate runs them.
  await db.owner`delete from public.schema_migrations where kind = 'schema' and name = '0028_request_login_defaults.sql'`
  await db.owner`update public.schema_migrations set checksum = 'older' where kind = 'functions' and name = '0001_core.sql'`
  await db.owner`update public.schema_migrations set checksum = 'older' where kind = 'schema' and name = '0001_foundation.sql'`
  t.same(await pendingMigrations(db.owner), ['schema/0028_request_login_defaults.sql', 'functions/0001_core.sql'],
    'a schema file runs once whatever its checksum; a changed function file again')

  const { url } = await emptyDatabase(t)
  const empty = ownerPool(url, 1)
  t.teardown(() => empty.end())
  t.same(await pendingMigrations(empty), (await readSqlFiles()).map((file) => `${file.kind}/${file.name}`))
})

t.test('a failing file leaves nothing of itself behind and is not recorded', async (t) => {
  const { url } = await emptyDatabase(t)
  const root = await mkdtemp(path.join(tmpdir(), 'tale-db-'))
  await cp(dbRoot, root, { recursive: true })
  await writeFile(path.join(root, 'schema', '9999_broken.sql'), 'create table app.half_done (x int);\nselect 1/0;\n')
  const sql = ownerPool(url, 2)
  t.teardown(() => sql.end())
  await t.rejects(migrate(sql, url, root), /9999_broken\.sql/)
  const [table] = await sql`select to_regclass('app.half_done') as t`
  t.equal(table!.t, null)
  const [row] = await sql`select count(*)::int as n from public.schema_migrations where name = '9999_broken.sql'`
  t.equal(row!.n, 0)
})

t.test('replicas starting together do not race', async (t) => {
  const { url } = await emptyDatabase(t)
  const pools = [ownerPool(url, 1), ownerPool(url, 1), ownerPool(url, 1)]
  t.teardown(() => Promise.all(pools.map((p) => p.end())))
  const reports = await Promise.all(pools.map((p) => migrate(p, url)))
  const applied = reports.flatMap((r) => r.applied)
  t.equal(applied.length, new Set(applied).size, 'each file applied by exactly one replica')
  t.ok(applied.includes('schema/0001_foundation.sql'))
})

t.test('every function body compiles against the migrated schema', async (t) => {
  // Migrations load function files with check_function_bodies off (files may name
  // objects defined later); here each definition is created again with checking on.
  const { url } = await emptyDatabase(t)
  const sql = ownerPool(url, 1)
  t.teardown(() => sql.end())
  await migrate(sql, url)
  const functions = await sql<{ name: string; definition: string }[]>`
    select p.oid::regprocedure::text as name, pg_get_functiondef(p.oid) as definition
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname in ('app', 'api') and p.prokind = 'f'`
  t.ok(functions.length > 50)
  const broken: string[] = []
  for (const fn of functions) {
    try {
      await sql.begin(async (tx) => {
        await tx`set local check_function_bodies = on`
        await tx.unsafe(fn.definition)
        throw new Error('rollback')
      })
    } catch (error) {
      if ((error as Error).message !== 'rollback') broken.push(`${fn.name}: ${(error as Error).message}`)
    }
  }
  t.same(broken, [], 'no function has a syntax error or names a missing object')
})
