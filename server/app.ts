// The HTTP application: transport rules around every route, authentication and the
// operation in one SQL statement, the error envelope.
import http, { type IncomingMessage, type ServerResponse } from 'node:http'
import polka from 'polka'
import type { Sql } from './db/connection.ts'
import type { Config } from './config.ts'
import { HttpError, internalError, invalidBody, invalidQuery, rateLimited, writeError } from './transport/errors.ts'
import { DEFAULT_BODY_LIMIT, parseJsonBody, readBody } from './transport/json-body.ts'
import { parseQuery } from './transport/query.ts'
import { requestIdFor } from './transport/request-id.ts'
import { writeJson } from './transport/respond.ts'
import { check } from './transport/validation.ts'
import type { Input, OperationRoute, Route } from './routes/route.ts'
import { hashApiKey } from './auth/credentials.ts'
import { rateBudgets, type RateBudgets } from './auth/rate-budgets.ts'
import type { Logger } from './log.ts'

export const API_VERSION = '3.1.0'
const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const

export interface AppDeps {
  config: Config
  requests: Sql
  routes: Route[]
  log: Logger
}

interface Handled {
  requestId: string
}

export function createApp({ config, requests, routes, log }: AppDeps): http.Server {
  const budgets = rateBudgets(config.RATE_LIMIT_SCALE)
  const app = polka({
    onNoMatch: (req: IncomingMessage, res: ServerResponse) => {
      const { requestId } = req as IncomingMessage & Handled
      if (req.url?.startsWith('/api/v1/')) res.setHeader('x-service-api-version', API_VERSION)
      writeError(res, new HttpError(404, 'NOT_FOUND', 'No such route.'), requestId)
    },
  })

  const byPath = new Map<string, Route[]>()
  for (const route of routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route])

  for (const [path, declared] of byPath) {
    const allowed = new Set<string>(declared.map((r) => r.method))
    if (allowed.has('GET')) allowed.add('HEAD')
    allowed.add('OPTIONS')
    const allow = ALL_METHODS.filter((m) => allowed.has(m)).join(', ')

    for (const route of declared) {
      const serve = (req: IncomingMessage, res: ServerResponse) => serveRoute(route, req, res)
      app.add(route.method, path, serve)
      if (route.method === 'GET') app.add('HEAD', path, serve)
    }
    app.add('OPTIONS', path, (_req: IncomingMessage, res: ServerResponse) => {
      res.statusCode = 204
      res.setHeader('allow', allow)
      res.end()
    })
    for (const method of ALL_METHODS.filter((m) => !allowed.has(m))) {
      app.add(method, path, (req: IncomingMessage, res: ServerResponse) => {
        const { requestId } = req as IncomingMessage & Handled
        if (path.startsWith('/api/v1/')) res.setHeader('x-service-api-version', API_VERSION)
        writeError(res, new HttpError(405, 'METHOD_NOT_ALLOWED', `${method} is not supported here.`, {}, { allow }), requestId)
      })
    }
  }

  async function serveRoute(route: Route, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { requestId } = req as IncomingMessage & Handled
    try {
      if (route.kind === 'keyless') {
        const reply = await route.handle(req)
        writeJson(req, res, reply.status, reply.body, reply.headers)
        return
      }
      res.setHeader('x-service-api-version', API_VERSION)
      await serveOperation(route, req, res)
    } catch (error) {
      if (error instanceof HttpError) {
        writeError(res, error, requestId)
      } else {
        log.error('request failed', { requestId, method: req.method, url: req.url, error })
        if (!res.headersSent) writeError(res, internalError(), requestId)
        else res.destroy()
      }
    }
  }

  async function serveOperation(route: OperationRoute, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const auth = authRequest(req, route, budgets)
    const input = await readInput(route, req)
    if (!input.ok) {
      // Authentication decides first: an unauthenticated caller learns nothing of shapes.
      const outcome = await call(auth, null, null)
      if (outcome.error) throw refusal(outcome.error)
      throw input.error
    }
    const args = route.args ? route.args(input.value) : { ...input.value.params, ...input.value.query, ...(input.value.body as object) }
    const outcome = await call(auth, route.operation, args)
    if (outcome.error) throw refusal(outcome.error)
    const body = outcome.body ?? undefined
    const headers: Record<string, string> = {}
    if (route.location && body) headers.location = route.location(body as Record<string, unknown>)
    writeJson(req, res, route.status ?? 200, body, headers)
  }

  async function call(auth: AuthRequest, operation: string | null, args: unknown): Promise<Outcome> {
    const [row] = await requests<{ outcome: Outcome }[]>`
      select app.handle(${requests.json(auth as never)}, ${operation}, ${args === null ? null : requests.json(args as never)}) as outcome`
    return row!.outcome
  }

  const server = http.createServer({ maxHeaderSize: 64 * 1024 }, (req, res) => {
    const requestId = requestIdFor(req.headers['x-request-id'])
    ;(req as IncomingMessage & Handled).requestId = requestId
    res.setHeader('x-request-id', requestId)
    // One trailing slash is tolerated.
    const url = req.url ?? '/'
    const queryAt = url.indexOf('?')
    const path = queryAt === -1 ? url : url.slice(0, queryAt)
    if (path.length > 1 && path.endsWith('/') && !path.endsWith('//')) {
      req.url = path.slice(0, -1) + (queryAt === -1 ? '' : url.slice(queryAt))
    }
    app.handler(req as never, res as never)
  })
  return server
}

interface Outcome {
  ok?: boolean
  body?: unknown
  error?: { code: string; status: number; message: string; data?: Record<string, unknown>; retryAfter?: number }
}

function refusal(error: NonNullable<Outcome['error']>): HttpError {
  const data = { ...(error.data ?? {}) }
  const retryAfter = error.retryAfter ?? (data.retryAfter as number | undefined)
  delete data.retryAfter
  if (error.status === 429) return rateLimited(retryAfter ?? 1, error.message)
  return new HttpError(error.status, error.code, error.message, data)
}

interface AuthRequest {
  keyHash: string | null
  orgSlug: string | null
  source: string
  buckets: RateBudgets['general'][]
  authFailures: RateBudgets['authFailures']
}

function authRequest(req: IncomingMessage, route: OperationRoute, budgets: RateBudgets): AuthRequest {
  // x-api-key is refused even beside a valid Bearer header.
  if (req.headers['x-api-key'] !== undefined) {
    throw new HttpError(401, 'UNAUTHORIZED', 'Send the API key as Authorization: Bearer <API_KEY>; x-api-key is not accepted.')
  }
  const authorization = req.headers.authorization
  const match = authorization ? /^Bearer +(\S+) *$/i.exec(authorization) : null
  if (authorization !== undefined && !match) {
    throw new HttpError(401, 'UNAUTHORIZED', 'Send the API key as Authorization: Bearer <API_KEY>.')
  }
  const slugHeader = req.headers['x-organization-slug']
  return {
    keyHash: match?.[1] ? hashApiKey(match[1]) : null,
    orgSlug: typeof slugHeader === 'string' ? slugHeader : null,
    source: req.socket.remoteAddress ?? 'unknown',
    buckets: [budgets.general, ...(route.buckets ?? []).map((name) => budgets[name])],
    authFailures: budgets.authFailures,
  }
}

async function readInput(route: OperationRoute, req: IncomingMessage & { params?: Record<string, string> }):
  Promise<{ ok: true; value: Input } | { ok: false; error: HttpError }> {
  try {
    const url = req.url ?? '/'
    const queryAt = url.indexOf('?')
    const rawQuery = parseQuery(queryAt === -1 ? '' : url.slice(queryAt + 1), req.method ?? 'GET')
    const params = route.params ? check(route.params, req.params ?? {}) : { ok: true as const, value: {} }
    // A malformed identifier cannot name anything the caller may see.
    if (!params.ok) return { ok: false, error: new HttpError(404, 'NOT_FOUND', 'Not found.') }
    let query: Record<string, unknown> = {}
    if (route.query) {
      const checked = check(route.query, rawQuery)
      if (!checked.ok) return { ok: false, error: invalidQuery('Invalid query parameters.', checked.issues) }
      query = checked.value as Record<string, unknown>
    } else if (Object.keys(rawQuery).length > 0) {
      const name = Object.keys(rawQuery)[0]!
      return { ok: false, error: invalidQuery(`Unknown query parameter "${name}".`, [{ path: name, message: 'unknown parameter' }]) }
    }
    let body: unknown
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      const raw = await readBody(req, route.bodyLimit ?? DEFAULT_BODY_LIMIT)
      const parsed = parseJsonBody(raw)
      if (route.body) {
        const checked = check(route.body, parsed === undefined ? {} : parsed)
        if (!checked.ok) return { ok: false, error: invalidBody(describe(checked.issues), checked.issues) }
        body = checked.value
      } else if (parsed !== undefined) {
        return { ok: false, error: invalidBody('This operation takes no body.', [{ path: '', message: 'unexpected body' }]) }
      }
    }
    return { ok: true, value: { params: params.value as Record<string, unknown>, query, body } }
  } catch (error) {
    if (error instanceof HttpError && error.status === 400) return { ok: false, error }
    throw error
  }
}

function describe(issues: { path: string; message: string }[]): string {
  const first = issues[0]
  if (!first) return 'Invalid body.'
  return first.path ? `Invalid body at "${first.path}": ${first.message}` : `Invalid body: ${first.message}`
}
