import type { Task } from 'graphile-worker'
import type { ObjectStore } from '../../server/core/storage/object-store.ts'
import { requireStore } from './require-store.ts'

// Objects of deleted files, folders and projects. The rows are gone already; a
// failure throws so the job is retried (deleting an absent object succeeds).
export const deleteObjects = (store: ObjectStore | null): Task => async (payload, helpers) => {
  const keys = (payload as { keys?: unknown }).keys
  if (!Array.isArray(keys) || !keys.every((key) => typeof key === 'string')) {
    helpers.logger.error('delete_objects: payload without a list of keys; dropped')
    return
  }
  const failed = await requireStore(store).deleteMany(keys)
  if (failed.length > 0) throw new Error(`the object store kept ${failed.length} of ${keys.length} objects; retrying`)
}
