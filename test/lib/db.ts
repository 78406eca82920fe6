// A fresh database per test file, cloned from a template migrated once per schema
// digest, so files run in parallel without sharing rows and without re-migrating.
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { ownerPool, requestPool, type Sql } from '../../server/core/db/connection.ts'
import { migrate, schemaDigest } from '../../server/core/db/migrate.ts'

export function databaseUrl(): string {
  const url = process.env.DATABASE_URL
  if (!url) throw new Error('DATABASE_URL is unset: run the suite with `npm test`, which provides one')
  return url
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

// Advisory locks are per database, so every test process takes this one in the
// cluster's maintenance database.
const TEMPLATE_LOCK = 7_240_119_002

export async function ensureTemplate(): Promise<string> {
  const template = `tale_tpl_${(await schemaDigest()).slice(0, 16)}`
  const maintenance = postgres(withDatabase(databaseUrl(), 'postgres'), { max: 1, onnotice: () => {} })
  try {
    const connection = await maintenance.reserve()
    try {
      await connection`select pg_advisory_lock(${TEMPLATE_LOCK})`
      const [existing] = await connection`select 1 from pg_database where datname = ${template}`
      if (!existing) {
        const building = `${template}_building`
        await connection.unsafe(`drop database if exists "${building}" with (force)`)
        await connection.unsafe(`create database "${building}"`)
        const owner = ownerPool(withDatabase(databaseUrl(), building), 1)
        try {
          await migrate(owner, withDatabase(databaseUrl(), building))
        } finally {
          await owner.end()
        }
        await connection.unsafe(`alter database "${building}" rename to "${template}"`)
      }
      await connection`select pg_advisory_unlock(${TEMPLATE_LOCK})`
    } finally {
      connection.release()
    }
  } finally {
    await maintenance.end()
  }
  return template
}

export interface TestDatabase {
  name: string
  url: string
  owner: Sql
  drop: () => Promise<void>
  /** Refuses new connections and ends open ones: the database stops answering. */
  cutOff: () => Promise<void>
}

export async function freshDatabase(): Promise<TestDatabase> {
  const template = await ensureTemplate()
  const name = `tale_test_${randomBytes(6).toString('hex')}`
  const maintenance = postgres(withDatabase(databaseUrl(), 'postgres'), { max: 1, onnotice: () => {} })
  await maintenance.unsafe(`create database "${name}" template "${template}"`)
  const url = withDatabase(databaseUrl(), name)
  const owner = ownerPool(url, 2)
  return {
    name, url, owner,
    cutOff: async () => {
      await maintenance.unsafe(`alter database "${name}" with allow_connections false`)
      await maintenance`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${name}`
    },
    drop: async () => {
      await owner.end({ timeout: 5 })
      await maintenance.unsafe(`drop database if exists "${name}" with (force)`)
      await maintenance.end()
    },
  }
}

/** Pins the clock every SQL rule reads (app.now()). */
export async function pinClock(owner: Sql, at: Date | number): Promise<void> {
  const instant = new Date(at)
  await owner`insert into app.clock (pinned_at) values (${instant}) on conflict (singleton) do update set pinned_at = excluded.pinned_at`
}

export async function unpinClock(owner: Sql): Promise<void> {
  await owner`delete from app.clock`
}

/**
 * What a statement came to: the SQLSTATE it failed with, or what success says of its
 * result ('succeeded' unless told), so a refusal and its code are one assertion.
 */
export async function sqlState<T>(work: () => Promise<T>, success: (result: T) => string = () => 'succeeded'): Promise<string> {
  try {
    return success(await work())
  } catch (error) {
    return (error as { code?: string }).code ?? String(error)
  }
}

/**
 * A fresh database and a request pool on it (connections as the request role), both
 * closed when the test file ends: for tests that speak SQL as the service does.
 */
export async function databaseWithRequests(t: { teardown: (fn: () => Promise<void>) => void }): Promise<{ db: TestDatabase; requests: Sql }> {
  const db = await freshDatabase()
  const requests = requestPool(db.url, 2)
  t.teardown(async () => {
    await requests.end()
    await db.drop()
  })
  return { db, requests }
}
