import type { Task } from 'graphile-worker'

/**
 * The most runs' events started per transaction: each call commits its runs with the
 * events it marks drained. (Events no binding hears are marked drained whatever their
 * number: a batch row of thousands is one update.)
 */
export const DRAIN_BATCH = 100

// Turns the platform events waiting in the outbox into runs of the event triggers
// listening to them. A raise enqueues this task in its own transaction; the crontab
// runs it every minute too, so events whose drain job ran out of attempts still go
// out. Concurrent drains take disjoint events (app.events_drain), so none starts twice.
export const drainEvents: Task = async (_payload, helpers) => {
  let drained = 0
  for (;;) {
    const { rows: [result] } = await helpers.query<{ n: number }>('select app.events_drain($1) as n', [DRAIN_BATCH])
    const n = result?.n ?? 0
    drained += n
    if (n === 0) break
  }
  if (drained > 0) helpers.logger.debug(`drained ${drained} platform events`)
}
