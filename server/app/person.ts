// Operations run for the person signed in to the app, through the same one statement
// as API requests (app.handle): the session stands where a key would, so policies,
// budgets and the organization's rules apply unchanged. The organization the pages
// show is the app's own choice (a cookie set by the switcher), never an API key's.
import type { IncomingMessage } from 'node:http'
import type { Sql } from '../core/db/connection.ts'
import type { Config } from '../core/config.ts'
import { rateBudgets } from '../auth/rate-budgets.ts'
import { sessionAuthRequest } from '../auth/request.ts'
import { readCookie } from '../auth/session.ts'
import { callOperation, type Outcome } from '../transport/operation.ts'

export const ORG_COOKIE = 'tale_app_org'

export type PersonCall = (req: IncomingMessage, operation: string, args?: Record<string, unknown>,
  options?: { mfaExempt?: boolean }) => Promise<{ body: Record<string, any> | null; error: Outcome['error'] }>

export function personCaller(requests: Sql, config: Config): PersonCall {
  const budgets = rateBudgets(config.RATE_LIMIT_SCALE)
  return async (req, operation, args = {}, options = {}) => {
    const auth = { ...sessionAuthRequest(req, undefined, budgets, config.publicBaseUrl, options), orgId: appOrganization(req) }
    const outcome = await callOperation(requests, auth, operation, args)
    return { body: outcome.body === null ? null : JSON.parse(outcome.body), error: outcome.error }
  }
}

/** The organization the app shows: the switcher's cookie, else the person's first. */
export function appOrganization(req: IncomingMessage): string | null {
  const chosen = readCookie(req, ORG_COOKIE)
  return chosen && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(chosen) ? chosen : null
}
