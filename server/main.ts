// The composition root: the one module that decides what a process runs, and the
// only one that may import jobs/ and the internal services.
//
//   node --import tsx server/main.ts [all|api|worker|indexing|crawler]
//     all       (npm start)          the API, the job worker and the internal services in one process
//     api       (npm run api)        the API only
//     worker    (npm run worker)     the job worker only
//     indexing  (npm run indexing)   the indexing service (with its own index_file runner) only
//     crawler   (npm run crawler)    the crawler service (with its own crawl_website runner) only
//
// Every mode applies pending migrations first (they run under a lock, so processes
// starting together take turns), except behind a transaction pooler
// (DATABASE_POOL_MODE=transaction), where a process refuses to start while one is
// pending. With no DATABASE_URL an embedded PostgreSQL runs
// under .data/, and an empty database gets a demo organization whose owner key is
// printed once. SIGTERM or SIGINT stops what was started, newest first.
import net from 'node:net'
import { ConfigError, loadConfig, type Config } from './core/config.ts'
import { resolveDatabase } from './core/db/database.ts'
import { ownerPool, requestLoginProblem, type Sql } from './core/db/connection.ts'
import { crawlerSettings } from './core/crawl/settings.ts'
import { startCrawlerService } from './services/crawler/service.ts'
import { migrate, pendingMigrations } from './core/db/migrate.ts'
import { createLogger, type Logger } from './core/log.ts'
import { resolveObjectStore } from './core/storage/resolve.ts'
import { startService } from './service.ts'
import { createKey, seed } from './admin/operations.ts'
import { startWorker } from '../jobs/worker.ts'
import { startIndexingService } from './services/indexing/service.ts'
import { serviceEmbedder } from './core/indexing/embeddings.ts'

const MODES = { all: ['api', 'worker', 'indexing', 'crawler'], api: ['api'], worker: ['worker'], indexing: ['indexing'], crawler: ['crawler'] } as const
type Mode = keyof typeof MODES
type Part = (typeof MODES)[Mode][number]

/** Running jobs get this long to finish on shutdown before they are released to another worker. */
const WORKER_GRACE_MS = 5_000
/**
 * A shutdown that has not finished by then exits anyway. It leaves room for an HTTP
 * server's drain (DRAIN_GRACE_MS, server/core/http-drain.ts), the worker's grace and
 * the pools' own timeouts, one after another.
 */
const SHUTDOWN_DEADLINE_MS = 20_000

// Connection failures as postgres.js and Node report them: socket errors, and
// PostgreSQL's own refusals of the login (class 08 connection, 28 authorization,
// 3D000 no such database, 57P03 starting up).
const CONNECTION_ERRORS = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', '3D000', '57P03'])

/** A start-up failure already put into words for the operator. */
class StartupError extends Error {}

interface Started {
  name: string
  stop: () => Promise<void>
}

const mode = process.argv[2] ?? 'all'
if (!(mode in MODES)) {
  process.stderr.write(`unknown mode "${mode}": expected one of ${Object.keys(MODES).join(', ')}\n`)
  process.exit(1)
}
const parts = new Set<Part>(MODES[mode as Mode])

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
routeProcessWarnings(log)

// Started pieces, stopped in reverse order. One started after a shutdown began
// (a signal during start-up) is stopped at once.
const started: Started[] = []
let stopping = false
const keep = (part: Started) => {
  if (stopping) void part.stop().catch(() => {})
  else started.push(part)
}
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void shutdown(signal, 0))

try {
  await start()
} catch (error) {
  log.error(`start-up failed: ${describeStartupFailure(error)}`)
  await shutdown('start-up failure', 1)
}

async function start(): Promise<void> {
  // Before migrations and the worker: a port held by another process is the most
  // common start-up failure, and it should not cost a migration to find out.
  if (parts.has('api')) await ensurePortFree(config.PORT)
  if (parts.has('indexing')) await ensurePortFree(config.INDEXING_PORT, 'INDEXING_PORT')
  if (parts.has('crawler')) await ensurePortFree(config.CRAWLER_PORT, 'CRAWLER_PORT')

  const database = await resolveDatabase(config, (line) => log.debug('postgres', { line }), { callerHandlesSignals: true })
  keep({ name: 'database', stop: database.stop })
  const owner = ownerPool(database.url, 2, config.DATABASE_POOL_MODE)
  keep({ name: 'owner pool', stop: () => owner.end({ timeout: 5 }) })
  try {
    if (config.DATABASE_POOL_MODE === 'transaction') {
      await refuseUnreadyDatabase(owner, database.url)
      log.info('database up to date', { poolMode: config.DATABASE_POOL_MODE })
    } else {
      const report = await migrate(owner, database.url)
      log.info('database migrated', { applied: report.applied.length })
    }
  } catch (error) {
    throw unreachable(error, database.url) ?? error
  }
  if (!config.DATABASE_URL && parts.has('api')) await createDemoOrganization(owner)

  const objectStore = await resolveObjectStore(config)
  keep({ name: 'object store', stop: objectStore.stop })
  log.info('object store', { store: objectStore.description })

  if (parts.has('worker')) {
    const worker = await startWorker(database.url, {
      poolMode: config.DATABASE_POOL_MODE, objectStore: objectStore.store, concurrency: config.WORKER_CONCURRENCY, modelTimeoutMs: config.MODEL_TIMEOUT_MS, log,
      embedder: serviceEmbedder(config), crawler: crawlerSettings(config) })
    keep({ name: 'worker', stop: () => worker.stop({ graceMs: WORKER_GRACE_MS }) })
    // A worker that stops on its own (its database gone for good) takes the process
    // with it, so a supervisor restarts it rather than leaving an API without one.
    worker.promise.then(
      () => { if (!stopping) { log.error('the worker stopped unexpectedly'); void shutdown('worker stopped', 1) } },
      (error) => { if (!stopping) { log.error('the worker failed', { error }); void shutdown('worker failed', 1) } },
    )
    log.info('worker started', { concurrency: config.WORKER_CONCURRENCY })
  }

  // Internal services (server/services/<name>/, on INDEXING_PORT and CRAWLER_PORT)
  // are started here, each as a part of its own that a mode names.
  if (parts.has('indexing')) {
    // Beside the worker (mode all) the worker's own index_file task takes the jobs; a
    // second runner in the same process would only compete with it.
    const indexing = await startIndexingService(config, database.url, { log, store: objectStore.store, runner: !parts.has('worker') })
    keep({ name: 'indexing service', stop: indexing.close })
    log.info('indexing service listening', { url: `http://localhost:${indexing.port}`, port: indexing.port })
  }

  if (parts.has('crawler')) {
    // Beside the worker (mode all) the worker's own crawl_website task takes the scans.
    const crawler = await startCrawlerService(config, database.url, { log, runner: !parts.has('worker') })
    keep({ name: 'crawler service', stop: crawler.close })
    log.info('crawler service listening', { url: `http://localhost:${crawler.port}`, port: crawler.port })
  }

  if (parts.has('api')) {
    const service = await startService(config, database.url, { log, objectStore: objectStore.store })
    keep({ name: 'api', stop: service.close })
    log.info('listening', { url: config.PUBLIC_BASE_URL ?? `http://localhost:${service.port}`, port: service.port })
  }
}

async function shutdown(reason: string, code: number): Promise<void> {
  if (stopping) return
  stopping = true
  if (code === 0) log.info('shutting down', { reason })
  const deadline = setTimeout(() => {
    log.error('shutdown did not finish in time; exiting')
    process.exit(1)
  }, SHUTDOWN_DEADLINE_MS)
  deadline.unref()
  for (const part of started.reverse()) {
    try {
      await part.stop()
    } catch (error) {
      log.warn(`stopping the ${part.name} failed`, { error })
    }
  }
  if (code === 0) log.info('stopped')
  process.exit(code)
}

function ensurePortFree(port: number, variable = 'PORT'): Promise<void> {
  if (port === 0) return Promise.resolve()
  return new Promise((resolve, reject) => {
    const probe = net.createServer()
    probe.once('error', (error: NodeJS.ErrnoException) => {
      reject(error.code === 'EADDRINUSE' ? new StartupError(`port ${port} is already in use (set ${variable} to a free port)`)
        : error.code === 'EACCES' ? new StartupError(`port ${port} may not be opened by this user (set ${variable} above 1023)`)
          : error)
    })
    probe.listen(port, '0.0.0.0', () => probe.close(() => resolve()))
  })
}

/**
 * Behind a transaction pooler a process never migrates (the migration lock is a
 * session's), so it starts only on a database a direct migration brought up to its
 * code, and, when it serves requests, only while the request login acts as api by
 * its own role defaults (the pooler passes no startup options on).
 */
async function refuseUnreadyDatabase(owner: Sql, url: string): Promise<void> {
  const pending = await pendingMigrations(owner)
  if (pending.length > 0) {
    throw new StartupError(`${pending.length} migration(s) pending (${pending.slice(0, 3).join(', ')}${pending.length > 3 ? ', ...' : ''}) ` +
      'and a process with DATABASE_POOL_MODE=transaction does not migrate: run `npm run admin -- migrate` with DATABASE_URL ' +
      'connecting directly to PostgreSQL, then start again')
  }
  if (!parts.has('api')) return
  const problem = await requestLoginProblem(url, config.DATABASE_REQUEST_URL)
  if (problem) throw new StartupError(`${problem}, or migrate with DATABASE_URL connecting directly as a role that may`)
}

function unreachable(error: unknown, url: string): StartupError | null {
  const code = String((error as { code?: unknown }).code ?? '')
  if (!CONNECTION_ERRORS.has(code) && !/^(08|28)/.test(code)) return null
  const where = new URL(url)
  const database = `${where.hostname}:${where.port || 5432}${where.pathname}`
  return new StartupError(`cannot use the database at ${database}: ${(error as Error).message} (check DATABASE_URL)`)
}

function describeStartupFailure(error: unknown): string {
  if (error instanceof StartupError) return error.message
  if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') return `port ${config.PORT} is already in use (set PORT to a free port)`
  return error instanceof Error ? error.message : String(error)
}

/** Node's process warnings (the AWS SDK's among them) as lines of the JSON log rather than raw text on stderr. */
function routeProcessWarnings(logger: Logger): void {
  process.removeAllListeners('warning')
  process.on('warning', (warning) => {
    logger.warn(warning.message.replace(/\s*\n\s*/g, ' '), { warning: warning.name })
  })
}

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
