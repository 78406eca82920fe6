// A running service on a loopback port over a fresh database, with an HTTP client
// that speaks to it through real sockets.
import type { Test } from 'tap'
import { loadConfig } from '../../server/core/config.ts'
import { startService } from '../../server/service.ts'
import { crawlerSettings } from '../../server/core/crawl/settings.ts'
import { createLogger, type Level, type Logger } from '../../server/core/log.ts'
import { seed, type SeedFile, type SeedResult } from '../../server/admin/operations.ts'
import { freshDatabase, type TestDatabase } from './db.ts'
import { responseChecker, type ResponseChecker } from './openapi.ts'
import { seedFile } from './fixtures.ts'
import type { ObjectStore } from '../../server/core/storage/object-store.ts'
import { startWorker } from '../../jobs/worker.ts'
import { Logger as WorkerLogger } from 'graphile-worker'

export interface Response {
  status: number
  headers: Headers
  text: string
  body: any
}

export interface RequestOptions {
  key?: string
  org?: string
  body?: unknown
  rawBody?: string | Buffer
  headers?: Record<string, string>
}

export interface TestService {
  url: string
  db: TestDatabase
  request: (method: string, path: string, options?: RequestOptions) => Promise<Response>
  seed: (file: Partial<SeedFile>) => Promise<SeedResult>
}

export interface LogEntry {
  level: string
  message: string
  fields: Record<string, unknown>
}

export interface TestServiceOptions {
  /** The project files' store; none by default (uploads answer 503). */
  objectStore?: ObjectStore | null
  /** Runs the job worker beside the service (without the crontab). */
  worker?: boolean
}

export async function startTestService(t: Test, env: Record<string, string> = {}, logs?: LogEntry[],
  options: TestServiceOptions = {}): Promise<TestService> {
  const db = await freshDatabase()
  const config = loadConfig({ DATABASE_URL: db.url, PORT: '0', LOG_LEVEL: 'silent', ...env })
  const quiet = createLogger((process.env.TEST_LOG_LEVEL as Level | undefined) ?? 'silent')
  const record = (level: keyof Logger) => (message: string, fields: Record<string, unknown> = {}) => {
    logs?.push({ level, message, fields })
    quiet[level](message, fields)
  }
  const log: Logger = { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') }
  const service = await startService(config, db.url, { port: 0, log, objectStore: options.objectStore ?? null })
  const worker = options.worker
    ? await startWorker(db.url, {
      objectStore: options.objectStore ?? null, crontab: false, modelTimeoutMs: config.MODEL_TIMEOUT_MS,
      crawler: crawlerSettings(config),
      logger: new WorkerLogger(() => (level, message) => record(level === 'error' ? 'error' : 'debug')(message)),
    })
    : null
  t.teardown(async () => {
    await service.close()
    await worker?.stop()
    await db.drop()
  })
  // The document this instance publishes, read once, before any test can stop the database.
  let published: Promise<ResponseChecker> | undefined
  const checker = () => published ??= fetch(`${service.url}/openapi.json`)
    .then((res) => res.json() as Promise<Record<string, unknown>>).then(responseChecker)
  const request = async (method: string, path: string, options: RequestOptions = {}): Promise<Response> => {
    const headers: Record<string, string> = { ...options.headers }
    if (options.key) headers.authorization = `Bearer ${options.key}`
    if (options.org) headers['x-organization-slug'] = options.org
    const body = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body))
    const response = await fetch(service.url + path, { method, headers, body })
    const text = await response.text()
    let parsed: unknown
    try {
      parsed = text ? JSON.parse(text) : undefined
    } catch {
      parsed = undefined
    }
    ;(await checker()).check(method, path, response.status, response.headers.get('content-type'), parsed)
    return { status: response.status, headers: response.headers, text, body: parsed }
  }
  return {
    url: service.url, db, request,
    seed: (file) => seed(db.owner, seedFile(file)),
  }
}
