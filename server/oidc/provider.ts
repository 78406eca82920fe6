// The issuer's oidc-provider, configured to the spec (SPEC "Identity issuer"): the
// authorization code flow only, S256 PKCE required, client_secret_basic or _post,
// RS256 ID tokens, no dynamic registration, implicit grant or refresh tokens, codes
// and tokens valid for issuer.tokenLifetimeSeconds. Where oidc-provider's behaviour
// differs from the spec it is bent here, each bend saying why.
import { createHash, timingSafeEqual } from 'node:crypto'
import type Provider from 'oidc-provider'
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider'
import type { Sql } from '../core/db/connection.ts'
import type { Logger } from '../core/log.ts'
import { limit } from '../core/limits.ts'
import { adapterFor } from './adapter.ts'
import { amrFor, issuerAccount, provedMfa, sessionHolder } from './account.ts'
import { renameOAuthErrors, renderError } from './errors.ts'
import { SIGNING_ALG, type SigningKey } from './keys.ts'

export const SCOPES = ['openid', 'profile', 'email', 'tale:organization']
export const INTERACTION_PATH = '/app/interaction'

export interface ProviderDeps {
  requests: Sql
  log: Logger
}

export type OidcProviderModule = typeof import('oidc-provider')

/**
 * oidc-provider, loaded on first use. It prints notices with console.warn when it
 * loads (a Node version it does not list, for one); they become lines of the
 * service's JSON log instead of raw text on stderr.
 */
export async function loadOidcProvider(log: Logger): Promise<OidcProviderModule> {
  const { warn, info } = console
  const relay = (level: 'warn' | 'info') => (...parts: unknown[]) => log[level](parts.map(String).join(' ').replace(/\x1b\[[0-9;]*m/g, ''))
  console.warn = relay('warn')
  console.info = relay('info')
  try {
    return await import('oidc-provider')
  } finally {
    console.warn = warn
    console.info = info
  }
}

export function buildProvider(oidc: OidcProviderModule, issuer: string, keys: SigningKey[], { requests, log }: ProviderDeps): Provider {
  const { default: Provider, interactionPolicy } = oidc
  const lifetime = limit('issuer.tokenLifetimeSeconds')
  const sessionLifetime = limit('session.lifetimeSeconds')

  const policy = interactionPolicy.base()
  // The client's organization decides, at every authorization: a person who is not an
  // active member (or lacks the organization's second factor, or a verified email)
  // is refused with access_denied, silently (prompt=none) or on the interaction page.
  policy.get('consent')!.checks.add(new interactionPolicy.Check('organization_access',
    'the client\'s organization does not admit this sign-in', 'access_denied', async (ctx) => {
      const { session, client } = ctx.oidc
      if (!session?.accountId || !client) return interactionPolicy.Check.NO_NEED_TO_PROMPT
      const account = await issuerAccount(requests, client.clientId, session.accountId, provedMfa(session.amr))
      return 'refused' in account ? interactionPolicy.Check.REQUEST_PROMPT : interactionPolicy.Check.NO_NEED_TO_PROMPT
    }), 0)

  const configuration: Configuration = {
    adapter: adapterFor(requests),
    jwks: { keys },
    // Tokens carry acr "0" (no stronger context is asserted), and discovery advertises
    // exactly that value, never a URN (SPEC Versioning, item 5).
    acrValues: ['0'],
    claims: {
      // acr is an openid claim, so every ID token carries it (oidc-provider otherwise
      // emits it only when a client asks); sid is never issued (no logout features).
      acr: null, auth_time: null, iss: null, sid: false as never,
      openid: ['sub', 'acr'],
      email: ['email', 'email_verified'],
      profile: ['name', 'given_name', 'family_name', 'picture'],
      'tale:organization': ['organization'],
    },
    scopes: SCOPES,
    // oidc-provider names no prompts in discovery; the spec has it name these three.
    discovery: { prompt_values_supported: ['none', 'login', 'consent'] },
    responseTypes: ['code'],
    clientAuthMethods: ['client_secret_basic', 'client_secret_post'],
    enabledJWA: { idTokenSigningAlgValues: [SIGNING_ALG] },
    pkce: { required: () => true },
    // The spec: ID token claims equal what userinfo returns (oidc-provider would
    // otherwise keep scope claims out of an ID token issued beside an access token).
    conformIdTokenClaims: false,
    // OpenID Connect asks for redirect_uri on every authorization request.
    allowOmittingSingleRegisteredRedirectUri: false,
    features: {
      devInteractions: { enabled: false },
      dPoP: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      resourceIndicators: { enabled: false },
      registration: { enabled: false },
      revocation: { enabled: false },
      introspection: { enabled: false },
      userinfo: { enabled: true },
    },
    routes: { authorization: '/oauth2/authorize', token: '/oauth2/token', userinfo: '/oauth2/userinfo', jwks: '/jwks' },
    ttl: {
      AuthorizationCode: lifetime, AccessToken: lifetime, IdToken: lifetime,
      Interaction: 60 * 60, Session: sessionLifetime, Grant: sessionLifetime,
    },
    cookies: {
      names: { session: 'tale_oidc_session', interaction: 'tale_oidc_interaction', resume: 'tale_oidc_resume' },
      long: { httpOnly: true, sameSite: 'lax', path: new URL(issuer).pathname },
      short: { httpOnly: true, sameSite: 'lax' },
    },
    interactions: { policy, url: (_ctx, interaction) => `${INTERACTION_PATH}/${interaction.uid}` },
    findAccount: async (ctx, sub, token) => {
      // At the authorization endpoint the person is the app session's (see the bridge
      // below) and access is decided by the organization_access check.
      if (!token) return { accountId: sub, claims: async () => ({ sub }) }
      // Before a code is exchanged and when userinfo is read, membership and the
      // second-factor rule are decided again; undefined refuses (invalid_grant,
      // invalid_token).
      const mfa = token.kind === 'AccessToken'
        ? (token as { extra?: { mfa?: unknown } }).extra?.mfa === true
        : provedMfa((token as { amr?: unknown }).amr)
      const account = await issuerAccount(requests, token.clientId!, sub, mfa)
      if ('refused' in account) {
        log.info('issuer refused a token', { reason: account.refused, clientId: token.clientId })
        return undefined
      }
      // acr "0" in userinfo too, so the ID token's claims and userinfo's are the same set.
      return { accountId: sub, claims: async () => ({ ...account.claims, acr: '0' }) }
    },
    // An access token remembers whether its sign-in proved a second factor, for the
    // recheck at userinfo (stored with the token, never shown to the client).
    extraTokenClaims: async (ctx, token) => (token.kind === 'AccessToken'
      ? { mfa: provedMfa(ctx.oidc.entities.AuthorizationCode?.amr) } : undefined),
    // Consent is implicit for the client's own organization: the scopes asked for are
    // granted (an explicit prompt=consent still shows the consent page).
    loadExistingGrant: async (ctx) => {
      const client = ctx.oidc.client!
      const session = ctx.oidc.session!
      const accountId = session.accountId!
      const grantId = ctx.oidc.result?.consent?.grantId ?? session.grantIdFor(client.clientId)
      const found = grantId ? await ctx.oidc.provider.Grant.find(grantId) : undefined
      const grant = found && found.accountId === accountId ? found : new ctx.oidc.provider.Grant({ accountId, clientId: client.clientId })
      const granted = new Set(grant.getOIDCScope().split(' '))
      const missing = [...ctx.oidc.requestParamOIDCScopes].filter((scope) => !granted.has(scope))
      if (missing.length > 0 || !grant.jti) {
        grant.addOIDCScope(missing)
        await grant.save()
      }
      return grant
    },
    renderError,
    // Clients keep a secret, so they run on servers: no browser calls the token or
    // userinfo endpoints from another origin (discovery and jwks stay readable by all).
    clientBasedCORS: () => false,
  }

  const provider = new Provider(issuer, configuration)
  provider.on('server_error', (_ctx: KoaContextWithOIDC, error: unknown) => log.error('issuer failed', { error }))
  // Koa's own listener would print to stderr; failures go to the service log instead.
  ;(provider as unknown as { on: (event: 'error', listener: (error: unknown) => void) => void })
    .on('error', (error) => log.error('issuer failed', { error }))
  provider.use(renameOAuthErrors)

  // Only the SHA-256 of a client secret is stored (app.issuer_client hands it over as
  // client_secret), so the secret a client presents is hashed before the comparison.
  const clients = provider.Client.prototype as unknown as { compareClientSecret: (actual: string) => Promise<boolean>; clientSecret: string }
  clients.compareClientSecret = async function compareClientSecret(this: { clientSecret: string }, actual: string) {
    const presented = createHash('sha256').update(actual, 'utf8').digest()
    const stored = Buffer.from(this.clientSecret, 'hex')
    return stored.length === presented.length && timingSafeEqual(stored, presented)
  }

  bridgeAppSession(provider, requests)
  return provider
}

/**
 * The app's sign-in is the issuer's (DESIGN "Sessions"): whenever oidc-provider loads
 * its session for an authorization, the session is made to name the person of the
 * app's session cookie, or nobody. A person signed in to the app is therefore signed
 * in to the issuer too (prompt=none succeeds at once), signing out of the app signs
 * out of the issuer, and another person signing in starts a new issuer session.
 */
function bridgeAppSession(provider: Provider, requests: Sql): void {
  type Session = Awaited<ReturnType<typeof provider.Session.get>> & { touched?: boolean; authorizations?: unknown; new?: boolean }
  const Session = provider.Session as unknown as { get: (ctx: KoaContextWithOIDC) => Promise<Session> }
  const load = Session.get.bind(Session)
  Session.get = async (ctx) => {
    const session = await load(ctx)
    const holder = await sessionHolder(requests, ctx.req)
    const mfa = provedMfa(session.amr)
    if (holder && (session.accountId !== holder.userId || mfa !== holder.mfa)) {
      if (session.accountId !== holder.userId) {
        // Another person: nothing of the previous one's carries over.
        if (!session.new) session.resetIdentifier()
        session.authorizations = undefined
      }
      session.loginAccount({ accountId: holder.userId, acr: '0', amr: amrFor(holder.mfa), transient: true })
      session.touched = true
    } else if (!holder && session.accountId) {
      if (!session.new) session.resetIdentifier()
      for (const field of ['accountId', 'acr', 'amr', 'loginTs', 'authorizations'] as const) delete (session as unknown as Record<string, unknown>)[field]
      session.touched = true
    }
    return session
  }
}
