// The issuer's interaction page (/app/interaction/:uid), where oidc-provider sends an
// authorization that needs the person: signed in through the app's own sign-in page,
// admitted by the client's organization, and (on an explicit prompt=consent) asked.
// Every answer is a redirect back into the authorization, or a plain page.
import { ServerResponse, type IncomingMessage } from 'node:http'
import * as v from 'valibot'
import type Provider from 'oidc-provider'
import type { Sql } from '../core/db/connection.ts'
import type { Config } from '../core/config.ts'
import type { KeylessRoute, Reply } from '../routes/route.ts'
import { requireSameOrigin, sessionTokenHash, readCookie, SESSION_COOKIE } from '../auth/session.ts'
import { HttpError } from '../transport/errors.ts'
import { html, htmlReply, page, redirect } from '../app/html.ts'
import { amrFor, issuerAccount, refusalText, sessionHolder, type IssuerAccount, type SessionHolder } from './account.ts'
import { consentPage, expiredInteraction } from './pages.ts'
import type { Issuer } from './issuer.ts'
import { INTERACTION_PATH } from './provider.ts'

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>

const params = v.strictObject({ uid: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,64}$/)) })

// What a step of the interaction records in oidc-provider's interaction (its result),
// beyond login and consent: the app session that was ended for a re-authentication.
interface Progress { tale?: { endedSession?: string } }

/** An authorization that asks the person to sign in again (prompt=login, max_age). */
const asksReauthentication = (interaction: Interaction) => interaction.prompt.name === 'login'
  && interaction.prompt.reasons.some((reason) => reason === 'login_prompt' || reason === 'max_age')
const asksConsent = (interaction: Interaction) => String(interaction.params.prompt ?? '').split(' ').includes('consent')

export function interactionRoutes(issuer: Issuer, requests: Sql, config: Config): KeylessRoute[] {
  // oidc-provider reads its interaction cookie through a Koa context; nothing is written to this response.
  const details = async (provider: Provider, req: IncomingMessage): Promise<Interaction | null> => {
    try {
      return await provider.interactionDetails(req, new ServerResponse(req))
    } catch (error) {
      if ((error as { name?: string }).name === 'SessionNotFound') return null
      throw error
    }
  }
  const finish = async (provider: Provider, req: IncomingMessage, result: Record<string, unknown>): Promise<Reply> =>
    redirect(await provider.interactionResult(req, new ServerResponse(req), result as never, { mergeWithLastSubmission: false }))
  const signIn = (uid: string) => redirect(`/app/sign-in?return=${encodeURIComponent(`${INTERACTION_PATH}/${uid}`)}`)

  // The scopes asked for are granted to the client for this person.
  const grantFor = async (provider: Provider, interaction: Interaction, holder: SessionHolder): Promise<string> => {
    const clientId = String(interaction.params.client_id)
    const found = interaction.grantId ? await provider.Grant.find(interaction.grantId) : undefined
    const grant = found && found.accountId === holder.userId ? found : new provider.Grant({ accountId: holder.userId, clientId })
    grant.addOIDCScope(String(interaction.params.scope ?? 'openid'))
    return grant.save()
  }
  const complete = async (provider: Provider, req: IncomingMessage, interaction: Interaction, holder: SessionHolder) =>
    finish(provider, req, {
      login: { accountId: holder.userId, acr: '0', amr: amrFor(holder.mfa), remember: false },
      consent: { grantId: await grantFor(provider, interaction, holder) },
    })

  /**
   * Where the interaction stands for this request: expired, the person to sign in
   * (again), refused by the organization, or ready with the person and the client.
   */
  type Step = { reply: Reply } | { provider: Provider; interaction: Interaction; holder: SessionHolder; account: IssuerAccount }
  async function step(req: IncomingMessage, uid: string): Promise<Step> {
    const provider = await issuer.provider()
    const interaction = await details(provider, req)
    if (!interaction || interaction.uid !== uid) return { reply: expiredInteraction() }
    const holder = await sessionHolder(requests, req)
    if (asksReauthentication(interaction)) {
      const progress = interaction.result as Progress | undefined
      const ended = progress?.tale?.endedSession
      if (ended === undefined || holder?.sessionId === ended) {
        // Signing in again means a new app session: the current one ends here, and the
        // sign-in page (which passes a signed-in person through) asks for the password.
        const token = readCookie(req, SESSION_COOKIE)
        if (holder && token) await requests`select app.session_close(${sessionTokenHash(token)})`
        await provider.interactionResult(req, new ServerResponse(req), { tale: { endedSession: holder?.sessionId ?? '' } } as never,
          { mergeWithLastSubmission: false })
        return { reply: signIn(uid) }
      }
    }
    if (!holder) return { reply: signIn(uid) }
    const account = await issuerAccount(requests, String(interaction.params.client_id), holder.userId, holder.mfa)
    if ('refused' in account) {
      return { reply: await finish(provider, req, { error: 'access_denied', error_description: refusalText[account.refused] }) }
    }
    return { provider, interaction, holder, account }
  }

  const consent = (interaction: Interaction, account: { clientName: string; organizationName: string }) => consentPage({
    uid: interaction.uid, clientName: account.clientName, organizationName: account.organizationName,
    scopes: String(interaction.params.scope ?? '').split(' '),
    redirectOrigin: new URL(String(interaction.params.redirect_uri)).origin,
  })

  return [
    {
      kind: 'keyless', method: 'GET', path: `${INTERACTION_PATH}/:uid`, tag: 'App', undocumented: true, params,
      summary: 'Signs a person in to an application through the identity issuer',
      handle: async (req, input) => {
        const at = await step(req, input.params.uid as string)
        if ('reply' in at) return at.reply
        if (asksConsent(at.interaction)) return consent(at.interaction, at.account)
        return complete(at.provider, req, at.interaction, at.holder)
      },
    },
    {
      kind: 'keyless', method: 'POST', path: `${INTERACTION_PATH}/:uid`, tag: 'App', undocumented: true, params,
      summary: 'The person\'s answer on the consent page', rawBody: true, bodyLimit: 16 * 1024,
      handle: async (req, input) => {
        try {
          requireSameOrigin(req, config.publicBaseUrl)
        } catch (error) {
          if (!(error instanceof HttpError)) throw error
          return htmlReply(403, page('Request refused', html`<div class="error" role="alert">${error.message}</div>`))
        }
        const at = await step(req, input.params.uid as string)
        if ('reply' in at) return at.reply
        const decision = new URLSearchParams(Buffer.isBuffer(input.body) ? input.body.toString('utf8') : '').get('decision')
        if (decision === 'deny') {
          return finish(at.provider, req, { error: 'access_denied', error_description: 'The person declined to share their account with the application.' })
        }
        if (decision !== 'allow') return consent(at.interaction, at.account)
        return complete(at.provider, req, at.interaction, at.holder)
      },
    },
  ]
}
