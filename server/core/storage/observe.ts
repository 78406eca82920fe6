// What the server observes of the object store for an operation, in the shape the
// SQL functions read from args->'observed'.
import { ObjectStoreUnavailable, type ObjectStore } from './object-store.ts'

export type StoreState = 'reachable' | 'unreachable' | 'unconfigured'

export interface Observed extends Record<string, unknown> {
  objectStore: StoreState
  blob?: { size: number; etag: string | null } | null
}

/** Whether the store answers at all. */
export async function observeStore(store: ObjectStore | null): Promise<Observed> {
  if (!store) return { objectStore: 'unconfigured' }
  try {
    await store.ping()
    return { objectStore: 'reachable' }
  } catch (error) {
    if (error instanceof ObjectStoreUnavailable) return { objectStore: 'unreachable' }
    throw error
  }
}

/** Whether bytes are stored under key, and their size and ETag. */
export async function observeBlob(store: ObjectStore | null, key: string): Promise<Observed> {
  if (!store) return { objectStore: 'unconfigured' }
  try {
    const stored = await store.head(key)
    return { objectStore: 'reachable', blob: stored && { size: stored.size, etag: stored.etag } }
  } catch (error) {
    if (error instanceof ObjectStoreUnavailable) return { objectStore: 'unreachable' }
    throw error
  }
}
