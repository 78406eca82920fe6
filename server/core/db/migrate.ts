// Forward-only migrations. db/schema files run once each in name order, recorded by
// file name. db/limits.json (loaded into app.limits), db/functions then db/policies
// are re-applied whenever a file's checksum changes. One advisory lock serializes
// replicas that start together.
import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import pg from 'pg'
import { Logger, runMigrations } from 'graphile-worker'
import { REQUEST_LOGIN, type Sql } from './connection.ts'
import { parseLimits } from '../limits.ts'

export const dbRoot = fileURLToPath(new URL('../../../db/', import.meta.url))

// Chosen once; any constant works as long as every replica uses the same one.
const MIGRATION_LOCK = 7_240_119_001

type Kind = 'schema' | 'limits' | 'functions' | 'policies'
const kinds: Kind[] = ['schema', 'limits', 'functions', 'policies']

export interface SqlFile {
  kind: Kind
  name: string
  checksum: string
  text: string
}

export async function readSqlFiles(root = dbRoot): Promise<SqlFile[]> {
  const files: SqlFile[] = []
  for (const kind of kinds) {
    if (kind === 'limits') {
      // One file beside the folders, applied after the schema (its table) and before
      // the functions that read it.
      const text = await readFile(path.join(root, 'limits.json'), 'utf8')
      files.push({ kind, name: 'limits.json', text, checksum: createHash('sha256').update(text).digest('hex') })
      continue
    }
    const names = (await readdir(path.join(root, kind))).filter((n) => n.endsWith('.sql')).sort()
    for (const name of names) {
      const text = await readFile(path.join(root, kind, name), 'utf8')
      files.push({ kind, name, text, checksum: createHash('sha256').update(text).digest('hex') })
    }
  }
  return files
}

/** A digest of every SQL file: equal digests mean equal migrated databases. */
export async function schemaDigest(root = dbRoot): Promise<string> {
  const hash = createHash('sha256')
  for (const file of await readSqlFiles(root)) hash.update(`${file.kind}/${file.name}:${file.checksum}\n`)
  return hash.digest('hex')
}

export interface MigrationReport {
  applied: string[]
}

/**
 * Brings the database up to date: the job queue's own schema first (SQL functions
 * enqueue work into it), then the service's files.
 */
export async function migrate(sql: Sql, databaseUrl: string, root = dbRoot): Promise<MigrationReport> {
  const files = await readSqlFiles(root)
  const applied: string[] = []
  const connection = await sql.reserve()
  try {
    await connection`select pg_advisory_lock(${MIGRATION_LOCK})`
    await migrateJobQueue(databaseUrl)
    await connection`
      create table if not exists public.schema_migrations (
        kind text not null,
        name text not null,
        checksum text not null,
        applied_at timestamptz not null default now(),
        primary key (kind, name)
      )`
    const done = await appliedChecksums(connection)
    for (const file of files) {
      if (isApplied(file, done)) continue
      // The lock is session-level, so each file runs in an explicit transaction on
      // the same reserved connection.
      try {
        await connection`begin`
        // Function bodies may name objects defined by later files of the same kind.
        await connection`set local check_function_bodies = off`
        if (file.kind === 'limits') await loadLimits(connection, file.text)
        else await connection.unsafe(file.text)
        await connection`
          insert into public.schema_migrations (kind, name, checksum) values (${file.kind}, ${file.name}, ${file.checksum})
          on conflict (kind, name) do update set checksum = excluded.checksum, applied_at = now()`
        await connection`commit`
      } catch (error) {
        await connection`rollback`.catch(() => {})
        throw new Error(`migration ${file.kind}/${file.name} failed: ${(error as Error).message}`, { cause: error })
      }
      applied.push(`${file.kind}/${file.name}`)
    }
    await giveRequestLoginPassword(connection, databaseUrl)
  } finally {
    await connection`select pg_advisory_unlock(${MIGRATION_LOCK})`.catch(() => {})
    connection.release()
  }
  return { applied }
}

/**
 * What migrate() would apply to this database, without applying it or taking the
 * migration lock: for a process that must not migrate (one behind a transaction
 * pooler) and must not start on a database older than its code.
 */
export async function pendingMigrations(sql: Sql, root = dbRoot): Promise<string[]> {
  const [table] = await sql<{ present: boolean }[]>`select to_regclass('public.schema_migrations') is not null as present`
  const done = table!.present ? await appliedChecksums(sql) : new Map<string, string>()
  return (await readSqlFiles(root)).filter((file) => !isApplied(file, done)).map((file) => `${file.kind}/${file.name}`)
}

async function appliedChecksums(sql: Sql): Promise<Map<string, string>> {
  const done = new Map<string, string>()
  for (const row of await sql<{ kind: string; name: string; checksum: string }[]>`
    select kind, name, checksum from public.schema_migrations`) {
    done.set(`${row.kind}/${row.name}`, row.checksum)
  }
  return done
}

// A schema file runs once, whatever it says now; the others again whenever they change.
function isApplied(file: SqlFile, done: Map<string, string>): boolean {
  const previous = done.get(`${file.kind}/${file.name}`)
  return file.kind === 'schema' ? previous !== undefined : previous === file.checksum
}

// The whole file replaces the table, so a limit removed from it is gone.
async function loadLimits(connection: Sql, text: string): Promise<void> {
  const limits = parseLimits(text)
  await connection`delete from app.limits`
  await connection`
    insert into app.limits (name, value, unit, meaning)
    select key, (value->>'value')::numeric, value->>'unit', value->>'meaning'
      from jsonb_each(${connection.json(limits as never)}::jsonb)`
}

/**
 * Request connections, unless DATABASE_REQUEST_URL says otherwise, log in as
 * REQUEST_LOGIN with the password of DATABASE_URL (see requestDatabaseUrl). A
 * superuser owner gives the login that password while it has none, so the embedded
 * database and a compose database need no setup of their own; a password an
 * operator set is never touched, and under trust authentication (no password in the
 * URL) there is nothing to give. Any other owner cannot read pg_authid, and this
 * step does nothing.
 */
async function giveRequestLoginPassword(connection: Sql, databaseUrl: string): Promise<void> {
  const password = decodeURIComponent(new URL(databaseUrl).password)
  if (!password) return
  try {
    const [login] = await connection<{ unset: boolean }[]>`
      select rolpassword is null as unset from pg_authid where rolname = ${REQUEST_LOGIN}`
    if (!login?.unset) return
    // ALTER ROLE takes no bind parameters: the password is quoted as a literal.
    await connection.unsafe(`alter role ${REQUEST_LOGIN} password '${password.replaceAll("'", "''")}'`)
  } catch (error) {
    if ((error as { code?: string }).code !== '42501') throw error
  }
}

// Under the migration lock: graphile-worker's own first migration does not
// tolerate replicas racing to create its schema.
async function migrateJobQueue(databaseUrl: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 })
  pool.on('error', () => {})
  pool.on('connect', (client) => client.on('error', () => {}))
  try {
    await runMigrations({ pgPool: pool, logger: quietLogger })
  } finally {
    // Ended here, so no connection outlives the migration.
    await pool.end()
  }
}

// graphile-worker reports each of its migrations at info level; the service reports
// its own migration summary instead.
const quietLogger = new Logger(() => () => {})

export interface MigrationStatus {
  /** Schema files recorded as applied, by file name, in name order. */
  applied: string[]
  /** Schema files on disk not recorded yet: the next migration applies them. */
  pending: string[]
  /** Function, policy and limits files whose text differs from what was applied: re-applied next time. */
  changed: string[]
  /**
   * Schema files recorded but not on disk: the database was migrated by a newer
   * release (an old replica during a blue-green rollout sees this).
   */
  unknown: string[]
}

/** What `migrate` would do, read without a lock and without changing anything. */
export async function migrationStatus(sql: Sql, root = dbRoot): Promise<MigrationStatus> {
  const files = await readSqlFiles(root)
  const [table] = await sql<{ exists: boolean }[]>`select to_regclass('public.schema_migrations') is not null as exists`
  const recorded = table!.exists
    ? await sql<{ kind: string; name: string; checksum: string }[]>`select kind, name, checksum from public.schema_migrations`
    : []
  const done = new Map(recorded.map((row) => [`${row.kind}/${row.name}`, row.checksum]))
  const onDisk = new Set(files.filter((f) => f.kind === 'schema').map((f) => f.name))
  const schema = files.filter((f) => f.kind === 'schema')
  return {
    applied: schema.filter((f) => done.has(`schema/${f.name}`)).map((f) => f.name)
      .concat(recorded.filter((r) => r.kind === 'schema' && !onDisk.has(r.name)).map((r) => r.name)).sort(),
    pending: schema.filter((f) => !done.has(`schema/${f.name}`)).map((f) => f.name),
    changed: files.filter((f) => f.kind !== 'schema' && done.get(`${f.kind}/${f.name}`) !== f.checksum).map((f) => `${f.kind}/${f.name}`),
    unknown: recorded.filter((r) => r.kind === 'schema' && !onDisk.has(r.name)).map((r) => r.name).sort(),
  }
}
