import type { Task } from 'graphile-worker'
import type { ObjectStore } from '../../server/storage/object-store.ts'
import { requireStore } from './require-store.ts'

/** Uploads removed per batch; a preparation asks for one batch, the hourly sweep for all. */
export const SWEEP_BATCH = 500

// Uploads 24 hours past their deadline: the blobs never bound are removed from the
// store, then the records. A blob the store keeps keeps its record for the next
// sweep. With an organization in the payload one batch of it is swept (a
// preparation asked); without, every organization is swept to the end.
export const sweepExpiredUploads = (store: ObjectStore | null): Task => async (payload, helpers) => {
  const requested = (payload as { organizationId?: string }).organizationId
  const organizations = requested
    ? [requested]
    : (await helpers.query<{ id: string }>('select id from app.worker_organizations_with_lapsed_uploads() as id')).rows.map((r) => r.id)
  let forgotten = 0
  for (const organization of organizations) {
    for (;;) {
      const { rows } = await helpers.query<{ id: string; object_key: string; bound: boolean }>(
        'select id, object_key, bound from app.worker_lapsed_uploads($1, $2)', [organization, SWEEP_BATCH])
      if (rows.length === 0) break
      const unbound = rows.filter((r) => !r.bound).map((r) => r.object_key)
      const kept = new Set(unbound.length > 0 ? await requireStore(store).deleteMany(unbound) : [])
      const done = rows.filter((r) => !kept.has(r.object_key)).map((r) => r.id)
      const { rows: [result] } = await helpers.query<{ n: number }>('select app.worker_forget_uploads($1, $2) as n', [organization, done])
      forgotten += result?.n ?? 0
      if (kept.size > 0) throw new Error(`the object store kept ${kept.size} expired upload objects; retrying`)
      if (requested || rows.length < SWEEP_BATCH) break
    }
  }
  helpers.logger.debug(`swept ${forgotten} expired uploads`)
}
