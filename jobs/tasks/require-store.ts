import type { ObjectStore } from '../../server/core/storage/object-store.ts'

/** Jobs about objects wait (by failing and retrying) until a store is configured. */
export function requireStore(store: ObjectStore | null): ObjectStore {
  if (!store) throw new Error('no object store is configured; the job will be retried')
  return store
}
