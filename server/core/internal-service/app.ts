// An internal service's HTTP application (the indexing service, the crawler): Polka
// routes behind the service's bearer token, 405 with Allow for a known path's other
// verbs, refusals as the error envelope (SQL's app.fail ones included) and never a
// stack, a request log line per request; and the routes every service has: /health,
// its /metrics/<name> behind METRICS_BEARER_TOKEN, /openapi.json and the /docs
// reference over the installed swagger-ui-dist.
import http, { type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import polka from 'polka'
import type { Registry } from 'prom-client'
import type { Sql } from '../db/connection.ts'
import type { Logger } from '../log.ts'
import type { JobRunner } from './runner.ts'
import { ServiceError, bearerMatches, fromDatabase, internalError, unauthorized, writeError, writeJson } from './http.ts'
import { DOCS_INIT, docAsset, docsPage } from './docs.ts'
import { drainer } from '../http-drain.ts'
import { arrivedAfterLastAnswer, lingerOnUnreadBody } from '../http-linger.ts'

export type ServiceRequest = IncomingMessage & { params?: Record<string, string>; routePattern?: string }
export type Handler = (req: ServiceRequest, res: ServerResponse) => Promise<void>

export interface ServiceRoute {
  method: 'GET' | 'POST' | 'DELETE'
  path: string
  /** Reachable without the service's token. */
  open?: boolean
  handle: Handler
}

export interface ServiceAppOptions {
  /** The name in request log lines (indexing, crawler). */
  name: string
  /** The bearer token every route but the open ones asks for; unset, none is asked. */
  token?: string
  requestTimeoutMs: number
  log: Logger
}

export function createServiceServer(routes: ServiceRoute[], options: ServiceAppOptions): http.Server {
  const { log } = options
  const known: { pattern: RegExp; path: string; allow: string }[] = []
  const byPath = new Map<string, ServiceRoute[]>()
  for (const route of routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route])
  const authorized = (req: IncomingMessage) => !options.token || bearerMatches(req.headers.authorization, options.token)

  const app = polka({
    onNoMatch: (req: IncomingMessage, res: ServerResponse) => {
      const path = (req.url ?? '/').split('?')[0]!
      const match = known.find((k) => k.pattern.test(path))
      if (match) {
        (req as ServiceRequest).routePattern = match.path
        // Any verb on a known path but its own, keyless so the shape of the service is no secret.
        writeError(res, new ServiceError(405, 'METHOD_NOT_ALLOWED', `${req.method} is not supported here.`, {}, { allow: match.allow }))
        return
      }
      if (!authorized(req)) return writeError(res, unauthorized())
      writeError(res, new ServiceError(404, 'NOT_FOUND', 'No such route.'))
    },
  })

  for (const [path, declared] of byPath) {
    const allowed = new Set<string>(declared.map((route) => route.method))
    if (allowed.has('GET')) allowed.add('HEAD')
    known.push({ pattern: new RegExp(`^${path.replace(/:[A-Za-z_]+/g, '[^/]+')}$`), path, allow: [...allowed].join(', ') })
    for (const route of declared) {
      const serve = (req: IncomingMessage, res: ServerResponse) => void serveRoute(route, req as ServiceRequest, res)
      app.add(route.method, path, serve)
      if (route.method === 'GET') app.add('HEAD', path, serve)
    }
  }

  async function serveRoute(route: ServiceRoute, req: ServiceRequest, res: ServerResponse): Promise<void> {
    req.routePattern = route.path
    try {
      if (!route.open && !authorized(req)) throw unauthorized()
      await route.handle(req, res)
    } catch (error) {
      const refusal = error instanceof ServiceError ? error : fromDatabase(error)
      if (refusal) {
        if (res.headersSent) return
        writeError(res, refusal)
        return
      }
      log.error(`${options.name} request failed`, { method: req.method, route: route.path, error })
      if (!res.headersSent) writeError(res, internalError())
      else res.destroy()
    }
  }

  return http.createServer({ requestTimeout: options.requestTimeoutMs, headersTimeout: Math.min(options.requestTimeoutMs, 60_000) }, (req, res) => {
    if (arrivedAfterLastAnswer(req)) return
    const started = performance.now()
    lingerOnUnreadBody(req, res)
    res.once('close', () => {
      log.info('request', {
        service: options.name, method: req.method, route: (req as ServiceRequest).routePattern ?? null, status: res.statusCode,
        durationMs: Math.round((performance.now() - started) * 10) / 10, ...(res.writableFinished ? {} : { aborted: true }),
      })
    })
    app.handler(req as never, res as never)
  })
}

export interface RunningServiceServer {
  url: string
  port: number
  close: () => Promise<void>
}

/** Running jobs get this long on shutdown before they are released to another worker. */
export const RUNNER_GRACE_MS = 5_000

/**
 * Listens with the service's app and owns its shutdown: without a token the service
 * answers anyone who reaches it, so it then listens on loopback only. Closing drains
 * the server (server/core/http-drain.ts: requests already accepted are answered),
 * gives the runner's jobs RUNNER_GRACE_MS, then ends the pool. A listen
 * that fails stops the runner and the pool before it throws.
 */
export async function startServiceServer(routes: ServiceRoute[], options: ServiceAppOptions & {
  port: number; runner: JobRunner | null; sql: Sql
}): Promise<RunningServiceServer> {
  const server = createServiceServer(routes, options)
  const drain = drainer(server)
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(options.port, options.token ? '0.0.0.0' : '127.0.0.1', () => resolve())
    })
  } catch (error) {
    await options.runner?.stop(0)
    await options.sql.end({ timeout: 5 })
    throw error
  }
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: async () => {
      await drain()
      await options.runner?.stop(RUNNER_GRACE_MS)
      await options.sql.end({ timeout: 5 })
    },
  }
}

/** A database that has not answered /health's probe by then counts as down. */
const HEALTH_TIMEOUT_MS = 3_000

export interface CommonRoutesOptions {
  sql: Sql
  /** /metrics/<name>, answered only with METRICS_BEARER_TOKEN (every scrape 401 when it is unset). */
  metricsName: string
  registry: Registry
  metricsToken?: string
  /** The reference page's title. */
  title: string
  /** The service's OpenAPI document, built on first request. */
  document: () => Record<string, unknown>
}

export function commonRoutes(options: CommonRoutesOptions): ServiceRoute[] {
  let document: Record<string, unknown> | undefined
  const page = docsPage(options.title)
  const raw = (res: ServerResponse, type: string, content: string | Buffer) => {
    res.statusCode = 200
    res.setHeader('content-type', type)
    res.setHeader('content-length', Buffer.byteLength(content))
    res.end(content)
  }
  const health: Handler = async (_req, res) => {
    let timer: NodeJS.Timeout | undefined
    const answers = await Promise.race([
      options.sql`select 1`.execute().then(() => true, () => false),
      new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), HEALTH_TIMEOUT_MS) }),
    ])
    clearTimeout(timer)
    writeJson(res, answers ? 200 : 503, { status: answers ? 'ok' : 'unavailable' })
  }
  const scrape: Handler = async (req, res) => {
    const token = options.metricsToken
    if (!token || !bearerMatches(req.headers.authorization, token)) throw unauthorized()
    const text = await options.registry.metrics()
    res.statusCode = 200
    res.setHeader('content-type', options.registry.contentType)
    res.setHeader('cache-control', 'no-store')
    res.end(text)
  }
  return [
    { method: 'GET', path: '/health', open: true, handle: health },
    // Its own bearer token (METRICS_BEARER_TOKEN), checked by the handler.
    { method: 'GET', path: `/metrics/${options.metricsName}`, open: true, handle: scrape },
    // Every other /metrics/ path asks for the same token before it says there is nothing
    // there, so while the token is unset each of them answers 401.
    {
      method: 'GET', path: '/metrics/:name', open: true,
      handle: async (req) => {
        if (!options.metricsToken || !bearerMatches(req.headers.authorization, options.metricsToken)) throw unauthorized()
        throw new ServiceError(404, 'NOT_FOUND', 'No such route.')
      },
    },
    { method: 'GET', path: '/openapi.json', open: true, handle: async (_req, res) => writeJson(res, 200, document ??= options.document()) },
    { method: 'GET', path: '/docs', open: true, handle: async (_req, res) => raw(res, 'text/html; charset=utf-8', page) },
    { method: 'GET', path: '/docs/init.js', open: true, handle: async (_req, res) => raw(res, 'text/javascript; charset=utf-8', DOCS_INIT) },
    {
      method: 'GET', path: '/docs/assets/:name', open: true,
      handle: async (req, res) => {
        const asset = await docAsset(req.params?.name ?? '')
        if (!asset) throw new ServiceError(404, 'NOT_FOUND', 'No such route.')
        raw(res, asset.type, asset.content)
      },
    },
  ]
}
