// The app's session cookie and the checks around it. The cookie holds 256 random bits;
// only their SHA-256 is stored (app.sessions), as with API keys. It is HttpOnly,
// SameSite=Lax, Secure unless the service is reached on loopback over plain HTTP, and
// rotated at every sign-in. Every state-changing app request must come from the
// service's own origin (the Origin header), which stops cross-site forgeries even
// where SameSite does not reach.
import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { hashApiKey } from './credentials.ts'
import { HttpError } from '../transport/errors.ts'

export const SESSION_COOKIE = 'tale_session'

export function newSessionToken(): string {
  return randomBytes(32).toString('base64url')
}

/** The stored form of a session token (hex SHA-256). */
export const sessionTokenHash = hashApiKey

export function readCookie(req: IncomingMessage, name: string): string | null {
  const header = req.headers.cookie
  if (!header) return null
  for (const part of header.split(';')) {
    const at = part.indexOf('=')
    if (at === -1) continue
    if (part.slice(0, at).trim() === name) {
      const value = part.slice(at + 1).trim()
      return /^[A-Za-z0-9_-]{20,100}$/.test(value) ? value : null
    }
  }
  return null
}

const loopback = (hostname: string) => hostname === 'localhost' || hostname === '127.0.0.1' || hostname === '[::1]' || hostname.endsWith('.localhost')

/** Whether the cookie may go without Secure: only for plain HTTP on loopback. */
export function insecureAllowed(publicBaseUrl: string): boolean {
  const url = new URL(publicBaseUrl)
  return url.protocol === 'http:' && loopback(url.hostname)
}

export function sessionCookie(token: string, publicBaseUrl: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${insecureAllowed(publicBaseUrl) ? '' : '; Secure'}`
}

export function clearedSessionCookie(publicBaseUrl: string): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${insecureAllowed(publicBaseUrl) ? '' : '; Secure'}`
}

/**
 * A state-changing app request must name the service's own origin in Origin: the
 * configured public address, or the host the request was sent to.
 */
export function requireSameOrigin(req: IncomingMessage, publicBaseUrl: string): void {
  const origin = req.headers.origin
  let host: string | null = null
  try {
    host = origin && origin !== 'null' ? new URL(origin).host : null
  } catch {
    host = null
  }
  if (host !== null && (host === new URL(publicBaseUrl).host || host === req.headers.host)) return
  throw new HttpError(403, 'ORIGIN_FORBIDDEN', origin
    ? 'This request comes from another site; it must be sent from the service\'s own pages.'
    : 'This request needs an Origin header naming the service\'s own address.')
}
