// An internal service's own job runner (graphile-worker), for when it runs alone: the
// indexing service takes index_file, the crawler crawl_website and index_file. The
// API's worker runs the same tasks with the same code; whichever takes a job first
// runs it, once. No crontab: a service's work all arrives as jobs.
import { Logger as GraphileLogger, type LogLevel, type TaskList } from 'graphile-worker'
import { startSupervisedRunner } from '../queue/supervised-runner.ts'
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
  /** transaction: connections go through a transaction pooler, so no named prepared statements. */
  poolMode?: PoolMode
}

const levels: Record<LogLevel, keyof Logger> = { error: 'error', warning: 'warn', info: 'info', debug: 'debug' }

export async function startJobRunner(databaseUrl: string, options: JobRunnerOptions): Promise<JobRunner> {
  const logger = new GraphileLogger((scope) => (level, message, meta) => {
    const fields: Record<string, unknown> = { component: options.component, ...scope }
    if (meta && typeof meta.error !== 'undefined') fields.error = meta.error
    options.log[levels[level] ?? 'info'](message, fields)
  })
  // Supervised: restarted after a database restart; a killed runner's jobs are released.
  const runner = await startSupervisedRunner(databaseUrl, {
    logger, poolSize: options.concurrency + 2, poolMode: options.poolMode,
    runner: { concurrency: options.concurrency, pollInterval: 1000, taskList: options.taskList, parsedCronItems: [],
      noPreparedStatements: options.poolMode === 'transaction' },
  })
  return { promise: runner.promise, stop: (graceMs?: number) => runner.stop(graceMs) }
}
