// OAuth errors as the spec words them (SPEC "Errors", OAuth-style endpoints):
// {error, error_description} from token, authorization and userinfo. oidc-provider
// answers almost all of it already; the bends are here:
// - a response_type the issuer does not serve (unsupported_response_type) or the
//   client may not use (unauthorized_client) is invalid_request;
// - an error the authorization endpoint cannot send back to the client (unknown
//   client, wrong redirect address) is the issuer's own HTML page, never a redirect;
// - every other endpoint answers JSON even to a client that prefers HTML;
// - a path under the issuer that names no endpoint is a JSON 404.
import type { KoaContextWithOIDC } from 'oidc-provider'
import { errorPage, pageSecurityHeaders } from './pages.ts'

const renamed: Record<string, string> = { unsupported_response_type: 'invalid_request', unauthorized_client: 'invalid_request' }
const spec = (code: string): string => renamed[code] ?? code

type Out = { error: string; error_description?: string }

/** oidc-provider's renderError: the authorization endpoint's error page, JSON elsewhere. */
export async function renderError(ctx: KoaContextWithOIDC, out: Out): Promise<void> {
  const error = spec(out.error)
  if (ctx.oidc?.route === 'authorization' || ctx.oidc?.route === 'resume') {
    for (const [name, value] of Object.entries(pageSecurityHeaders)) ctx.set(name, value)
    ctx.type = 'text/html; charset=utf-8'
    ctx.body = errorPage(error, out.error_description)
    return
  }
  ctx.type = 'application/json; charset=utf-8'
  ctx.body = { error, ...(out.error_description === undefined ? {} : { error_description: out.error_description }) }
}

/** Koa middleware around every issuer request: the codes oidc-provider already wrote, renamed. */
export async function renameOAuthErrors(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
  await next()
  const location = ctx.response.get('location')
  if (location && /[?#&]error=(unsupported_response_type|unauthorized_client)\b/.test(location)) {
    const url = new URL(location)
    if (url.searchParams.has('error')) url.searchParams.set('error', spec(url.searchParams.get('error')!))
    if (url.hash) {
      const fragment = new URLSearchParams(url.hash.slice(1))
      if (fragment.has('error')) fragment.set('error', spec(fragment.get('error')!))
      url.hash = fragment.toString()
    }
    ctx.set('location', url.href)
    ctx.type = 'text/plain; charset=utf-8'
    ctx.body = `Redirecting to ${url.href}.`
    return
  }
  const body: unknown = ctx.body
  if (typeof body === 'string' && ctx.response.is('html')) {
    // response_mode=form_post carries the error in a hidden input.
    ctx.body = body.replace(/name="error" value="(unsupported_response_type|unauthorized_client)"/g, 'name="error" value="invalid_request"')
  } else if (body && typeof body === 'object' && typeof (body as Out).error === 'string') {
    // Exactly {error, error_description}: insufficient_scope's scope is in the challenge.
    const { error, error_description: description } = body as Out
    ctx.body = { error: spec(error), ...(description === undefined ? {} : { error_description: description }) }
  }
  if (ctx.status === 404 && (body === undefined || body === null)) {
    ctx.status = 404
    ctx.body = { error: 'invalid_request', error_description: 'no endpoint of the issuer at this path' }
  }
}
