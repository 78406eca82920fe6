// Browser sessions (/api/v1/browser-sessions): cookies and local storage operators
// import so the service can act in a signed-in browser (docs/skills.md). The import's
// values are sealed here, with BROWSER_SESSION_KEY, before the one SQL call: the
// database stores ciphertext and what may be shown (name, domains, cookie count,
// expiry), and no answer, refusals included, ever carries a value. The rules (the
// deploymentEditor capability, the missing key) are in db/functions/0151_browser_sessions.sql.
import { randomUUID } from 'node:crypto'
import * as v from 'valibot'
import type { Input, Route } from './route.ts'
import { uuidParam } from '../transport/validation.ts'
import { component } from '../openapi/components.ts'
import { limit } from '../core/limits.ts'
import { parseSealingKey, seal, sealingKeyId } from '../core/sealed.ts'

const MAX_COOKIES = limit('browserSession.maxCookies')
const NAME_MAX_UNITS = limit('browserSession.nameMaxUnits')
/** The latest instant a cookie may name, in seconds (JavaScript's largest date). */
const MAX_EXPIRES_SECONDS = 8_640_000_000_000

const timestamp = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))

export const browserSession = component('BrowserSession', v.strictObject({
  id: v.string(),
  name: v.string(),
  domains: v.pipe(v.array(v.string()), v.description('The cookies\' domains, lower-case without a leading dot, each once, sorted')),
  cookieCount: v.pipe(v.number(), v.integer()),
  expiresAt: v.pipe(v.nullable(timestamp), v.description('When its last cookie lapses; null when every cookie ends with the browser session')),
  createdBy: v.nullable(v.string()),
  createdAt: timestamp,
  revokedAt: v.pipe(v.nullable(timestamp), v.description('Set by a revocation, which erased its cookies')),
  revokedBy: v.nullable(v.string()),
}))

// Every message is fixed text: a refusal never repeats what was sent (valibot's
// defaults quote the value received), so no cookie or storage value leaves in an error.
const text = (max: number, what: string) => v.pipe(v.string('must be a string'), v.maxLength(max, `at most ${max} ${what}`))
const cookie = v.strictObject({
  name: v.pipe(text(256, 'characters'), v.minLength(1, 'must not be empty')),
  value: v.pipe(v.string('must be a string'), v.maxBytes(4096, 'at most 4096 bytes')),
  domain: v.pipe(v.string('must be a string'), v.check((d) => /^\.?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/.test(d)
    && d.length <= 254, 'must be a host name, optionally with a leading dot')),
  path: v.optional(v.pipe(text(1024, 'characters'), v.check((p) => p.startsWith('/'), 'must start with /')), '/'),
  expires: v.optional(v.pipe(v.number('must be a number'), v.check((n) => n === -1 || (n >= 0 && n <= MAX_EXPIRES_SECONDS),
    'must be -1 (a session cookie) or epoch seconds'),
  v.description('Epoch seconds, as browsers export cookies; -1 or absent: ends with the browser session'))),
  httpOnly: v.optional(v.boolean('must be true or false')),
  secure: v.optional(v.boolean('must be true or false')),
  sameSite: v.optional(v.picklist(['Strict', 'Lax', 'None'], 'must be Strict, Lax or None')),
}, 'must be a cookie object')

const importBody = v.strictObject({
  name: v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'must not be blank'),
    v.maxLength(NAME_MAX_UNITS, `at most ${NAME_MAX_UNITS} UTF-16 code units`)),
  cookies: v.pipe(v.array(cookie, 'must be a list of cookies'), v.minLength(1, 'at least one cookie'),
    v.maxLength(MAX_COOKIES, `at most ${MAX_COOKIES} cookies`)),
  localStorage: v.optional(v.pipe(
    v.record(v.string(), v.record(v.string(), v.string('must be a string'), 'must be an object of strings'), 'must be an object'),
    v.description('By origin (https://app.example.com), its items: key to value'))),
}, 'must be an object')

type ImportBody = v.InferOutput<typeof importBody>

/** The domains of the cookies as shown: lower-case, without a leading dot, each once, sorted. */
function domainsOf(body: ImportBody): string[] {
  return [...new Set(body.cookies.map((c) => c.domain.toLowerCase().replace(/^\./, '')))].sort()
}

/** When the last cookie with an expiry lapses, in epoch milliseconds; null when none has one. */
function expiresAtOf(body: ImportBody): number | null {
  const lapses = body.cookies.map((c) => c.expires ?? -1).filter((e) => e >= 0)
  return lapses.length === 0 ? null : Math.round(Math.max(...lapses) * 1000)
}

/**
 * The SQL function's arguments: what may be shown and the sealed values, never a value
 * itself. Without a key, `sealed` is null and SQL answers 503 (after the capability).
 */
export function importArgs(key: Buffer | null, input: Input): Record<string, unknown> {
  const body = input.body as ImportBody
  const id = randomUUID()
  const secrets = JSON.stringify({ cookies: body.cookies, localStorage: body.localStorage ?? {} })
  return {
    id, name: body.name, domains: domainsOf(body), cookieCount: body.cookies.length, expiresAt: expiresAtOf(body),
    sealed: key ? seal(key, secrets, `browser-session:${id}`).toString('base64') : null,
    keyId: key ? sealingKeyId(key) : null,
  }
}

const idParams = v.strictObject({ id: uuidParam })

export function browserSessionRoutes(configuredKey: string | undefined): Route[] {
  const key = configuredKey ? parseSealingKey(configuredKey) : null
  return [
    {
      kind: 'operation', method: 'GET', path: '/api/v1/browser-sessions', tag: 'BrowserSessions', operation: 'browser_sessions_list',
      family: 'unpaginated', summary: 'The organization\'s browser sessions, newest first, masked: never a cookie or storage value',
      response: v.strictObject({ browserSessions: v.array(browserSession) }),
    },
    {
      kind: 'operation', method: 'POST', path: '/api/v1/browser-sessions/import', tag: 'BrowserSessions',
      operation: 'browser_session_import',
      summary: 'Import a browser session\'s cookies (and local storage), sealed at rest; operators on the deployment allowlist '
        + '(deploymentEditor) only; 503 when the deployment has no BROWSER_SESSION_KEY',
      status: 201, errors: [400, 403, 503], body: importBody,
      args: (input) => importArgs(key, input),
      location: (body) => `/api/v1/browser-sessions/${body.browserSession.id}`,
      response: v.strictObject({ browserSession }),
    },
    {
      kind: 'operation', method: 'GET', path: '/api/v1/browser-sessions/:id', tag: 'BrowserSessions', operation: 'browser_session_get',
      summary: 'Read a browser session, masked', errors: [404], params: idParams, response: v.strictObject({ browserSession }),
    },
    {
      kind: 'operation', method: 'POST', path: '/api/v1/browser-sessions/:id/revoke', tag: 'BrowserSessions',
      operation: 'browser_session_revoke',
      summary: 'Revoke a browser session: its cookies are erased, its record stays; a revoked one answers as it is '
        + '(deploymentEditor only)',
      errors: [403, 404], params: idParams, response: v.strictObject({ browserSession }),
    },
  ]
}
