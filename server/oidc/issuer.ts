// The identity issuer at {PUBLIC_BASE_URL}/api/auth: oidc-provider (Koa) mounted under
// the prefix as a raw handler, behind the service's transport rules (request id,
// request log) but outside Polka's routing, since it parses its own requests.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type Provider from 'oidc-provider'
import type { Sql } from '../core/db/connection.ts'
import type { Logger } from '../core/log.ts'
import { buildProvider, loadOidcProvider, type OidcProviderModule } from './provider.ts'
import { publishedKeys } from './keys.ts'

export const ISSUER_PATH = '/api/auth'

// Endpoints by path under the issuer, for the request log (which names patterns,
// never URLs); anything else is logged as the prefix's wildcard.
const endpoints: [RegExp, string][] = [
  [/^\/\.well-known\/openid-configuration$/, '/.well-known/openid-configuration'],
  [/^\/oauth2\/authorize$/, '/oauth2/authorize'],
  [/^\/oauth2\/authorize\/[^/]+$/, '/oauth2/authorize/:uid'],
  [/^\/oauth2\/token$/, '/oauth2/token'],
  [/^\/oauth2\/userinfo$/, '/oauth2/userinfo'],
  [/^\/jwks$/, '/jwks'],
]

// Only these endpoints sign or publish: they read the published keys first, so a
// rotation by any process takes effect here at once.
const signing = /^\/(oauth2\/token|jwks)$/

export interface Issuer {
  prefix: string
  /** The log pattern of a path under the prefix. */
  pattern: (path: string) => string
  /** Serves a request whose path is under the prefix. */
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>
  /** The provider now serving (built on first use), for the interaction pages. */
  provider: () => Promise<Provider>
  /** The service's public address, once it listens (the issuer is that address plus the prefix). */
  listening: (publicBaseUrl: string) => void
}

export function createIssuer(requests: Sql, log: Logger): Issuer {
  let issuerUrl: URL | null = null
  type Serving = { provider: Provider; kids: string; serve: ReturnType<Provider['callback']> }
  let current: Serving | null = null
  let building: Promise<Serving> | null = null
  let loaded: Promise<OidcProviderModule> | null = null

  // A provider is built for a set of keys; a changed set (a rotation) builds a new one.
  async function serving(refresh: boolean): Promise<Serving> {
    if (!issuerUrl) throw new Error('the issuer serves once the service listens')
    if (current && !refresh) return current
    building ??= (async () => {
      try {
        loaded ??= loadOidcProvider(log)
        const oidc = await loaded
        const keys = await publishedKeys(requests)
        const kids = keys.map((k) => k.kid).join(' ')
        if (!current || current.kids !== kids) {
          const provider = buildProvider(oidc, issuerUrl!.href, keys, { requests, log })
          // Scheme and host come from the forwarded headers set in handle(), never a client's.
          provider.proxy = true
          current = { provider, kids, serve: provider.callback() }
        }
        return current
      } finally {
        building = null
      }
    })()
    return building
  }

  return {
    prefix: ISSUER_PATH,
    pattern: (path) => {
      const inner = path.slice(ISSUER_PATH.length)
      const found = endpoints.find(([test]) => test.test(inner))
      return `${ISSUER_PATH}${found ? found[1] : '/*'}`
    },
    provider: async () => (await serving(false)).provider,
    listening: (publicBaseUrl) => {
      issuerUrl = new URL(`${publicBaseUrl.replace(/\/+$/, '')}${ISSUER_PATH}`)
    },
    handle: async (req, res) => {
      const url = req.url ?? '/'
      const rest = url.slice(ISSUER_PATH.length)
      const inner = rest.startsWith('/') ? rest : `/${rest}`
      const { serve } = await serving(signing.test(inner.split('?')[0]!))
      // oidc-provider builds its URLs (discovery, redirects) from the request as a
      // mounted app sees it: the path under the prefix, the prefix in originalUrl,
      // and the issuer's own public scheme and host, whatever address the request
      // came through. Forwarded headers a client sent are not trusted.
      const mounted = req as IncomingMessage & { originalUrl?: string }
      mounted.originalUrl = url
      req.url = inner
      for (const name of ['x-forwarded-host', 'x-forwarded-for', 'x-forwarded-port', 'forwarded']) delete req.headers[name]
      req.headers.host = issuerUrl!.host
      req.headers['x-forwarded-proto'] = issuerUrl!.protocol.slice(0, -1)
      await serve(req, res)
    },
  }
}
