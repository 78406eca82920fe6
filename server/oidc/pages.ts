// The issuer's own pages: the error page an authorization request lands on when it
// cannot go back to the client (an unknown client, a wrong redirect address), and the
// consent page of an explicit prompt=consent. Plain, accessible HTML that works
// without JavaScript, in the app's look (server/app/html.ts).
import { html, htmlReply, page, type Html } from '../app/html.ts'
import type { Reply } from '../routes/route.ts'

export function errorPage(error: string, description: string | undefined): string {
  return page('Sign-in request refused', html`
    <div class="error" role="alert">
      <p>The application's sign-in request cannot be completed.</p>
      <p><strong>${error}</strong>${description ? html`: ${description}` : ''}</p>
    </div>
    <p>Go back to the application and start signing in again. If this keeps happening,
      tell the application's administrator; the error above names the problem.</p>`)
}

export function expiredInteraction(): Reply {
  return htmlReply(400, page('Sign-in request expired', html`
    <div class="error" role="alert">This sign-in request has expired or was already completed.</div>
    <p>Go back to the application and start signing in again.</p>`))
}

const scopeWording: Record<string, string> = {
  openid: 'who you are (an identifier of your account)',
  email: 'your email address',
  profile: 'your name and picture',
  'tale:organization': 'your membership of the organization and your role in it',
}

export interface ConsentDetails {
  uid: string
  clientName: string
  organizationName: string
  scopes: string[]
  /** Where the answer goes afterwards (the client's redirect address), allowed as a form target. */
  redirectOrigin: string
}

export function consentPage(details: ConsentDetails, notice?: Html): Reply {
  const shared = details.scopes.filter((s) => s in scopeWording).map((s) => html`<li>${scopeWording[s]!}</li>`)
  return htmlReply(200, page(`Allow ${details.clientName}?`, html`
    ${notice ?? ''}
    <section aria-labelledby="consent-heading">
      <h2 id="consent-heading">${details.clientName}, an application of ${details.organizationName}, asks to know</h2>
      <ul>${shared}</ul>
      <form method="post" action="/app/interaction/${details.uid}">
        <button type="submit" name="decision" value="allow">Allow</button>
        <button type="submit" name="decision" value="deny" class="secondary">Deny</button>
      </form>
    </section>`), {
    // The answer is a redirect back to the client: the form may lead there.
    'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self' ${details.redirectOrigin}; frame-ancestors 'none'; base-uri 'none'`,
  })
}

// The headers of the app's pages (CSP, framing, caching), for the error page oidc-provider writes itself.
export const pageSecurityHeaders = htmlReply(200, '').headers!
