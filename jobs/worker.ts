// The graphile-worker runner: in-process beside the API by default, or alone via
// `npm run worker`. Tasks are one file each under jobs/tasks.
import pg from 'pg'
import { run, type Logger, type Runner, type TaskList } from 'graphile-worker'
import type { ObjectStore } from '../server/core/storage/object-store.ts'
import { forgetIdleRateBuckets } from './tasks/forget-idle-rate-buckets.ts'
import { deleteObjects } from './tasks/delete-objects.ts'
import { sweepExpiredUploads } from './tasks/sweep-expired-uploads.ts'
import { purgeRetainedDocuments } from './tasks/purge-retained-documents.ts'
import { runAutomation } from './tasks/run-automation.ts'
import { recoverRuns } from './tasks/recover-runs.ts'
import { indexDocument } from './tasks/index-document.ts'

export function taskList(store: ObjectStore | null): TaskList {
  return {
    forget_idle_rate_buckets: forgetIdleRateBuckets,
    delete_objects: deleteObjects(store),
    sweep_expired_uploads: sweepExpiredUploads,
    purge_retained_documents: purgeRetainedDocuments,
    run_automation: runAutomation,
    recover_runs: recoverRuns,
    index_document: indexDocument(store),
  }
}

const crontab = [
  '*/15 * * * * forget_idle_rate_buckets ?max=1',
  '17 * * * * sweep_expired_uploads ?max=1',
  '23 * * * * purge_retained_documents ?max=1',
  '* * * * * recover_runs ?max=1',
].join('\n')

/** Batching settings of the worker, shared with the benchmark's floor. */
export const WORKER_PRESET = (concurrency: number) =>
  ({ localQueue: { size: concurrency + 1 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 })

export interface WorkerOptions {
  objectStore: ObjectStore | null
  concurrency?: number
  /** Without the crontab (tests run maintenance on demand). */
  crontab?: boolean
  logger?: Logger
}

export interface Worker {
  /** Finishes running jobs, then closes every connection. */
  stop: () => Promise<void>
  /** Settles when the worker has stopped. */
  promise: Promise<void>
}

export async function startWorker(connectionString: string, options: WorkerOptions): Promise<Worker> {
  // The worker's own pool: graphile-worker may still be connecting or unlistening
  // when its stop() resolves, and only ending the pool waits for every connection.
  const pool = new pg.Pool({ connectionString, max: (options.concurrency ?? 2) + 2 })
  // An idle connection that fails (a database restart) must not bring the process
  // down; the worker reconnects through the pool.
  const report = (error: Error) => options.logger?.error(`worker connection failed: ${error.message}`)
  pool.on('error', report)
  pool.on('connect', (client) => client.on('error', report))
  let runner: Runner
  try {
    const concurrency = options.concurrency ?? 2
    runner = await run({
      pgPool: pool, concurrency, taskList: taskList(options.objectStore),
      crontab: options.crontab === false ? '' : crontab, noHandleSignals: true, pollInterval: 1000,
      ...(options.logger ? { logger: options.logger } : {}),
      // Measured in BENCHMARKS.md: fetching jobs a batch at a time and completing them
      // together saves two round trips per job, which a run engine of short jobs feels.
      preset: { worker: WORKER_PRESET(concurrency) },
    })
  } catch (error) {
    await pool.end()
    throw error
  }
  return {
    promise: runner.promise,
    stop: async () => {
      await runner.stop()
      await pool.end()
    },
  }
}
