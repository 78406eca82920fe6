// Settings > Identity clients: Owners and Admins register the applications that sign
// people in through the identity issuer, see each client's secret once (at
// registration and at every rotation), rotate it and disable or restore a client. The
// page runs the registration operations (db/functions/0120_identity_clients.sql) as
// the signed-in person.
import type { IncomingMessage } from 'node:http'
import type { Sql } from '../core/db/connection.ts'
import type { Config } from '../core/config.ts'
import type { KeylessRoute } from '../routes/route.ts'
import { html, htmlReply, page, redirect, type Html } from './html.ts'
import { personCaller } from './person.ts'
import { frame, refusedPage, type Overview } from './frame.ts'
import { formFields } from './sign-in.ts'

interface Client { client_id: string; key: string; name: string; redirectUri: string; disabled: boolean; createdAt: number }

export function identityClientPages(requests: Sql, config: Config): KeylessRoute[] {
  const asPerson = personCaller(requests, config)
  const { signedIn, chrome } = frame(asPerson)

  const secretNotice = (client: Client & { client_secret: string }, what: string) => html`
    <div class="notice" role="status"><p>${what} Copy the secret now: it is shown only once.</p>
      <p>Client ID</p><code class="secret" aria-label="Client ID of ${client.name}">${client.client_id}</code>
      <p>Client secret</p><code class="secret" aria-label="Client secret of ${client.name}">${client.client_secret}</code></div>`

  const render = async (req: IncomingMessage, o: Overview, notice?: Html, status = 200, draft: Record<string, string> = {}) => {
    if (!['owner', 'admin'].includes(o.organization.role)) return refusedPage(403, 'Owners and Admins manage the organization\'s identity clients.')
    const clients = ((await asPerson(req, 'app_identity_clients_list')).body?.clients ?? []) as Client[]
    return htmlReply(status, page('Identity clients', html`
      ${notice ?? ''}
      <section aria-labelledby="clients-heading">
        <h2 id="clients-heading">Applications of ${o.organization.name}</h2>
        <p class="hint">Each application signs people of this organization in through the issuer at <code>${config.publicBaseUrl}/api/auth</code>.</p>
        ${clients.length === 0 ? html`<p>No applications yet.</p>` : html`
        <table><caption class="hint">Registered applications</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Client ID</th><th scope="col">Callback</th><th scope="col">Status</th><th scope="col">Actions</th></tr></thead>
          <tbody>${clients.map((c) => html`<tr><td>${c.name} (${c.key})</td><td><code>${c.client_id}</code></td><td>${c.redirectUri}</td><td>${c.disabled ? 'disabled' : 'active'}</td>
            <td><form method="post" action="/app/settings/identity-clients/rotate"><input type="hidden" name="key" value="${c.key}"><button type="submit" class="secondary" style="margin:0" aria-label="Rotate secret of ${c.name}">Rotate secret</button></form>
            <form method="post" action="/app/settings/identity-clients/status"><input type="hidden" name="key" value="${c.key}"><input type="hidden" name="disabled" value="${c.disabled ? 'false' : 'true'}"><button type="submit" class="secondary" style="margin:.25rem 0 0" aria-label="${c.disabled ? 'Restore' : 'Disable'} ${c.name}">${c.disabled ? 'Restore' : 'Disable'}</button></form></td></tr>`)}</tbody>
        </table>`}
      </section>
      <section aria-labelledby="register-heading">
        <h2 id="register-heading">Register an application</h2>
        <form method="post" action="/app/settings/identity-clients">
          <label for="client-key">Key (letters, digits, ".", "_" or "-")</label>
          <input type="text" id="client-key" name="key" required maxlength="64" value="${draft.key ?? ''}">
          <label for="client-name">Name</label>
          <input type="text" id="client-name" name="name" required maxlength="200" value="${draft.name ?? ''}">
          <label for="client-callback">Callback address (exact; https, or http on this machine)</label>
          <input type="text" id="client-callback" name="redirectUri" required maxlength="2000" value="${draft.redirectUri ?? ''}">
          <button type="submit">Register</button>
        </form>
      </section>`, chrome(o)))
  }
  const failed = (error: { message: string }) => html`<div class="error" role="alert">${error.message}</div>`

  const common = { kind: 'keyless' as const, tag: 'App', undocumented: true }
  const form = { ...common, method: 'POST' as const, rawBody: true, bodyLimit: 16 * 1024 }
  return [
    { ...common, method: 'GET', path: '/app/settings/identity-clients', summary: 'Identity clients', handle: signedIn((req, _input, o) => render(req, o)) },
    {
      ...form, path: '/app/settings/identity-clients', summary: 'Registers an identity client',
      handle: signedIn(async (req, input, o) => {
        const fields = formFields(input.body)
        const draft = { key: (fields.get('key') ?? '').trim(), name: (fields.get('name') ?? '').trim(), redirectUri: (fields.get('redirectUri') ?? '').trim() }
        if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(draft.key) || !draft.name || !draft.redirectUri) {
          return render(req, o, html`<div class="error" role="alert">Give a key of letters, digits, ".", "_" or "-", a name and a callback address.</div>`, 400, draft)
        }
        const registered = await asPerson(req, 'identity_client_register', draft)
        if (registered.error) return render(req, o, failed(registered.error), registered.error.status, draft)
        const body = registered.body!
        return body.created
          ? render(req, o, secretNotice(body.client, `${body.client.name} is registered.`), 201)
          : render(req, o, html`<div class="notice" role="status">${body.client.name} was already registered with this configuration; its secret is unchanged.</div>`)
      }),
    },
    {
      ...form, path: '/app/settings/identity-clients/rotate', summary: 'Rotates an identity client\'s secret',
      handle: signedIn(async (req, input, o) => {
        const rotated = await asPerson(req, 'identity_client_rotate_secret', { key: formFields(input.body).get('key') ?? '' })
        if (rotated.error) return render(req, o, failed(rotated.error), rotated.error.status)
        return render(req, o, secretNotice(rotated.body!.client, `The secret of ${rotated.body!.client.name} is new; the old one no longer works.`))
      }),
    },
    {
      ...form, path: '/app/settings/identity-clients/status', summary: 'Disables or restores an identity client',
      handle: signedIn(async (req, input, o) => {
        const fields = formFields(input.body)
        const changed = await asPerson(req, 'identity_client_status', { key: fields.get('key') ?? '', disabled: fields.get('disabled') === 'true' })
        if (changed.error) return render(req, o, failed(changed.error), changed.error.status)
        return redirect('/app/settings/identity-clients')
      }),
    },
  ]
}
