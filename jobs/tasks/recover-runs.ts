import type { Task } from 'graphile-worker'

/** How long a running run may go without a committed step before it counts as orphaned. */
export const STALE_AFTER = '5 minutes'
/** How long past its run's deadline an agent turn may stay unanswered before its run fails. */
export const AGENT_GRACE = '1 minute'

// Runs whose worker died mid-step are queued again (the step in flight repeats); runs
// whose agent never answered in time fail with timeout.
export const recoverRuns: Task = async (_payload, helpers) => {
  const { rows: [result] } = await helpers.query<{ n: number }>('select app.worker_recover_runs($1::interval) as n', [STALE_AFTER])
  if ((result?.n ?? 0) > 0) helpers.logger.info(`queued ${result!.n} orphaned runs again`)
  const { rows: [expired] } = await helpers.query<{ n: number }>('select app.worker_expire_agent_turns($1::interval) as n', [AGENT_GRACE])
  if ((expired?.n ?? 0) > 0) helpers.logger.info(`failed ${expired!.n} runs whose agent did not answer in time`)
}
