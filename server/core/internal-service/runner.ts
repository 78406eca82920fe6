// An internal service's own job runner (graphile-worker), for when it runs alone: the
// indexing service takes index_file, the crawler crawl_website and index_file. The
// API's worker runs the same tasks with the same code; whichever takes a job first
// runs it, once. No crontab: a service's work all arrives as jobs.
import { EventEmitter } from 'node:events'
import pg from 'pg'
import { Logger as GraphileLogger, run, type LogLevel, type Runner, type TaskList, type WorkerEvents } from 'graphile-worker'
import type { Logger } from '../log.ts'
import type { PoolMode } from '../db/connection.ts'

export interface JobRunner {
  /** Stops taking jobs; jobs still running after graceMs are released for another worker. */
  stop: (graceMs?: number) => Promise<void>
  promise: Promise<void>
}

export interface JobRunnerOptions {
  taskList: TaskList
  concurrency: number
  log: Logger
  /** The component named in its log lines (indexing-runner, crawler-runner). */
  component: string
  /** Behind a transaction pooler: no named prepared statements (see jobs/worker.ts). */
  poolMode?: PoolMode
}

const levels: Record<LogLevel, keyof Logger> = { error: 'error', warning: 'warn', info: 'info', debug: 'debug' }

export async function startJobRunner(databaseUrl: string, options: JobRunnerOptions): Promise<JobRunner> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: options.concurrency + 2 })
  const logger = new GraphileLogger((scope) => (level, message, meta) => {
    const fields: Record<string, unknown> = { component: options.component, ...scope }
    if (meta && typeof meta.error !== 'undefined') fields.error = meta.error
    options.log[levels[level] ?? 'info'](message, fields)
  })
  // An idle connection that fails (a database restart) must not end the process.
  const report = (error: Error) => logger.error(`${options.component} connection failed: ${error.message}`)
  pool.on('error', report)
  pool.on('connect', (client) => client.on('error', report))
  const lockHolders = new Set<string>()
  const events: WorkerEvents = new EventEmitter()
  events.on('pool:create', ({ workerPool }) => lockHolders.add(workerPool.id))
  events.on('worker:create', ({ worker }) => lockHolders.add(worker.workerId))
  let runner: Runner
  try {
    runner = await run({
      pgPool: pool, concurrency: options.concurrency, noHandleSignals: true, pollInterval: 1000, events, logger,
      taskList: options.taskList, parsedCronItems: [], noPreparedStatements: options.poolMode === 'transaction',
    })
  } catch (error) {
    await pool.end()
    throw error
  }
  return {
    promise: runner.promise,
    stop: async (graceMs?: number) => {
      const stopped = runner.stop()
      if (graceMs !== undefined) {
        let timer: NodeJS.Timeout | undefined
        const late = await Promise.race([
          stopped.then(() => false, () => false),
          new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(true), graceMs) }),
        ])
        clearTimeout(timer)
        if (late) {
          // The job is unlocked for another worker, which starts it again.
          await pool.query('select graphile_worker.force_unlock_workers($1::text[])', [[...lockHolders]]).catch(() => {})
          void stopped.catch(() => {})
          await Promise.race([pool.end(), new Promise((resolve) => setTimeout(resolve, 2_000).unref())])
          return
        }
      }
      await stopped.catch(() => {})
      await pool.end()
    },
  }
}
