// The app's settings pages: the overview with the organization switcher, API keys
// (Settings > API > REST) and the second factor. Each page is one or two operations
// run as the signed-in person (server/app/person.ts); every form posts to the
// service's own origin and is checked for it.
import type { IncomingMessage } from 'node:http'
import * as OTPAuth from 'otpauth'
import * as v from 'valibot'
import type { Sql } from '../core/db/connection.ts'
import type { Config } from '../core/config.ts'
import type { KeylessRoute, Reply } from '../routes/route.ts'
import { generateApiKey, hashApiKey } from '../auth/credentials.ts'
import { insecureAllowed } from '../auth/session.ts'
import { html, htmlReply, page, redirect, type Html } from './html.ts'
import { ORG_COOKIE, personCaller } from './person.ts'
import { frame, type Overview } from './frame.ts'
import { formFields, totpFor, verifyTotp } from './sign-in.ts'

const CAPABILITY_NAMES: Record<string, string> = {
  developer: 'Developer (live runs, triggers, API keys)', notificationExport: 'Notification export',
  skillPublish: 'Skill publishing', actAs: 'Acting for others', deploymentEditor: 'Deployment editor',
}

export function settingsRoutes(requests: Sql, config: Config): KeylessRoute[] {
  const asPerson = personCaller(requests, config)

  const { signedIn, chrome } = frame(asPerson)

  const keysPage = async (req: IncomingMessage, o: Overview, notice?: Html, status = 200) => {
    const { body } = await asPerson(req, 'app_keys_list')
    const keys = (body?.keys ?? []) as { id: string; name: string; createdAt: number; lastUsedAt: number | null; expiresAt: number | null; revoked: boolean; expired: boolean }[]
    const day = (ms: number | null) => (ms === null ? 'never' : new Date(ms).toISOString().slice(0, 10))
    return htmlReply(status, page('API keys', html`
      ${notice ?? ''}
      <section aria-labelledby="keys-heading">
        <h2 id="keys-heading">Your keys</h2>
        <p class="hint">A key acts as you in the REST API and MCP. Keep it on a server; never in a browser.</p>
        ${keys.length === 0 ? html`<p>You have no keys yet.</p>` : html`
        <table><caption class="hint">Your API keys, newest first</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col">Status</th></tr></thead>
          <tbody>${keys.map((k) => html`<tr><td>${k.name}</td><td>${day(k.createdAt)}</td><td>${day(k.lastUsedAt)}</td><td>${k.expiresAt === null ? 'never' : day(k.expiresAt)}</td>
            <td>${k.revoked ? 'revoked' : k.expired ? 'expired' : html`<form method="post" action="/app/settings/api-keys/revoke"><input type="hidden" name="keyId" value="${k.id}"><button type="submit" class="secondary" style="margin:0" aria-label="Revoke ${k.name}">Revoke</button></form>`}</td></tr>`)}</tbody>
        </table>`}
      </section>
      ${o.capabilities.developer ? html`
      <section aria-labelledby="new-key-heading">
        <h2 id="new-key-heading">Create a key</h2>
        <form method="post" action="/app/settings/api-keys">
          <label for="key-name">Name</label>
          <input type="text" id="key-name" name="name" required maxlength="100">
          <label for="key-expires">Expires on (optional)</label>
          <input type="date" id="key-expires" name="expiresOn">
          <button type="submit">Create key</button>
        </form>
      </section>` : html`<p class="notice">Owners, Admins and Developers create API keys; ask one of them for the role.</p>`}`, chrome(o)))
  }

  const securityPage = (o: Overview, notice?: Html, status = 200, secret = new OTPAuth.Secret({ size: 20 }).base32) => {
    const uri = totpFor(secret, o.person.email).toString()
    return htmlReply(status, page('Security', html`
      ${notice ?? ''}
      <section aria-labelledby="totp-heading">
        <h2 id="totp-heading">Second factor</h2>
        ${o.totp.enabled ? html`
        <p>An authenticator app is set up: every sign-in asks for its code.</p>
        <form method="post" action="/app/settings/security/totp/remove"><button type="submit" class="secondary">Remove the second factor</button></form>` : html`
        <p>Add this key to an authenticator app (time-based, six digits, every 30 seconds), then enter the code it shows.</p>
        <p><label for="totp-secret-text" style="margin:0">Setup key</label><code class="secret" id="totp-secret-text">${secret}</code></p>
        <p class="hint">Or open this link on the device with the app: <a href="${uri}">${uri}</a></p>
        <form method="post" action="/app/settings/security/totp">
          <input type="hidden" name="secret" value="${secret}">
          <label for="totp-code">Code from the app</label>
          <input type="text" id="totp-code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
          <button type="submit">Turn on</button>
        </form>`}
      </section>`, chrome(o)))
  }

  const orgQuery = v.strictObject({ orgId: v.optional(v.pipe(v.string(), v.uuid())) })
  const common = { kind: 'keyless' as const, tag: 'App', undocumented: true }
  const form = { ...common, method: 'POST' as const, rawBody: true, bodyLimit: 16 * 1024 }
  const post = (run: (req: IncomingMessage, fields: URLSearchParams, o: Overview) => Promise<Reply>, options: { mfaExempt?: boolean } = {}) =>
    signedIn((req, input, o) => run(req, formFields(input.body), o), options)

  return [
    { ...common, method: 'GET', path: '/app', summary: 'The app', handle: async () => redirect('/app/settings') },
    {
      ...common, method: 'GET', path: '/app/settings', summary: 'Settings overview', query: orgQuery,
      handle: async (req, input) => {
        // The switcher: remembered by the app for its pages, never an API key's scope.
        if (typeof input.query.orgId === 'string') {
          const secure = insecureAllowed(config.publicBaseUrl) ? '' : '; Secure'
          return redirect('/app/settings', { 'set-cookie': `${ORG_COOKIE}=${input.query.orgId}; Path=/app; HttpOnly; SameSite=Lax${secure}` })
        }
        return signedIn(async (_req, _input, o) => htmlReply(200, page('Settings', html`
          <section aria-labelledby="you-heading">
            <h2 id="you-heading">You</h2>
            <p>${o.person.name} &lt;${o.person.email}&gt;</p>
            <p>${o.organization.name}: ${o.organization.role}${o.organization.requireMfa ? ' (this organization requires a second factor)' : ''}</p>
            <h3>What you may do here</h3>
            <ul>${Object.entries(o.capabilities).map(([name, on]) => html`<li>${CAPABILITY_NAMES[name] ?? name}: ${on ? 'yes' : 'no'}</li>`)}</ul>
            <p class="hint">Switching organization changes what these pages show; API keys choose theirs with X-Organization-Slug.</p>
          </section>
          <section aria-labelledby="more-heading"><h2 id="more-heading">Settings</h2>
            <ul><li><a href="/app/settings/api-keys">API keys</a></li><li><a href="/app/settings/security">Security: second factor (${o.totp.enabled ? 'on' : 'off'})</a></li>
            <li><a href="/app/settings/competences">Competence grants</a></li><li><a href="/app/settings/identity-clients">Identity clients</a></li></ul>
          </section>`, chrome(o))))(req, input)
      },
    },
    { ...common, method: 'GET', path: '/app/settings/api-keys', summary: 'API keys', handle: signedIn((req, _input, o) => keysPage(req, o)) },
    {
      ...form, path: '/app/settings/api-keys', summary: 'Creates an API key',
      handle: post(async (req, fields, o) => {
        const key = generateApiKey()
        const on = fields.get('expiresOn')
        const expiresAt = on ? Date.parse(`${on}T23:59:59Z`) : null
        if (on && !Number.isFinite(expiresAt)) return keysPage(req, o, html`<div class="error" role="alert">The expiry date is not a date.</div>`, 400)
        const created = await asPerson(req, 'app_key_create', { name: fields.get('name') ?? '', expiresAt, keyHash: hashApiKey(key) })
        if (created.error) return keysPage(req, o, html`<div class="error" role="alert">${created.error.message}</div>`, created.error.status)
        return keysPage(req, o, html`<div class="notice" role="status"><p>The key <strong>${created.body!.name}</strong> was created. Copy it now: it is shown only once.</p>
          <code class="secret" aria-label="The new API key">${key}</code></div>`, 201)
      }),
    },
    {
      ...form, path: '/app/settings/api-keys/revoke', summary: 'Revokes an API key',
      handle: post(async (req, fields, o) => {
        const revoked = await asPerson(req, 'app_key_revoke', { keyId: fields.get('keyId') ?? '' })
        if (revoked.error) return keysPage(req, o, html`<div class="error" role="alert">${revoked.error.message}</div>`, revoked.error.status)
        return redirect('/app/settings/api-keys')
      }),
    },
    {
      ...common, method: 'GET', path: '/app/settings/security', summary: 'Security settings', query: v.strictObject({ required: v.optional(v.literal('1')) }),
      handle: signedIn(async (_req, input, o) => securityPage(o, input.query.required && !o.totp.enabled
        ? html`<div class="notice" role="status">Your organization requires a second factor. Set one up, then sign in again.</div>` : undefined), { mfaExempt: true }),
    },
    {
      ...form, path: '/app/settings/security/totp', summary: 'Turns the second factor on',
      handle: post(async (req, fields, o) => {
        const secret = fields.get('secret') ?? ''
        if (!/^[A-Z2-7]{32}$/.test(secret)) return securityPage(o, html`<div class="error" role="alert">Start again: the setup key is not valid.</div>`, 400)
        const step = verifyTotp(secret, fields.get('code') ?? '')
        if (step === null) return securityPage(o, html`<div class="error" role="alert">That code is not right. Enter the code the app shows now.</div>`, 400, secret)
        const set = await asPerson(req, 'app_totp_set', { secret, step }, { mfaExempt: true })
        if (set.error) return securityPage(o, html`<div class="error" role="alert">${set.error.message}</div>`, set.error.status, secret)
        return redirect('/app/settings/security')
      }, { mfaExempt: true }),
    },
    {
      ...form, path: '/app/settings/security/totp/remove', summary: 'Removes the second factor',
      handle: post(async (req, _fields, o) => {
        const removed = await asPerson(req, 'app_totp_remove', {}, { mfaExempt: true })
        if (removed.error) return securityPage(o, html`<div class="error" role="alert">${removed.error.message}</div>`, removed.error.status)
        return redirect('/app/settings/security')
      }, { mfaExempt: true }),
    },
  ]
}
