import type { Task } from 'graphile-worker'

// Rate buckets idle for an hour are full again; dropping them keeps the table small.
export const forgetIdleRateBuckets: Task = async (_payload, helpers) => {
  const { rows } = await helpers.query<{ forgotten: number }>('select app.forget_idle_rate_buckets() as forgotten')
  helpers.logger.debug(`forgot ${rows[0]?.forgotten ?? 0} idle rate buckets`)
}
