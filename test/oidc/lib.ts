// A relying party of the identity issuer for tests: a registered client, openid-client
// configured against the running service's discovery, and a browser stand-in that
// follows the authorization's redirects by hand (fetch, redirect: 'manual') with a
// cookie jar, so the person's app session decides as it would in a browser.
import type { Test } from 'tap'
import * as client from 'openid-client'
import { world, type World, type WorldOptions } from '../lib/world.ts'
import { signIn, type SessionClient } from '../lib/session.ts'

export const REDIRECT_URI = 'http://127.0.0.1:9/callback'

/** Cookies as a browser keeps them: by name, sent where their path matches. */
export class CookieJar {
  private cookies = new Map<string, { value: string; path: string }>()

  constructor(initial: string[] = []) {
    for (const pair of initial) this.set(pair)
  }

  header(path: string): string {
    return [...this.cookies].filter(([, c]) => c.path === '/' || path === c.path || path.startsWith(`${c.path}/`))
      .map(([name, c]) => `${name}=${c.value}`).join('; ')
  }

  take(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';').map((part) => part.trim())
      const at = pair!.indexOf('=')
      const name = pair!.slice(0, at)
      const value = pair!.slice(at + 1)
      const path = attributes.find((a) => /^path=/i.test(a))?.slice(5) ?? '/'
      const gone = attributes.some((a) => /^max-age=0$/i.test(a) || (/^expires=/i.test(a) && new Date(a.slice(8)).getTime() < Date.now()))
      if (gone || value === '') this.cookies.delete(name)
      else this.cookies.set(name, { value, path })
    }
  }

  has(name: string): boolean {
    return this.cookies.has(name)
  }

  /** Sets a cookie for every path (the app's session cookie, name=value). */
  set(pair: string): void {
    const at = pair.indexOf('=')
    this.cookies.set(pair.slice(0, at), { value: pair.slice(at + 1), path: '/' })
  }
}

export interface Landing {
  /** The client's callback with its query (code, state, iss or error), when the browser got there. */
  callback?: URL
  /** Otherwise the page the browser stopped at. */
  status: number
  location?: string
  body: string
  url: URL
}

/** Follows redirects from url as a browser would, until the client's callback or a page that is not a redirect. */
export async function follow(start: URL | string, jar: CookieJar, init: { method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<Landing> {
  let url = new URL(start)
  let request = init
  for (let hop = 0; hop < 12; hop++) {
    const response = await fetch(url, {
      method: request.method ?? 'GET', body: request.body, redirect: 'manual',
      headers: { ...request.headers, cookie: jar.header(url.pathname) },
    })
    jar.take(response)
    const location = response.headers.get('location')
    if (response.status >= 300 && response.status < 400 && location) {
      const next = new URL(location, url)
      if (next.href.startsWith(REDIRECT_URI)) return { callback: next, status: response.status, location, body: await response.text(), url }
      url = next
      request = {}
      continue
    }
    return { status: response.status, body: await response.text(), url, location: location ?? undefined }
  }
  throw new Error(`too many redirects from ${start}`)
}

export interface Relying {
  w: World
  issuer: URL
  clientId: string
  clientSecret: string
  config: client.Configuration
  /** The organization's owner, signed in, who registered the client. */
  owner: SessionClient
  /** openid-client configured for another secret (a rotated one, say). */
  configure: (secret: string, auth?: 'basic' | 'post') => Promise<client.Configuration>
  /** Starts an authorization as openid-client builds it; PKCE, state and nonce are fresh. */
  start: (extra?: Record<string, string>) => Promise<{ url: URL; verifier: string; state: string; nonce: string }>
}

/** The acme world, with an application registered by acme's owner. */
export async function relyingParty(t: Test, options: WorldOptions = {}): Promise<Relying> {
  const w = await world(t, options)
  const owner = await signIn(w, 'olive@acme.test')
  const registered = await owner.post(`/api/app/identity/clients?orgId=${w.seeded.organizations.acme!.id}`,
    { key: 'portal', name: 'Acme Portal', redirectUri: REDIRECT_URI })
  if (registered.status !== 201) throw new Error(`registration answered ${registered.status}: ${registered.text}`)
  const { client_id: clientId, client_secret: clientSecret } = registered.body.client
  // The issuer is the service's public address: unset in tests, http://localhost:<port>.
  const issuer = new URL(`${w.service.url.replace('127.0.0.1', 'localhost')}/api/auth`)
  const configure = async (secret: string, auth: 'basic' | 'post' = 'basic') =>
    client.discovery(issuer, clientId, { redirect_uris: [REDIRECT_URI] },
      auth === 'basic' ? client.ClientSecretBasic(secret) : client.ClientSecretPost(secret), { execute: [client.allowInsecureRequests] })
  const config = await configure(clientSecret)
  return {
    w, issuer, clientId, clientSecret, config, owner, configure,
    start: async (extra = {}) => {
      const verifier = client.randomPKCECodeVerifier()
      const state = client.randomState()
      const nonce = client.randomNonce()
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: REDIRECT_URI, scope: 'openid profile email tale:organization',
        code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
        state, nonce, ...extra,
      })
      return { url, verifier, state, nonce }
    },
  }
}

/** A browser whose person is signed in to the app as email (a fresh session opened in SQL). */
export async function browserOf(rp: Relying, email: string): Promise<{ jar: CookieJar; person: SessionClient }> {
  const person = await signIn(rp.w, email)
  return { jar: new CookieJar([person.cookie]), person }
}

/** The whole code flow for a signed-in person: the authorization, then the code exchange. */
export async function codeFlow(rp: Relying, jar: CookieJar, extra: Record<string, string> = {}) {
  const started = await rp.start(extra)
  const landing = await follow(started.url, jar)
  if (!landing.callback) throw new Error(`the authorization stopped at ${landing.url} (${landing.status}): ${landing.body.slice(0, 300)}`)
  const tokens = await client.authorizationCodeGrant(rp.config, landing.callback,
    { pkceCodeVerifier: started.verifier, expectedState: started.state, expectedNonce: started.nonce, idTokenExpected: true })
  return { started, landing, tokens }
}

/** A bare token request, as a client would send it by hand. */
export async function tokenRequest(rp: Relying, body: Record<string, string>, headers: Record<string, string> = {}) {
  const response = await fetch(new URL(`${rp.issuer.href}/oauth2/token`), {
    method: 'POST', body: new URLSearchParams(body),
    headers: { authorization: `Basic ${Buffer.from(`${rp.clientId}:${rp.clientSecret}`).toString('base64')}`, ...headers },
  })
  return { status: response.status, headers: response.headers, body: await response.json().catch(() => null) as any }
}
