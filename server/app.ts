// The HTTP application: the transport rules of every route (request ids, verbs,
// trailing slashes, size and time limits, the error envelope) around keyless
// endpoints and API operations, and mounted applications of their own (the identity issuer).
import http, { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import polka from 'polka'
import type { Sql } from './core/db/connection.ts'
import type { Config } from './core/config.ts'
import { HttpError, internalError, refusalOf, writeError } from './transport/errors.ts'
import { requestIdFor } from './transport/request-id.ts'
import { resolveClientAddress, trustedProxies } from './transport/client-address.ts'
import { writeReply } from './transport/respond.ts'
import { arrivedAfterLastAnswer, lingerOnUnreadBody } from './core/http-linger.ts'
import { operationServer } from './transport/operation.ts'
import { readInput } from './transport/input.ts'
import { REQUEST_TIMED_OUT } from './transport/json-body.ts'
import { opaqueNotFound } from './transport/not-found.ts'
import type { Route } from './routes/route.ts'
import { rateBudgets } from './auth/rate-budgets.ts'
import type { Logger } from './core/log.ts'

export const API_VERSION = '3.1.0'
const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const
export const MAX_HEADER_BYTES = 64 * 1024
export const MAX_URL_LENGTH = 8 * 1024

export interface AppDeps {
  config: Config
  requests: Sql
  routes: Route[]
  log: Logger
  mounts?: Mount[]
  /** Sees each request once answered or abandoned, as its log line does (the metrics count them). */
  observe?: (answered: {
    method: string; route: string | null; status: number | null; seconds: number; refusal: HttpError | undefined
  }) => void
}

/**
 * An application of its own under a path prefix (the identity issuer at /api/auth):
 * it gets the raw request after the transport rules (request id, request log, URI
 * length, one trailing slash), before Polka's routing, and answers it itself.
 */
export interface Mount {
  prefix: string
  /** The pattern the request log names for a path under the prefix (never the URL itself). */
  pattern: (path: string) => string
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>
}

type Request = IncomingMessage & {
  requestId: string; params?: Record<string, string>; acceptBody?: () => void
  /** The declared path the request matched (`/api/v1/projects/:id`), for the request log. */
  routePattern?: string
}

const carriesVersion = (path: string) => path === '/api/v1' || path.startsWith('/api/v1/')

export function createApp({ config, requests, routes, log, mounts = [], observe }: AppDeps): http.Server {
  const { serveOperation, serveHandler, authenticate } = operationServer(requests, rateBudgets(config.RATE_LIMIT_SCALE), config.publicBaseUrl)
  const timeoutMs = config.REQUEST_TIMEOUT_MS
  const proxies = trustedProxies(config.TRUSTED_PROXIES)

  // Paths and their verbs, so that any other verb on a known path answers 405.
  const byPath = new Map<string, Route[]>()
  for (const route of routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route])
  const known: { pattern: RegExp; allow: string; path: string }[] = []
  // Secret paths (webhook URLs): their path, and every path beneath the part before
  // the secret, answer any other verb with the same 404.
  const opaque = routes.filter((r) => r.kind === 'keyless' && r.opaque).map((r) => ({
    path: r.path,
    pattern: new RegExp(`^${r.path.replace(/\/:[A-Za-z_]+$/, '').replace(/:[A-Za-z_]+/g, '[^/]+')}(/.*)?$`),
    versioned: r.kind === 'keyless' && r.versioned === true,
  }))

  const app = polka({
    onNoMatch: async (req: IncomingMessage, res: ServerResponse) => {
      const { requestId } = req as Request
      const path = (req.url ?? '/').split('?')[0]!
      const secret = opaque.find((o) => o.pattern.test(path))
      if (secret) {
        (req as Request).routePattern = secret.path
        if (secret.versioned) res.setHeader('x-service-api-version', API_VERSION)
        writeError(res, opaqueNotFound(), requestId)
        return
      }
      if (carriesVersion(path)) res.setHeader('x-service-api-version', API_VERSION)
      const match = known.find((k) => k.pattern.test(path))
      if (match) {
        (req as Request).routePattern = match.path
        writeError(res, new HttpError(405, 'METHOD_NOT_ALLOWED', `${req.method} is not supported here.`, {}, { allow: match.allow }), requestId)
        return
      }
      try {
        // An unknown /api/v1 path (the removed chat-completions layer, say) is still
        // API scope: the key and the organization are checked before the 404.
        if (carriesVersion(path) && req.method !== 'OPTIONS') await authenticate(req)
        writeError(res, new HttpError(404, 'NOT_FOUND', 'No such route.'), requestId)
      } catch (error) {
        if (error instanceof HttpError) return writeError(res, error, requestId)
        log.error('request failed', { requestId, method: req.method, url: req.url, error })
        writeError(res, internalError(), requestId)
      }
    },
  })

  for (const [path, declared] of byPath) {
    if (declared.some((r) => r.kind === 'keyless' && r.opaque)) {
      // No 405 and no OPTIONS: other verbs reach onNoMatch and its opaque 404.
      for (const route of declared) app.add(route.method, path, (req: IncomingMessage, res: ServerResponse) => serveRoute(route, req as Request, res))
      continue
    }
    const allowed = new Set<string>(declared.map((r) => r.method))
    if (allowed.has('GET')) allowed.add('HEAD')
    allowed.add('OPTIONS')
    const allow = ALL_METHODS.filter((m) => allowed.has(m)).join(', ')
    known.push({ pattern: new RegExp(`^${path.replace(/:[A-Za-z_]+/g, '[^/]+')}$`), allow, path })

    for (const route of declared) {
      const serve = (req: IncomingMessage, res: ServerResponse) => serveRoute(route, req as Request, res)
      app.add(route.method, path, serve)
      if (route.method === 'GET') app.add('HEAD', path, serve)
    }
    // OPTIONS is keyless everywhere.
    app.add('OPTIONS', path, (req: IncomingMessage, res: ServerResponse) => {
      (req as Request).routePattern = path
      if (carriesVersion(path)) res.setHeader('x-service-api-version', API_VERSION)
      res.setHeader('allow', allow)
      res.statusCode = 204
      res.end()
    })
  }

  async function serveRoute(route: Route, req: Request, res: ServerResponse): Promise<void> {
    req.routePattern = route.path
    try {
      if (route.kind === 'keyless') {
        if (route.versioned) res.setHeader('x-service-api-version', API_VERSION)
        const input = await readInput(route, req)
        if (!input.ok) throw input.error
        const reply = await route.handle(req, input.value)
        writeReply(req, res, reply.status, { json: reply.body, raw: reply.raw, contentType: reply.contentType }, reply.headers)
        return
      }
      res.setHeader('x-service-api-version', API_VERSION)
      if (route.kind === 'handler') await serveHandler(route, req, res)
      else await serveOperation(route, req, res)
    } catch (error) {
      if (error instanceof HttpError) {
        writeError(res, error, req.requestId)
      } else {
        // A secret path's URL holds its token: the pattern is logged instead.
        const url = route.kind === 'keyless' && route.opaque ? route.path : req.url
        log.error('request failed', { requestId: req.requestId, method: req.method, url, error })
        if (!res.headersSent) writeError(res, internalError(), req.requestId)
        else res.destroy()
      }
    }
  }

  // The request each connection is serving, for refusals the HTTP parser raises.
  const serving = new WeakMap<Duplex, { req: Request; res: ServerResponse }>()

  const server = http.createServer({
    maxHeaderSize: MAX_HEADER_BYTES,
    // Headers plus body must arrive within timeoutMs of the request's first byte
    // (the clientError handler below gives the answers).
    headersTimeout: timeoutMs,
    requestTimeout: timeoutMs,
    connectionsCheckingInterval: Math.min(30_000, Math.max(50, Math.floor(timeoutMs / 4))),
  }, (incoming, res) => {
    const req = incoming as Request
    if (arrivedAfterLastAnswer(req)) return
    // Expect: 100-continue is answered only when a body is about to be read (see
    // readBody), so a refusal (413, 401, ...) comes before the client sends it.
    if (/^100-continue$/i.test(req.headers.expect ?? '')) {
      let sent = false
      req.acceptBody = () => {
        if (!sent && !res.headersSent) res.writeContinue()
        sent = true
      }
    }
    serving.set(req.socket, { req, res })
    lingerOnUnreadBody(req, res)
    req.requestId = requestIdFor(req.headers['x-request-id'])
    resolveClientAddress(req, proxies)
    logRequest(req, res)
    res.setHeader('x-request-id', req.requestId)
    const url = req.url ?? '/'
    const queryAt = url.indexOf('?')
    const path = queryAt === -1 ? url : url.slice(0, queryAt)
    if (url.length > MAX_URL_LENGTH) {
      if (carriesVersion(path)) res.setHeader('x-service-api-version', API_VERSION)
      writeError(res, new HttpError(414, 'URI_TOO_LONG', `The request URI exceeds ${MAX_URL_LENGTH} characters.`), req.requestId)
      return
    }
    // One trailing slash is tolerated.
    if (path.length > 1 && path.endsWith('/') && !path.endsWith('//')) {
      req.url = path.slice(0, -1) + (queryAt === -1 ? '' : url.slice(queryAt))
    }
    const mounted = (req.url ?? '/').split('?')[0]!
    const mount = mounts.find((m) => mounted === m.prefix || mounted.startsWith(`${m.prefix}/`))
    if (mount) {
      void serveMount(mount, mounted, req, res)
      return
    }
    app.handler(req as never, res as never)
  })

  async function serveMount(mount: Mount, path: string, req: Request, res: ServerResponse): Promise<void> {
    req.routePattern = mount.pattern(path)
    try {
      await mount.handle(req, res)
    } catch (error) {
      log.error('request failed', { requestId: req.requestId, method: req.method, url: req.routePattern, error })
      if (!res.headersSent) writeError(res, internalError(), req.requestId)
      else res.destroy()
    }
  }

  // One line per request once its answer is sent or its connection is gone: the
  // route's pattern rather than the URL, so lines group by operation and carry no
  // identifiers or query strings.
  function logRequest(req: Request, res: ServerResponse): void {
    const started = performance.now()
    res.once('close', () => {
      const organization = req.headers['x-organization-slug']
      const elapsedMs = performance.now() - started
      log.info('request', {
        method: req.method, route: req.routePattern ?? null, status: res.statusCode,
        durationMs: Math.round(elapsedMs * 10) / 10, requestId: req.requestId,
        ...(typeof organization === 'string' && organization !== '' ? { organization } : {}),
        ...(res.writableFinished ? {} : { aborted: true }),
      })
      observe?.({
        method: req.method ?? 'GET', route: req.routePattern ?? null, status: res.writableFinished ? res.statusCode : null,
        seconds: elapsedMs / 1000, refusal: refusalOf(res),
      })
    })
  }

  // Refusals of the HTTP parser. A request still arriving at the timeout whose body
  // the application is reading gets the REQUEST_TIMEOUT envelope; one already
  // answered is cut off; anything else gets the parser's bare answer (431 for
  // headers over the cap, 408 for headers late, 400 otherwise), with no request id,
  // envelope or version header since no request exists.
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    const current = serving.get(socket)
    const unfinished = current !== undefined && !current.req.complete
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT' && unfinished) {
      if (current.req.emit(REQUEST_TIMED_OUT)) return
      if (current.res.headersSent) {
        if (current.res.writableFinished) socket.destroy()
        else current.res.once('finish', () => socket.destroy())
        return
      }
    }
    const answered = current !== undefined && current.res.headersSent && (unfinished || !current.res.writableFinished)
    if (socket.writable && !answered && error.code !== 'ECONNRESET') {
      const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431
        : error.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW' ? 413
          : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
      socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\n\r\n`)
    }
    socket.destroy()
  })
  // Without a listener Node answers 100 Continue itself, before any check.
  server.on('checkContinue', (req, res) => server.emit('request', req, res))
  return server
}
