// The token buckets of the Limits table, with their figures from db/limits.json
// (server/core/limits.ts). RATE_LIMIT_SCALE multiplies every budget (benchmarks raise
// it); the documented figures are scale 1. The buckets themselves live in PostgreSQL
// (app.take_tokens). Budgets an operation takes inside SQL (retry-indexing, cascading
// project deletes) read the same figures there, scaled by the scale each request
// carries (see authRequest).
import { limit } from '../core/limits.ts'

export interface Budget {
  name: string
  perMinute: number
  burst: number
}

export interface RateBudgets {
  /** RATE_LIMIT_SCALE: the factor every figure below is multiplied by. */
  scale: number
  /** Reads and CRUD, including MCP: every authenticated request. */
  general: Budget
  /** Starting work: automation runs, thread messages, task starts. */
  start: Budget
  /** Project file flow: uploads and files. */
  files: Budget
  /** Failed authentication, per source address. */
  authFailures: Omit<Budget, 'name'>
  /** Webhook deliveries per sender address, taken before the token is checked. */
  webhookSender: Omit<Budget, 'name'>
  /** Webhook deliveries per verified trigger. */
  webhookTrigger: Omit<Budget, 'name'>
}

export function rateBudgets(scale = 1): RateBudgets {
  const unnamed = (name: string) => ({
    perMinute: limit(`rate.${name}.perMinute`) * scale, burst: limit(`rate.${name}.burst`) * scale,
  })
  const budget = (name: string): Budget => ({ name, ...unnamed(name) })
  return {
    scale,
    general: budget('general'),
    start: budget('start'),
    files: budget('files'),
    authFailures: unnamed('authFailures'),
    webhookSender: unnamed('webhookSender'),
    webhookTrigger: unnamed('webhookTrigger'),
  }
}

export interface BucketSpec {
  key: string
  perMinute: number
  burst: number
}

/** The buckets a webhook delivery draws on, as app.take_tokens takes them. */
export function webhookBuckets(budgets: RateBudgets) {
  return {
    sender: (address: string): BucketSpec => ({ key: `webhook-sender:${address}`, ...budgets.webhookSender }),
    trigger: (triggerId: string): BucketSpec => ({ key: `webhook-trigger:${triggerId}`, ...budgets.webhookTrigger }),
  }
}
