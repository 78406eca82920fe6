import type { Task } from 'graphile-worker'

/** The crontab's own instant, which graphile-worker adds to every job it schedules. */
interface CronPayload {
  _cron?: { ts?: string }
}

// Starts every schedule trigger due at the minute the crontab scheduled this job for,
// not the minute a busy or late worker gets to it: the occurrence a schedule fires for
// and the firedAt its run carries belong to that minute. A tick repeated for a minute
// (pg_cron beside the crontab, several replicas) starts nothing twice (app.schedule_tick).
// Without the crontab's instant (a job added by hand) the tick runs at the database's now.
export const scheduleTick: Task = async (payload, helpers) => {
  const ts = (payload as CronPayload | null)?._cron?.ts
  const at = ts && !Number.isNaN(Date.parse(ts)) ? new Date(ts).toISOString() : null
  const { rows: [result] } = await helpers.query<{ started: number }>(
    'select app.schedule_tick($1::timestamptz) as started', [at])
  if ((result?.started ?? 0) > 0) helpers.logger.info(`started ${result!.started} scheduled runs`)
}
