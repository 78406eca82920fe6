// The token buckets of the Limits table. RATE_LIMIT_SCALE multiplies every budget
// (benchmarks raise it); the documented figures are scale 1.
export interface Budget {
  name: string
  perMinute: number
  burst: number
}

export interface RateBudgets {
  general: Budget
  start: Budget
  files: Budget
  authFailures: Omit<Budget, 'name'>
}

export function rateBudgets(scale = 1): RateBudgets {
  const budget = (name: string, perMinute: number, burst: number): Budget =>
    ({ name, perMinute: perMinute * scale, burst: burst * scale })
  return {
    general: budget('general', 120, 200),
    start: budget('start', 20, 40),
    files: budget('files', 240, 300),
    authFailures: { perMinute: 20 * scale, burst: 40 * scale },
  }
}
