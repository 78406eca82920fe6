// The trigger as reads show it (the trigger routes and every automation read): one
// shape per kind, with the binding's health.
import * as v from 'valibot'
import { component } from '../openapi/components.ts'

const timestamp = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))

const health = {
  lastFiredAt: v.nullable(timestamp),
  lastRunId: v.nullable(v.pipe(v.string(), v.description('The last run this binding started'))),
  lastSkippedAt: v.nullable(timestamp),
  lastSkipReason: v.nullable(v.picklist(['not_deployed', 'unusable_cron', 'start_refused', 'paused_after_failures'])),
  consecutiveFailures: v.pipe(v.number(), v.integer(), v.minValue(0),
    v.description('Consecutive failed runs with a counted failure code')),
  lastFailedAt: v.nullable(timestamp),
  lastFailureCode: v.nullable(v.string()),
  lastFailedRunId: v.nullable(v.string()),
  createdAt: timestamp,
  updatedAt: timestamp,
}

/** A bound trigger and its health, as the trigger routes and automation reads show it. */
export const trigger = component('Trigger', v.variant('kind', [
  v.strictObject({
    kind: v.literal('schedule'), enabled: v.boolean(), cron: v.string(),
    timezone: v.pipe(v.nullable(v.string()), v.description('IANA zone; null means UTC')),
    nextDueAt: v.pipe(v.nullable(timestamp), v.description('The next occurrence that starts a run')),
    ...health,
  }),
  v.strictObject({ kind: v.literal('webhook'), enabled: v.boolean(), ...health }),
  v.strictObject({ kind: v.literal('event'), enabled: v.boolean(), event: v.string(), ...health }),
]))
