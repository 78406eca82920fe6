import type { Task } from 'graphile-worker'

// Jobs queued by a release before the index store (payload: organizationId,
// documentId) become index_file jobs of the document, when it still waits.
export const indexDocument: Task = async (payload, helpers) => {
  const { organizationId, documentId } = payload as { organizationId: string; documentId: string }
  await helpers.query('select app.worker_requeue_document($1, $2)', [organizationId, documentId])
}
