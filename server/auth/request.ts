// What a request presents for authentication: the key (hashed here, never sent to
// the database in plaintext), the organization slug, the source address and the
// budgets the route draws on.
import type { IncomingMessage } from 'node:http'
import { HttpError } from '../transport/errors.ts'
import { hashApiKey } from './credentials.ts'
import { readCookie, requireSameOrigin, SESSION_COOKIE, sessionTokenHash } from './session.ts'
import type { Budget, RateBudgets } from './rate-budgets.ts'
import type { Bucket } from '../routes/route.ts'
import { clientAddress } from '../transport/client-address.ts'

export interface AuthRequest {
  keyHash: string | null
  /** The app's session cookie (hashed), on routes that take sessions instead of keys. */
  sessionHash?: string | null
  /** The organization a session request names (?orgId=). */
  orgId?: string | null
  /** A session request that may proceed before an organization's second-factor rule is met (setting one up). */
  mfaExempt?: boolean
  orgSlug: string | null
  source: string
  buckets: Budget[]
  authFailures: Omit<Budget, 'name'>
  /** A read writes nothing the caller must find after a crash (see app.handle). */
  read: boolean
  /** false: authenticate and check the budgets without spending them. */
  charge?: boolean
  /** RATE_LIMIT_SCALE, for the budgets an operation takes inside SQL; absent, 1. */
  rateScale?: number
}

const bearer = /^Bearer +(\S+) *$/i

export function authRequest(req: IncomingMessage, routeBuckets: Bucket[] | undefined, budgets: RateBudgets): AuthRequest {
  // x-api-key is refused even beside a valid Bearer header.
  if (req.headers['x-api-key'] !== undefined) {
    throw new HttpError(401, 'UNAUTHORIZED', 'Send the API key as Authorization: Bearer <API_KEY>; x-api-key is not accepted.')
  }
  const authorization = req.headers.authorization
  const match = authorization === undefined ? null : bearer.exec(authorization)
  if (authorization !== undefined && !match) {
    throw new HttpError(401, 'UNAUTHORIZED', 'Send the API key as Authorization: Bearer <API_KEY>.')
  }
  const slug = req.headers['x-organization-slug']
  return {
    keyHash: match?.[1] ? hashApiKey(match[1]) : null,
    orgSlug: typeof slug === 'string' ? slug : null,
    source: clientAddress(req),
    buckets: [budgets.general, ...(routeBuckets ?? []).map((name) => budgets[name])],
    authFailures: budgets.authFailures,
    read: req.method === 'GET' || req.method === 'HEAD',
    rateScale: budgets.scale,
  }
}

/**
 * What an app request presents: the session cookie, never an API key, and for a
 * state-changing request an Origin of the service's own.
 */
export function sessionAuthRequest(req: IncomingMessage, routeBuckets: Bucket[] | undefined, budgets: RateBudgets,
  publicBaseUrl: string, options: { mfaExempt?: boolean } = {}): AuthRequest {
  if (req.method !== 'GET' && req.method !== 'HEAD') requireSameOrigin(req, publicBaseUrl)
  const token = readCookie(req, SESSION_COOKIE)
  const url = new URL(req.url ?? '/', 'http://service')
  const named = url.searchParams.get('orgId')
  return {
    keyHash: null,
    // No cookie is an empty hash: authentication answers that the person must sign in.
    sessionHash: token ? sessionTokenHash(token) : '',
    // jsonb holds no NUL character: such a value names no organization, and is left
    // out here so that the query check answers it (400 INVALID_QUERY) instead of the
    // authentication statement failing on it.
    orgId: named !== null && !named.includes('\u0000') && named.isWellFormed() ? named : null,
    mfaExempt: options.mfaExempt ?? false,
    orgSlug: null,
    source: clientAddress(req),
    buckets: [budgets.general, ...(routeBuckets ?? []).map((name) => budgets[name])],
    authFailures: budgets.authFailures,
    read: req.method === 'GET' || req.method === 'HEAD',
    rateScale: budgets.scale,
  }
}
