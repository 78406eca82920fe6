import type { Task } from 'graphile-worker'
import type { ObjectStore } from '../../server/core/storage/object-store.ts'
import { indexFile, type Query } from '../../server/core/indexing/pipeline.ts'
import type { EmbeddingModel } from '../../server/core/indexing/embeddings.ts'

// Indexes one revision of a file (a project file, a hub document, a knowledge entry or
// an upload to the indexing service) through the pipeline the indexing service runs.
// A revision already settled or replaced is skipped; a dependency that is down throws
// and graphile-worker retries the job.
export const indexFileTask = (store: ObjectStore | null, embedder: EmbeddingModel | null = null): Task => async (payload, helpers) => {
  const { fileId, revision } = payload as { fileId: string; revision: number }
  const query: Query = async (text, params) => (await helpers.query(text, params)).rows as never
  const outcome = await indexFile({ query, store, embedder, log: {
    info: (message, fields) => helpers.logger.info(message, fields),
    warn: (message, fields) => helpers.logger.warn(message, fields),
  } }, fileId, revision)
  if (outcome.status === 'failed') helpers.logger.info(`file ${fileId} failed indexing: ${outcome.reason}`)
}
