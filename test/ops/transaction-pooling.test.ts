// A process behind a pooler in transaction mode (DATABASE_POOL_MODE=transaction) never
// migrates: it refuses to start on a database older than its code, or, serving
// requests, while the request login lacks the role defaults that replace startup
// options there. test/ops/pgbouncer.test.ts runs the service through pgbouncer.
import t from 'tap'
import { freshDatabase } from '../lib/db.ts'
import { ConfigError, loadConfig } from '../../server/core/config.ts'
import { entry, spawnMain, started } from './process.ts'

// Processes of the service start on a machine other suites load too.
t.setTimeout(600_000)

t.test('DATABASE_POOL_MODE is session unless set to transaction', async (t) => {
  t.equal(loadConfig({}).DATABASE_POOL_MODE, 'session')
  t.equal(loadConfig({ DATABASE_POOL_MODE: 'transaction' }).DATABASE_POOL_MODE, 'transaction')
  // pgbouncer's statement mode breaks every multi-statement transaction: not a mode the service runs in.
  const refused = (() => {
    try {
      loadConfig({ DATABASE_POOL_MODE: 'statement' })
      return null
    } catch (error) {
      return error
    }
  })()
  t.ok(refused instanceof ConfigError, 'statement is refused')
  t.match((refused as Error).message, /DATABASE_POOL_MODE: Invalid type: Expected \("session" \| "transaction"\)/)
})

t.test('a process in transaction mode refuses to start while a migration is pending, and applies none', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  await db.owner`delete from public.schema_migrations where kind = 'schema' and name = '0028_request_login_defaults.sql'`
  const env = { DATABASE_URL: db.url, DATABASE_POOL_MODE: 'transaction', PORT: '0', S3_ENDPOINT: 'none' }
  // Mode all: the API, the worker and the services, none of which migrates.
  const refused = started(t, spawnMain(['all'], env))
  t.equal((await refused.closed).code, 1, 'exit status 1')
  t.equal(refused.lines.length, 1, 'one line')
  t.match(entry(refused.lines[0]!), {
    level: 'error',
    message: 'start-up failed: 1 migration(s) pending (schema/0028_request_login_defaults.sql) and a process with ' +
      'DATABASE_POOL_MODE=transaction does not migrate: run `npm run admin -- migrate` with DATABASE_URL connecting ' +
      'directly to PostgreSQL, then start again',
  })
  const [recorded] = await db.owner`select count(*)::int as n from public.schema_migrations where name = '0028_request_login_defaults.sql'`
  t.equal(recorded!.n, 0, 'nothing was migrated')
})

t.test('an API in transaction mode refuses to start while the request login lacks its role defaults', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  const login = `tale_bare_login_${Math.random().toString(16).slice(2, 10)}`
  await db.owner.unsafe(`create role "${login}" login noinherit nobypassrls`)
  t.teardown(() => db.owner.unsafe(`drop role if exists "${login}"`))
  await db.owner.unsafe(`grant api to "${login}"`)
  const requestUrl = new URL(db.url)
  requestUrl.username = login
  const env = { DATABASE_URL: db.url, DATABASE_REQUEST_URL: requestUrl.toString(), DATABASE_POOL_MODE: 'transaction', PORT: '0', S3_ENDPOINT: 'none' }
  const api = started(t, spawnMain(['api'], env))
  t.equal((await api.closed).code, 1)
  t.equal(api.lines.length, 1)
  t.match(entry(api.lines[0]!), {
    level: 'error',
    message: new RegExp(`^start-up failed: the request login ${login} logs in as ${login} with plan_cache_mode auto, not as api ` +
      `with force_generic_plan: give it those role defaults \\(alter role ${login} set role = 'api'; alter role ${login} set ` +
      `plan_cache_mode = 'force_generic_plan'\\), or migrate with DATABASE_URL connecting directly as a role that may$`),
  })
})
