// The token buckets of the Limits table. RATE_LIMIT_SCALE multiplies every budget
// (benchmarks raise it); the documented figures are scale 1. The buckets themselves
// live in PostgreSQL (app.take_tokens).
export interface Budget {
  name: string
  perMinute: number
  burst: number
}

export interface RateBudgets {
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
  const budget = (name: string, perMinute: number, burst: number): Budget =>
    ({ name, perMinute: perMinute * scale, burst: burst * scale })
  const unnamed = (perMinute: number, burst: number) => ({ perMinute: perMinute * scale, burst: burst * scale })
  return {
    general: budget('general', 120, 200),
    start: budget('start', 20, 40),
    files: budget('files', 240, 300),
    authFailures: unnamed(20, 40),
    webhookSender: unnamed(120, 240),
    webhookTrigger: unnamed(20, 40),
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
