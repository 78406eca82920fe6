import type { Task } from 'graphile-worker'

/** How long a running run may go without a committed step before it counts as orphaned. */
export const STALE_AFTER = '5 minutes'

// Runs whose worker died mid-step are queued again (the step in flight repeats).
export const recoverRuns: Task = async (_payload, helpers) => {
  const { rows: [result] } = await helpers.query<{ n: number }>('select app.worker_recover_runs($1::interval) as n', [STALE_AFTER])
  if ((result?.n ?? 0) > 0) helpers.logger.info(`queued ${result!.n} orphaned runs again`)
}
