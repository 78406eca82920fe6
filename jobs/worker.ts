// The graphile-worker runner: started by the composition root (server/main.ts)
// beside the API or alone. Tasks are one file each under jobs/tasks.
import { Logger, type LogLevel, type TaskList } from 'graphile-worker'
import { startSupervisedRunner } from '../server/core/queue/supervised-runner.ts'
import type { ObjectStore } from '../server/core/storage/object-store.ts'
import type { Logger as ServiceLogger } from '../server/core/log.ts'
import type { EmbeddingModel } from '../server/core/indexing/embeddings.ts'
import { forgetIdleRateBuckets } from './tasks/forget-idle-rate-buckets.ts'
import { deleteObjects } from './tasks/delete-objects.ts'
import { sweepExpiredUploads } from './tasks/sweep-expired-uploads.ts'
import { purgeRetainedDocuments } from './tasks/purge-retained-documents.ts'
import { runAutomation } from './tasks/run-automation.ts'
import { recoverRuns } from './tasks/recover-runs.ts'
import { indexDocument } from './tasks/index-document.ts'
import { indexFileTask } from './tasks/index-file.ts'
import { scheduleTick } from './tasks/schedule-tick.ts'
import { drainEvents } from './tasks/drain-events.ts'
import { sweepTriggerRecords } from './tasks/sweep-trigger-records.ts'
import { generateReply } from './tasks/generate-reply.ts'
import { runAgent } from './tasks/run-agent.ts'
import { crawlWebsite } from './tasks/crawl-website.ts'
import { CRAWLER_DEFAULTS, type CrawlerSettings } from '../server/core/crawl/settings.ts'
import pg from 'pg'
import { startHeartbeat } from './heartbeat.ts'
import type { PoolMode } from '../server/core/db/connection.ts'

/** How long a model provider may stay silent before a call fails with timeout. */
export const DEFAULT_MODEL_TIMEOUT_MS = 60_000

export function taskList(store: ObjectStore | null, modelTimeoutMs = DEFAULT_MODEL_TIMEOUT_MS,
  embedder: EmbeddingModel | null = null, crawler: CrawlerSettings = CRAWLER_DEFAULTS): TaskList {
  return {
    forget_idle_rate_buckets: forgetIdleRateBuckets,
    delete_objects: deleteObjects(store),
    sweep_expired_uploads: sweepExpiredUploads,
    purge_retained_documents: purgeRetainedDocuments,
    run_automation: runAutomation,
    recover_runs: recoverRuns,
    index_document: indexDocument,
    index_file: indexFileTask(store, embedder),
    schedule_tick: scheduleTick,
    drain_events: drainEvents,
    sweep_trigger_records: sweepTriggerRecords,
    generate_reply: generateReply(modelTimeoutMs, store),
    run_agent: runAgent(modelTimeoutMs),
    crawl_website: crawlWebsite(crawler),
  }
}

const crontab = [
  '*/15 * * * * forget_idle_rate_buckets ?max=1',
  '17 * * * * sweep_expired_uploads ?max=1',
  '23 * * * * purge_retained_documents ?max=1',
  '* * * * * recover_runs ?max=1',
  // Schedule triggers: pg_cron calls the same SQL where it is installed; a tick run
  // twice for a minute starts nothing twice. No backfill: after downtime the first
  // tick starts one catch-up run per schedule, not one per missed minute.
  '* * * * * schedule_tick ?max=3',
  // The outbox is drained by the job each raise enqueues; this one picks up events
  // whose drain ran out of attempts.
  '* * * * * drain_events ?max=1',
  '41 * * * * sweep_trigger_records ?max=1',
].join('\n')

/**
 * Batching settings of the worker, shared with the benchmark's floor. No local queue:
 * graphile-worker 0.17's local queue throws an error nobody can catch when it cannot
 * hand its fetched jobs back to a database that went away, which ended the worker
 * process during a database restart (test/faults/postgres-restart.test.ts).
 */
export const WORKER_PRESET = (_concurrency: number) =>
  ({ completeJobBatchDelay: 0, failJobBatchDelay: 0 })

export interface WorkerOptions {
  objectStore: ObjectStore | null
  /** Embeds the indexing service's own uploads when this worker takes their jobs. */
  embedder?: EmbeddingModel | null
  concurrency?: number
  /** Without the crontab (tests run maintenance on demand). */
  crontab?: boolean
  /** The service's JSON logger; graphile-worker's own lines are forwarded to it. */
  log?: ServiceLogger
  /** How long a model provider may stay silent before a chat turn or an agent's call fails with timeout (MODEL_TIMEOUT_MS). */
  modelTimeoutMs?: number
  /** A graphile-worker logger, when the caller wants graphile's lines itself (tests). */
  logger?: Logger
  /** Website scans' politeness and reach (CRAWLER_* variables). */
  crawler?: CrawlerSettings
  /** transaction: connections go through a transaction pooler, so no named prepared statements. */
  poolMode?: PoolMode
}

export interface Worker {
  /**
   * Stops taking jobs and waits up to graceMs for running ones to finish; jobs still
   * running then are released (unlocked, for another worker to run at once), so a
   * stop never outlasts the grace by more than a few seconds. Then closes every
   * connection. Without graceMs it waits for every running job.
   */
  stop: (options?: { graceMs?: number }) => Promise<void>
  /** Settles when the worker has stopped. */
  promise: Promise<void>
}

const levels: Record<LogLevel, keyof ServiceLogger> = { error: 'error', warning: 'warn', info: 'info', debug: 'debug' }

/**
 * graphile-worker's lines as lines of the service's logger, with their scope (worker,
 * task, job), an error, and the numbers, strings and booleans a line carries (a task's
 * own figures, such as a website scan's summary); objects (a whole job, its payload,
 * the runner's options) are left out.
 */
export function workerLogger(log: ServiceLogger): Logger {
  return new Logger((scope) => (level, message, meta) => {
    const fields: Record<string, unknown> = { component: 'worker', ...scope }
    for (const [key, value] of Object.entries(meta ?? {})) {
      if (typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean') fields[key] ??= value
    }
    if (meta && typeof meta.error !== 'undefined') fields.error = meta.error
    log[levels[level] ?? 'info'](message, fields)
  })
}

export async function startWorker(connectionString: string, options: WorkerOptions): Promise<Worker> {
  // Supervised (server/core/queue/supervised-runner.ts): a database restart replaces
  // graphile-worker's runner rather than ending the worker, and the jobs of a worker
  // process that was killed are released for this one.
  const logger = options.logger ?? (options.log ? workerLogger(options.log) : new Logger(() => () => {}))
  const concurrency = options.concurrency ?? 2
  const runner = await startSupervisedRunner(connectionString, {
    logger, poolSize: concurrency + 2, poolMode: options.poolMode,
    runner: {
      concurrency, taskList: taskList(options.objectStore, options.modelTimeoutMs, options.embedder ?? null, options.crawler),
      crontab: options.crontab === false ? '' : crontab, pollInterval: 1000,
      noPreparedStatements: options.poolMode === 'transaction',
      // Measured in BENCHMARKS.md: completing jobs together saves a round trip per job,
      // which a run engine of short jobs feels.
      preset: { worker: WORKER_PRESET(concurrency) },
    },
  })
  // The row `admin status` counts live workers by, on a connection of its own so a
  // worker busy to its last connection still reports itself.
  const heartbeatPool = new pg.Pool({ connectionString, max: 1 })
  heartbeatPool.on('error', (error) => logger.warn(`the worker heartbeat connection failed: ${error.message}`))
  const heartbeat = await startHeartbeat(heartbeatPool, { concurrency,
    onError: (error) => logger.warn(`the worker heartbeat failed: ${error.message}`) })
    .catch(async (error) => {
      await runner.stop(0).catch(() => {})
      await heartbeatPool.end().catch(() => {})
      throw error
    })
  return {
    promise: runner.promise,
    stop: async ({ graceMs }: { graceMs?: number } = {}) => {
      // The row goes first: a stopping worker takes no new job, so it no longer counts.
      await heartbeat.stop()
      await heartbeatPool.end().catch(() => {})
      await runner.stop(graceMs)
    },
  }
}
