import type { Task } from 'graphile-worker'
import { buffer } from 'node:stream/consumers'
import { ObjectChanged, type ObjectStore } from '../../server/core/storage/object-store.ts'
import { requireStore } from './require-store.ts'

/** The largest plain-text file whose text the service keeps (the assistant's read limit). */
export const MAX_EXTRACTED_BYTES = 4 * 1024 * 1024

// Indexing of one document. Until the indexing service exists, plain-text types
// have their text extracted here and settle as `indexed` (or `failed` with the
// reason); other types stay `indexing`, queued for that service.
export const indexDocument = (store: ObjectStore | null): Task => async (payload, helpers) => {
  const { organizationId, documentId } = payload as { organizationId: string; documentId: string }
  const { rows: [document] } = await helpers.query<{ object_key: string; object_etag: string | null; plain_text: boolean }>(
    'select object_key, object_etag, plain_text from app.worker_document_to_index($1, $2)', [organizationId, documentId])
  // Deleted, or settled by an earlier run.
  if (!document) return
  if (!document.plain_text) {
    helpers.logger.info(`document ${documentId} awaits the indexing service`)
    return
  }
  const settle = (extracted: string | null, failure: string | null) =>
    helpers.query('select app.worker_document_indexed($1, $2, $3, $4)', [organizationId, documentId, extracted, failure])

  let stored
  try {
    stored = await requireStore(store).get(document.object_key, { ifMatch: document.object_etag ?? undefined })
  } catch (error) {
    if (error instanceof ObjectChanged) return void await settle(null, 'the stored bytes changed after binding')
    throw error
  }
  if (!stored) return void await settle(null, 'the stored bytes are missing')
  if (stored.object.size > MAX_EXTRACTED_BYTES) {
    stored.body.destroy()
    return void await settle(null, `text files over ${MAX_EXTRACTED_BYTES} bytes are not extracted`)
  }
  const bytes = await buffer(stored.body)
  let decoded: string
  try {
    decoded = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    return void await settle(null, 'the file is not UTF-8 text')
  }
  if (decoded.includes('\u0000')) return void await settle(null, 'the file holds NUL characters')
  await settle(decoded, null)
}
