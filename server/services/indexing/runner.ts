// The indexing service's own job runner: graphile-worker with one task, index_file,
// so uploads queued by app.index_accept are indexed with only this service running.
// The API's worker runs the same task with the same pipeline; whichever takes a job
// first runs it, once. No crontab: the service's work all arrives as jobs.
import type { EmbeddingModel } from '../../core/indexing/embeddings.ts'
import { EventEmitter } from 'node:events'
import pg from 'pg'
import { Logger as GraphileLogger, run, type LogLevel, type Runner, type Task, type WorkerEvents } from 'graphile-worker'
import type { ObjectStore } from '../../core/storage/object-store.ts'
import type { Logger } from '../../core/log.ts'
import { indexFile, type PipelineOutcome, type Query } from '../../core/indexing/pipeline.ts'

export interface IndexingRunner {
  /** Stops taking jobs; jobs still running after graceMs are released for another worker. */
  stop: (graceMs?: number) => Promise<void>
  promise: Promise<void>
}

export interface RunnerOptions {
  store: ObjectStore | null
  concurrency: number
  log: Logger
  /** Embeds the service's own uploads. */
  embedder?: EmbeddingModel | null
  /** Each settled outcome of a job of this runner (the metrics count them). */
  onOutcome?: (outcome: PipelineOutcome) => void
}

export function indexFileTask(options: Pick<RunnerOptions, 'store' | 'onOutcome' | 'embedder'>): Task {
  return async (payload, helpers) => {
    const { fileId, revision } = payload as { fileId: string; revision: number }
    const query: Query = async (text, params) => (await helpers.query(text, params)).rows as never
    const outcome = await indexFile({
      query, store: options.store, embedder: options.embedder ?? null,
      log: { info: (message, fields) => helpers.logger.info(message, fields), warn: (message, fields) => helpers.logger.warn(message, fields) },
    }, fileId, revision)
    options.onOutcome?.(outcome)
    if (outcome.status === 'failed') helpers.logger.info(`file ${fileId} failed indexing: ${outcome.reason}`)
  }
}

const levels: Record<LogLevel, keyof Logger> = { error: 'error', warning: 'warn', info: 'info', debug: 'debug' }

export async function startRunner(databaseUrl: string, options: RunnerOptions): Promise<IndexingRunner> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: options.concurrency + 2 })
  const logger = new GraphileLogger((scope) => (level, message, meta) => {
    const fields: Record<string, unknown> = { component: 'indexing-runner', ...scope }
    if (meta && typeof meta.error !== 'undefined') fields.error = meta.error
    options.log[levels[level] ?? 'info'](message, fields)
  })
  // An idle connection that fails (a database restart) must not end the process.
  const report = (error: Error) => logger.error(`indexing runner connection failed: ${error.message}`)
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
      taskList: { index_file: indexFileTask(options) }, parsedCronItems: [],
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
          // The job is unlocked for another worker; its pipeline starts the revision again.
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
