// A plain HTTP client that behaves as a browser does towards the app's pages: it keeps
// the cookies the service sets, sends its Origin on form posts, and does not follow
// redirects, so each answer can be checked.
import * as OTPAuth from 'otpauth'

export interface Page {
  status: number
  headers: Headers
  text: string
  location: string | null
}

export interface Browser {
  cookies: Map<string, string>
  get: (path: string) => Promise<Page>
  /** Posts a form; the Origin is the service's own unless given (null sends none). */
  post: (path: string, fields: Record<string, string>, origin?: string | null) => Promise<Page>
  /** A hidden or text input's value on a page. */
  field: (page: Page, name: string) => string
}

export function browser(base: string): Browser {
  const cookies = new Map<string, string>()
  const remember = (headers: Headers) => {
    for (const line of headers.getSetCookie()) {
      const [pair] = line.split(';')
      const at = pair!.indexOf('=')
      const name = pair!.slice(0, at)
      const value = pair!.slice(at + 1)
      if (value === '' || /max-age=0/i.test(line)) cookies.delete(name)
      else cookies.set(name, value)
    }
  }
  const send = async (method: string, path: string, body?: string, origin?: string | null): Promise<Page> => {
    const headers: Record<string, string> = {}
    if (cookies.size > 0) headers.cookie = [...cookies].map(([n, v]) => `${n}=${v}`).join('; ')
    if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded'
    if (origin !== null && method !== 'GET') headers.origin = origin ?? base
    const response = await fetch(base + path, { method, headers, body, redirect: 'manual' })
    remember(response.headers)
    return { status: response.status, headers: response.headers, text: await response.text(), location: response.headers.get('location') }
  }
  return {
    cookies,
    get: (path) => send('GET', path),
    post: (path, fields, origin) => send('POST', path, new URLSearchParams(fields).toString(), origin),
    field: (page, name) => {
      const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(page.text)
      if (!match) throw new Error(`no field ${name} on the page`)
      return match[1]!
    },
  }
}

/** The code an authenticator app would show now for a setup key. */
export function totpCode(secret: string, offsetSteps = 0): string {
  const totp = new OTPAuth.TOTP({ algorithm: 'SHA1', digits: 6, period: 30, secret: OTPAuth.Secret.fromBase32(secret) })
  return totp.generate({ timestamp: Date.now() + offsetSteps * 30_000 })
}
