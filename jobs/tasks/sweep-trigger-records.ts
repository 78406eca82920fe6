import type { Task } from 'graphile-worker'

// Webhook deliveries past both deduplication windows, and drained platform events
// past their keeping time, are forgotten so neither table grows without end.
export const sweepTriggerRecords: Task = async (_payload, helpers) => {
  const { rows: [result] } = await helpers.query<{ deliveries: number; events: number }>(
    'select app.webhook_deliveries_sweep() as deliveries, app.events_sweep() as events')
  helpers.logger.debug(`forgot ${result?.deliveries ?? 0} webhook deliveries and ${result?.events ?? 0} drained events`)
}
