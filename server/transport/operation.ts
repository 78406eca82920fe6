// An API operation: authentication, the caller's budgets, organization selection
// and the SQL function, all in one statement and one round trip.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Sql } from '../core/db/connection.ts'
import { authRequest, sessionAuthRequest, type AuthRequest } from '../auth/request.ts'
import type { RateBudgets } from '../auth/rate-budgets.ts'
import type { HandlerRoute, Input, OperationRoute } from '../routes/route.ts'
import { HttpError, rateLimited } from './errors.ts'
import { readInput } from './input.ts'
import { writeReply } from './respond.ts'

export interface Outcome {
  /** The operation's JSON body as PostgreSQL wrote it, passed through unparsed. */
  body: string | null
  error: { code: string; status: number; message: string; data?: Record<string, unknown>; retryAfter?: number; budget?: string } | null
  /** The organization the caller acts in, once authenticated. */
  organizationId: string | null
}

/** The one statement a request sends: authentication, budgets and the operation. */
export async function callOperation(requests: Sql, auth: AuthRequest, operation: string | null, args: unknown): Promise<Outcome> {
  const [row] = await requests<Outcome[]>`
    select h.outcome->'error' as error, h.outcome->>'organizationId' as "organizationId",
           case when jsonb_typeof(h.outcome->'body') <> 'null' then (h.outcome->'body')::text end as body
      from app.handle(${requests.json(auth as never)}, ${operation}, ${args === null ? null : requests.json(args as never)}) as h(outcome)`
  return row!
}

export function operationServer(requests: Sql, budgets: RateBudgets, publicBaseUrl = 'http://localhost') {
  const call = (auth: AuthRequest, operation: string | null, args: unknown) => callOperation(requests, auth, operation, args)

  /** Authentication, budgets and organization selection alone; throws the refusal. */
  async function authenticate(req: IncomingMessage): Promise<void> {
    const outcome = await call(authRequest(req, undefined, budgets), null, null)
    if (outcome.error) throw refusal(outcome.error)
  }

  /** The request's input; a refusal of the key or the shape is thrown, the key's first. */
  async function accept(route: OperationRoute | HandlerRoute, req: IncomingMessage, auth: AuthRequest): Promise<Input> {
    // Without a key nothing is read: the 401 comes before any body is accepted.
    if (auth.keyHash === null && auth.sessionHash == null) {
      const outcome = await call(auth, null, null)
      throw refusal(outcome.error!)
    }
    const input = await readInput(route, req)
    if (!input.ok) {
      // Authentication decides first: an unauthenticated caller learns nothing of
      // shapes, and a refused request still spends its budget.
      const outcome = await call(auth, null, null)
      if (outcome.error) throw refusal(outcome.error)
      throw input.error
    }
    return input.value
  }

  async function serveOperation(route: OperationRoute, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const auth = route.auth === 'session' ? sessionAuthRequest(req, route.buckets, budgets, publicBaseUrl)
      : authRequest(req, route.buckets, budgets)
    const input = await accept(route, req, auth)
    const { params, query, body } = input
    // Path parameters last: a body can never redirect an operation to another resource.
    const args: Record<string, unknown> = route.args ? route.args(input) : { ...query, ...(body as object), ...params }
    if (route.observe) {
      // The object store is asked only for a caller who is authenticated and within
      // budget; this check spends nothing, the operation below pays.
      const checked = await call({ ...auth, charge: false }, null, null)
      if (checked.error) throw refusal(checked.error)
      args.observed = await route.observe(input, { organizationId: checked.organizationId! })
    }
    const outcome = await call(auth, route.operation, args)
    if (outcome.error) throw refusal(outcome.error)
    if (route.respond) {
      await route.respond(JSON.parse(outcome.body ?? '{}') as Record<string, unknown>, req, res)
      return
    }
    const headers: Record<string, string> = {}
    // The body is parsed only when the status or the Location depends on it.
    const parsed = outcome.body && (route.location || typeof route.status === 'function')
      ? JSON.parse(outcome.body) as Record<string, unknown> : null
    const location = parsed && route.location ? route.location(parsed, input) : undefined
    if (location) headers.location = location
    const status = typeof route.status === 'function' ? route.status(parsed ?? {}) : route.status ?? 200
    writeReply(req, res, status,
      outcome.body === null ? {} : { raw: outcome.body, contentType: 'application/json; charset=utf-8' }, headers)
  }

  async function serveHandler(route: HandlerRoute, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const auth = authRequest(req, undefined, budgets)
    const challenged = (error: unknown) => {
      if (route.challenge && error instanceof HttpError && error.status === 401) res.setHeader('www-authenticate', route.challenge)
      return error
    }
    const input = await accept(route, req, auth).catch((error: unknown) => { throw challenged(error) })
    const first = await call(auth, route.operation, {})
    if (first.error) throw challenged(refusal(first.error))
    const uncharged = { ...auth, charge: false }
    await route.handle(req, res, input, first.body === null ? null : JSON.parse(first.body),
      (operation, args) => call(uncharged, operation, args))
  }

  return { serveOperation, serveHandler, authenticate }
}

function refusal(error: NonNullable<Outcome['error']>): HttpError {
  const data = { ...(error.data ?? {}) }
  const retryAfter = error.retryAfter ?? (data.retryAfter as number | undefined)
  // A budget an operation spends in SQL (app.spend_user_budget) is named in data.
  const budget = error.budget ?? (data.budget as string | undefined)
  delete data.retryAfter
  delete data.budget
  if (error.status === 429) return rateLimited(retryAfter ?? 1, error.message, budget)
  return new HttpError(error.status, error.code, error.message, data)
}
