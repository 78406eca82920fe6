// What the platform metrics learn from each answered request: the request log's own
// view (method, declared route, status, duration) plus the refusal it was answered
// with, which names a 429's budget and a refused webhook delivery's code.
import type { Route } from '../routes/route.ts'
import { RateLimitedError, type HttpError } from '../transport/errors.ts'
import type { PlatformMetrics } from './platform.ts'

export interface Answered {
  method: string
  route: string | null
  /** null when the connection closed before the answer was sent. */
  status: number | null
  seconds: number
  refusal: HttpError | undefined
}

export function requestObserver(platform: PlatformMetrics, routes: Route[]): (answered: Answered) => void {
  // Webhook URLs: the keyless POSTs whose path is a secret.
  const deliveries = new Set(routes.filter((route) => route.kind === 'keyless' && route.opaque && route.method === 'POST')
    .map((route) => route.path))
  return ({ refusal, ...answered }) => {
    platform.request({ ...answered, refusedBudget: refusal instanceof RateLimitedError ? refusal.budget : undefined })
    const delivery = answered.method === 'POST' && answered.route !== null && deliveries.has(answered.route)
    // Accepted deliveries are counted by the webhook route, which alone knows a duplicate.
    if (delivery && answered.status !== null && answered.status >= 400) platform.webhookRefused(refusal?.code ?? 'UNKNOWN')
  }
}
