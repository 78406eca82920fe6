// The database a benchmark runs against: dropped and made again by every run, migrated,
// and seeded with the `bench` organization, its owner (owner@bench.test) and an API key
// of theirs, plus `projects` projects.
import postgres from 'postgres'
import { ownerPool } from '../server/core/db/connection.ts'
import { migrate } from '../server/core/db/migrate.ts'
import { seed } from '../server/admin/operations.ts'
import { startEmbedded } from '../server/core/db/embedded.ts'

/**
 * BENCH_DATABASE, else `fallback`. Two checkouts benchmarking against one server need
 * a name each, since every run drops the database it names.
 */
export function benchDatabaseName(fallback: string): string {
  const name = process.env.BENCH_DATABASE ?? fallback
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error('BENCH_DATABASE must be a plain lower-case name')
  return name
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

/**
 * The server the benchmarks use: DATABASE_URL's, else an embedded PostgreSQL kept under
 * .data/bench-postgres. `stop` stops the embedded one (nothing for DATABASE_URL's).
 */
export async function benchServer(): Promise<{ baseUrl: string; stop: () => Promise<void> }> {
  if (process.env.DATABASE_URL) return { baseUrl: process.env.DATABASE_URL, stop: async () => {} }
  const embedded = await startEmbedded({ dataDir: '.data/bench-postgres', port: 54331, database: 'postgres' })
  return { baseUrl: embedded.url, stop: () => embedded.stop() }
}

export async function prepareDatabase(baseUrl: string, database: string, projects: number): Promise<{ url: string; key: string }> {
  const maintenance = postgres(withDatabase(baseUrl, 'postgres'), { max: 1, onnotice: () => {} })
  await maintenance.unsafe(`drop database if exists ${database} with (force)`)
  await maintenance.unsafe(`create database ${database}`)
  await maintenance.end()
  const url = withDatabase(baseUrl, database)
  const owner = ownerPool(url, 1)
  await migrate(owner, url)
  const seeded = await seed(owner, {
    organizations: [{ slug: 'bench', name: 'Bench' }],
    users: [{ email: 'owner@bench.test', name: 'Bench Owner', emailVerified: true,
              memberships: [{ org: 'bench', role: 'owner', disabled: false }], keys: [{ name: 'bench', expiresAt: null }] }],
    teams: [], projects: [], providers: [], models: [], secrets: [], grants: [],
  })
  // Created through the same SQL as POST /api/v1/projects, with explicit keys so
  // seeding does not spend its time re-deriving colliding keys.
  await owner`
    select app.operator_project_create(app.operator_org_id('bench'), app.operator_user_id('owner@bench.test'),
                                       'Project ' || n, 'P' || n)
      from generate_series(1, ${projects}) n`
  await owner`analyze`
  await owner.end()
  return { url, key: seeded.users['owner@bench.test']!.keys.bench! }
}
