// `npm start`: migrate, then serve the API with the worker beside it. With no DATABASE_URL an embedded PostgreSQL runs under .data/, and an
// empty database gets a demo organization whose owner key is printed once.
import { ConfigError, loadConfig, type Config } from './core/config.ts'
import { resolveDatabase } from './core/db/database.ts'
import { ownerPool, type Sql } from './core/db/connection.ts'
import { migrate } from './core/db/migrate.ts'
import { createLogger } from './core/log.ts'
import { startService } from './service.ts'
import { startWorker } from '../jobs/worker.ts'
import { createKey, seed } from './admin/operations.ts'
import { resolveObjectStore } from './core/storage/resolve.ts'

let config: Config
try {
  config = loadConfig()
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`)
    process.exit(1)
  }
  throw error
}

const log = createLogger(config.LOG_LEVEL)
const database = await resolveDatabase(config, (line) => log.debug('postgres', { line }))
const owner = ownerPool(database.url, 2)
const report = await migrate(owner, database.url)
log.info('database migrated', { applied: report.applied.length })
if (!config.DATABASE_URL) await createDemoOrganization(owner)

const objectStore = await resolveObjectStore(config)
log.info('object store', { store: objectStore.description })
const worker = await startWorker(database.url, { objectStore: objectStore.store, concurrency: config.WORKER_CONCURRENCY })
const service = await startService(config, database.url, { log, objectStore: objectStore.store })
log.info('listening', { url: config.publicBaseUrl, port: service.port })

async function createDemoOrganization(sql: Sql): Promise<void> {
  const [{ count } = { count: 0 }] = await sql<{ count: number }[]>`select count(*)::int as count from app.organizations`
  if (count > 0) return
  await seed(sql, {
    organizations: [{ slug: 'demo', name: 'Demo', skillSharingPolicy: null }],
    users: [{ email: 'owner@demo.test', name: 'Demo Owner', password: null, emailVerified: true,
              memberships: [{ org: 'demo', role: 'owner', disabled: false }], keys: [] }],
    teams: [], projects: [], providers: [], models: [], secrets: [], grants: [],
  })
  const { key } = await createKey(sql, 'owner@demo.test', 'demo', null)
  process.stdout.write([
    '',
    'Created the demo organization "demo" with owner owner@demo.test.',
    'Its API key is shown this once:',
    '',
    `  ${key}`,
    '',
    `Try: curl -H "Authorization: Bearer ${key}" ${config.publicBaseUrl}/api/v1/me`,
    '',
  ].join('\n'))
}

let stopping = false
async function shutdown(): Promise<void> {
  if (stopping) return
  stopping = true
  await service.close()
  await worker.stop()
  await objectStore.stop()
  await owner.end({ timeout: 5 })
  await database.stop()
  process.exit(0)
}
process.once('SIGINT', () => void shutdown())
process.once('SIGTERM', () => void shutdown())
