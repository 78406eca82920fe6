// A person signed in to the app, for tests of the session routes (/api/app/...). The
// session is opened in SQL exactly as the sign-in page opens one after a right
// password (app.session_open), so these tests need no password or sign-in form.
import { randomBytes } from 'node:crypto'
import { hashApiKey } from '../../server/auth/credentials.ts'
import type { Response } from './service.ts'
import type { World } from './world.ts'

export interface SessionRequestOptions {
  body?: unknown
  headers?: Record<string, string>
  /** The Origin header; the service's own by default, none when null. */
  origin?: string | null
}

/** A signed-in person speaking to the service with the session cookie and, by default, the service's Origin. */
export interface SessionClient {
  userId: string
  token: string
  cookie: string
  get: (path: string, headers?: Record<string, string>) => Promise<Response>
  post: (path: string, body?: unknown, headers?: Record<string, string>) => Promise<Response>
  request: (method: string, path: string, options?: SessionRequestOptions) => Promise<Response>
}

type Signable = Pick<World, 'service' | 'seeded'>

/** Opens a complete (password and any second factor done) session for a seeded person. */
export async function signIn(w: Signable, email: string): Promise<SessionClient> {
  const userId = w.seeded.users[email]?.id
  if (!userId) throw new Error(`${email} was not seeded`)
  const token = randomBytes(32).toString('base64url')
  await w.service.db.owner`select app.session_open(${userId}, ${hashApiKey(token)}, false, null, null, null)`
  const cookie = `tale_session=${token}`
  const request = (method: string, path: string, options: SessionRequestOptions = {}) => {
    const headers: Record<string, string> = { cookie, ...options.headers }
    const origin = options.origin === undefined ? w.service.url : options.origin
    if (origin !== null) headers.origin = origin
    if (options.body !== undefined) headers['content-type'] ??= 'application/json'
    return w.service.request(method, path, { body: options.body, headers })
  }
  return {
    userId, token, cookie, request,
    get: (path, headers) => request('GET', path, { headers }),
    post: (path, body, headers) => request('POST', path, { body, headers }),
  }
}
