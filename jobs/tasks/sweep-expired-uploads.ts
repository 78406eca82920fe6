import type { Task } from 'graphile-worker'

/** Uploads removed per batch; a preparation asks for one batch, the hourly sweep for all. */
export const SWEEP_BATCH = 500

// Uploads 24 hours past their deadline. Removing the rows purges the blobs never
// bound (a trigger enqueues their deletion). With an organization in the payload one
// batch of it is swept (a preparation asked); without, every organization to the end.
export const sweepExpiredUploads: Task = async (payload, helpers) => {
  const organization = (payload as { organizationId?: string }).organizationId ?? null
  let forgotten = 0
  for (;;) {
    const { rows: [result] } = await helpers.query<{ n: number }>(
      'select app.worker_forget_lapsed_uploads($1, $2) as n', [organization, SWEEP_BATCH])
    forgotten += result?.n ?? 0
    if (organization || (result?.n ?? 0) < SWEEP_BATCH) break
  }
  helpers.logger.debug(`swept ${forgotten} expired uploads`)
}
