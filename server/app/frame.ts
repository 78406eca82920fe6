// What every settings page shares: the signed-in person (or the sign-in page for
// anyone else, and the second-factor setup where an organization requires one), the
// page chrome with the organization switcher, and refusals as pages.
import type { IncomingMessage } from 'node:http'
import type { Reply } from '../routes/route.ts'
import { HttpError } from '../transport/errors.ts'
import { html, htmlReply, page, redirect } from './html.ts'
import type { PersonCall } from './person.ts'

export interface Overview {
  person: { id: string; email: string; name: string }
  organization: { id: string; name: string; role: string; requireMfa: boolean }
  organizations: { id: string; name: string }[]
  capabilities: Record<string, boolean>
  totp: { enabled: boolean }
}

export type PageInput = { query: Record<string, unknown>; body: unknown }
export type PageHandler = (req: IncomingMessage, input: PageInput, overview: Overview) => Promise<Reply>

export function frame(asPerson: PersonCall) {
  /** Runs a page for a signed-in person: the sign-in page for anyone else. */
  const signedIn = (handler: PageHandler, options: { mfaExempt?: boolean } = {}) =>
    async (req: IncomingMessage, input: PageInput): Promise<Reply> => {
      let outcome: Awaited<ReturnType<PersonCall>>
      try {
        outcome = await asPerson(req, 'app_overview', {}, options)
      } catch (error) {
        if (error instanceof HttpError) return refusedPage(error.status, error.message)
        throw error
      }
      if (outcome.error) {
        if (outcome.error.status === 401) return redirect(`/app/sign-in?return=${encodeURIComponent(req.url ?? '/app/settings')}`)
        if (outcome.error.code === 'MFA_REQUIRED') return redirect('/app/settings/security?required=1')
        return refusedPage(outcome.error.status, outcome.error.message)
      }
      return handler(req, input, outcome.body as Overview)
    }
  const chrome = (o: Overview) => ({
    person: o.person.name || o.person.email,
    organizations: o.organizations.map((org) => ({ ...org, current: org.id === o.organization.id })),
  })
  return { signedIn, chrome }
}

export function refusedPage(status: number, message: string): Reply {
  return htmlReply(status, page('Not allowed', html`<div class="error" role="alert">${message}</div><p><a href="/app/settings">Back to the settings</a></p>`))
}
