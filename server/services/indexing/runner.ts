// The indexing service's own job runner when it runs alone: index_file only, so
// uploads queued by app.index_accept are indexed with only this service running.
import type { EmbeddingModel } from '../../core/indexing/embeddings.ts'
import type { Task } from 'graphile-worker'
import type { ObjectStore } from '../../core/storage/object-store.ts'
import type { Logger } from '../../core/log.ts'
import { indexFile, type PipelineOutcome, type Query } from '../../core/indexing/pipeline.ts'
import { startJobRunner, type JobRunner } from '../../core/internal-service/runner.ts'
import type { PoolMode } from '../../core/db/connection.ts'

export interface RunnerOptions {
  store: ObjectStore | null
  concurrency: number
  log: Logger
  /** Embeds the service's own uploads. */
  embedder?: EmbeddingModel | null
  /** Each settled outcome of a job of this runner (the metrics count them). */
  onOutcome?: (outcome: PipelineOutcome) => void
  poolMode?: PoolMode
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

export function startRunner(databaseUrl: string, options: RunnerOptions): Promise<JobRunner> {
  return startJobRunner(databaseUrl, {
    taskList: { index_file: indexFileTask(options) }, concurrency: options.concurrency, log: options.log, component: 'indexing-runner',
    poolMode: options.poolMode,
  })
}
