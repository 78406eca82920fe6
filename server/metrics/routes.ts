// The API's /metrics/* paths: its own registries (platform, store) and the internal
// services' (rag, crawler) forwarded from their own endpoints, so one address serves
// every family. None takes an API key or spends a rate budget: each asks for
// METRICS_BEARER_TOKEN, compared in constant time, and answers 401 to everyone while
// the variable is unset, unknown /metrics/ paths included.
import type { IncomingMessage } from 'node:http'
import * as v from 'valibot'
import { bearerMatches } from '../core/internal-service/http.ts'
import type { KeylessRoute, Reply } from '../routes/route.ts'
import { HttpError } from '../transport/errors.ts'
import type { Registry } from 'prom-client'

/** The Prometheus text format's media type, as the document declares it. */
export const EXPOSITION_TYPE = 'text/plain; version=0.0.4'
/** A service that has not answered by then counts as unavailable (Prometheus itself gives up after 10 s by default). */
export const FORWARD_TIMEOUT_MS = 5_000

export interface MetricsSource {
  registry: Registry
  refresh: () => Promise<void>
}

export interface MetricsRoutesOptions {
  /** METRICS_BEARER_TOKEN; unset, every /metrics/* path answers 401. */
  token: string | undefined
  platform: MetricsSource
  store: MetricsSource
  /** Base URLs of the services whose /metrics/<name> the API forwards. */
  services: { rag: string; crawler: string }
}

const unauthorized = () => new HttpError(401, 'UNAUTHORIZED', 'Send Authorization: Bearer <METRICS_BEARER_TOKEN>.', {},
  { 'www-authenticate': 'Bearer' })

const sourceUnavailable = (source: string, reason: string, status?: number) => new HttpError(503, 'METRICS_SOURCE_UNAVAILABLE',
  `The ${source} metrics could not be read from their service: ${reason}.`, { source, ...(status === undefined ? {} : { status }) })

const exposition = (text: string, contentType: string): Reply => ({
  status: 200, raw: text, contentType,
  // Every scrape is a fresh reading: no ETag, nothing kept.
  headers: { 'cache-control': 'no-store' },
})

export function metricsRoutes(options: MetricsRoutesOptions): KeylessRoute[] {
  const guard = (req: IncomingMessage) => {
    const token = options.token
    if (!token || !bearerMatches(req.headers.authorization, token)) throw unauthorized()
  }
  const own = (source: MetricsSource) => async (req: IncomingMessage): Promise<Reply> => {
    guard(req)
    await source.refresh()
    return exposition(await source.registry.metrics(), source.registry.contentType)
  }
  const forwarded = (name: 'rag' | 'crawler') => async (req: IncomingMessage): Promise<Reply> => {
    guard(req)
    const url = new URL(`/metrics/${name}`, options.services[name])
    let answer: Response
    let text: string
    try {
      answer = await fetch(url, {
        headers: { authorization: `Bearer ${options.token}` }, redirect: 'manual', signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
      })
      text = await answer.text()
    } catch (error) {
      const reason = (error as Error).name === 'TimeoutError' ? `no answer within ${FORWARD_TIMEOUT_MS} ms` : 'unreachable'
      throw sourceUnavailable(name, reason)
    }
    if (answer.status !== 200) throw sourceUnavailable(name, `it answered ${answer.status}`, answer.status)
    return exposition(text, answer.headers.get('content-type') ?? EXPOSITION_TYPE)
  }

  const common = {
    kind: 'keyless', method: 'GET', tag: 'Metrics', security: 'metrics', produces: EXPOSITION_TYPE,
  } as const
  return [
    {
      ...common, path: '/metrics/platform', operationId: 'platformMetrics', errors: [401],
      summary: 'The API\'s metrics in Prometheus format: requests, rate-limit refusals, webhook deliveries, the job queue, runs, the Node process; bearer METRICS_BEARER_TOKEN (401 while it is unset)',
      handle: own(options.platform),
    },
    {
      ...common, path: '/metrics/store', operationId: 'storeMetrics', errors: [401],
      summary: 'The backend store\'s metrics in Prometheus format: connections, transactions, locks, replication lag, table bloat indicators, size; bearer METRICS_BEARER_TOKEN (401 while it is unset)',
      handle: own(options.store),
    },
    {
      ...common, path: '/metrics/rag', operationId: 'ragMetrics', errors: [401, 503],
      summary: 'The indexing service\'s metrics, read from it (503 METRICS_SOURCE_UNAVAILABLE when it does not answer); bearer METRICS_BEARER_TOKEN (401 while it is unset)',
      handle: forwarded('rag'),
    },
    {
      ...common, path: '/metrics/crawler', operationId: 'crawlerMetrics', errors: [401, 503],
      summary: 'The crawler service\'s metrics, read from it (503 METRICS_SOURCE_UNAVAILABLE when it does not answer); bearer METRICS_BEARER_TOKEN (401 while it is unset)',
      handle: forwarded('crawler'),
    },
    {
      // Declared after the named paths, which the router therefore matches first.
      ...common, path: '/metrics/:name', summary: 'Any other /metrics/ path', undocumented: true,
      params: v.strictObject({ name: v.string() }),
      handle: async (req) => {
        guard(req)
        throw new HttpError(404, 'NOT_FOUND', 'No such route.')
      },
    },
  ]
}
