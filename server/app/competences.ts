// Settings > Competences: Owners and Admins grant competences to members, with the
// evidence for the grant and an optional expiry, and revoke them; a revoked grant
// stays listed as the audit trail. The page runs the governance operations
// (db/functions/0115_competence_grants.sql) as the signed-in person.
import type { IncomingMessage } from 'node:http'
import * as v from 'valibot'
import type { Sql } from '../core/db/connection.ts'
import type { Config } from '../core/config.ts'
import type { KeylessRoute } from '../routes/route.ts'
import { html, htmlReply, page, redirect, type Html } from './html.ts'
import { personCaller } from './person.ts'
import { frame, refusedPage, type Overview } from './frame.ts'
import { formFields } from './sign-in.ts'

const COMPETENCES: Record<string, string> = {
  'tale:notifications.export': 'Notification export',
  'tale:skills.publish': 'Skill publishing',
  'tale:rest.act-as': 'Acting for others in the REST API',
}

interface Grant {
  recordId: string; competence: string; evidence: string | null; expiresAt: number | null; createdAt: number
  revokedAt: number | null; live: boolean
}

export function competenceRoutes(requests: Sql, config: Config): KeylessRoute[] {
  const asPerson = personCaller(requests, config)
  const { signedIn, chrome } = frame(asPerson)
  const day = (ms: number | null) => (ms === null ? '' : new Date(ms).toISOString().slice(0, 10))

  const render = async (req: IncomingMessage, o: Overview, userId: string | undefined, notice?: Html, status = 200) => {
    if (!['owner', 'admin'].includes(o.organization.role)) {
      return refusedPage(403, 'Owners and Admins grant and revoke competences.')
    }
    const members = ((await asPerson(req, 'app_members')).body?.members ?? []) as { id: string; name: string; email: string; role: string }[]
    const chosen = members.find((m) => m.id === userId)
    const listed = chosen ? await asPerson(req, 'competence_grants_list', { userId: chosen.id }) : null
    const grants = (listed?.body?.grants ?? []) as Grant[]
    return htmlReply(status, page('Competences', html`
      ${notice ?? ''}
      <section aria-labelledby="member-heading">
        <h2 id="member-heading">Member</h2>
        <form method="get" action="/app/settings/competences">
          <label for="member">Member</label>
          <select id="member" name="userId">${members.map((m) => html`<option value="${m.id}"${m.id === chosen?.id ? html` selected` : ''}>${m.name || m.email} (${m.role})</option>`)}</select>
          <button type="submit" class="secondary">Show grants</button>
        </form>
      </section>
      ${chosen ? html`
      <section aria-labelledby="grants-heading">
        <h2 id="grants-heading">Grants of ${chosen.name || chosen.email}</h2>
        ${grants.length === 0 ? html`<p>No grants yet.</p>` : html`
        <table><caption class="hint">Newest first; revoked and expired grants stay listed</caption>
          <thead><tr><th scope="col">Competence</th><th scope="col">Evidence</th><th scope="col">Granted</th><th scope="col">Expires</th><th scope="col">Status</th></tr></thead>
          <tbody>${grants.map((g) => html`<tr><td>${COMPETENCES[g.competence] ?? g.competence}</td><td>${g.evidence ?? ''}</td><td>${day(g.createdAt)}</td><td>${g.expiresAt === null ? 'never' : day(g.expiresAt)}</td>
            <td>${g.revokedAt !== null ? `revoked ${day(g.revokedAt)}` : !g.live ? 'expired' : html`<form method="post" action="/app/settings/competences/revoke"><input type="hidden" name="recordId" value="${g.recordId}"><input type="hidden" name="userId" value="${chosen.id}"><button type="submit" class="secondary" style="margin:0" aria-label="Revoke ${COMPETENCES[g.competence] ?? g.competence}">Revoke</button></form>`}</td></tr>`)}</tbody>
        </table>`}
      </section>
      <section aria-labelledby="grant-heading">
        <h2 id="grant-heading">Grant a competence</h2>
        <form method="post" action="/app/settings/competences">
          <input type="hidden" name="userId" value="${chosen.id}">
          <label for="competence">Competence</label>
          <select id="competence" name="competence">${Object.entries(COMPETENCES).map(([id, name]) => html`<option value="${id}">${name}</option>`)}</select>
          <label for="evidence">Evidence</label>
          <input type="text" id="evidence" name="evidence" required maxlength="2000">
          <label for="expires">Expires on (optional)</label>
          <input type="date" id="expires" name="expiresOn">
          <button type="submit">Grant</button>
        </form>
      </section>` : ''}`, chrome(o)))
  }

  const common = { kind: 'keyless' as const, tag: 'App', undocumented: true }
  const form = { ...common, method: 'POST' as const, rawBody: true, bodyLimit: 16 * 1024 }
  return [
    {
      ...common, method: 'GET', path: '/app/settings/competences', summary: 'Competence grants',
      query: v.strictObject({ userId: v.optional(v.string()) }),
      handle: signedIn((req, input, o) => render(req, o, input.query.userId as string | undefined)),
    },
    {
      ...form, path: '/app/settings/competences', summary: 'Grants a competence',
      handle: signedIn(async (req, input, o) => {
        const fields = formFields(input.body)
        const userId = fields.get('userId') ?? ''
        const on = fields.get('expiresOn')
        if (!(fields.get('evidence') ?? '').trim()) {
          return render(req, o, userId, html`<div class="error" role="alert">Give the evidence for the grant.</div>`, 400)
        }
        const granted = await asPerson(req, 'competence_grant_create', {
          userId, competence: fields.get('competence') ?? '', evidence: fields.get('evidence') ?? '',
          ...(on ? { expiresAt: Date.parse(`${on}T23:59:59Z`) } : {}),
        })
        if (granted.error) return render(req, o, userId, html`<div class="error" role="alert">${granted.error.message}</div>`, granted.error.status)
        return redirect(`/app/settings/competences?userId=${encodeURIComponent(userId)}`)
      }),
    },
    {
      ...form, path: '/app/settings/competences/revoke', summary: 'Revokes a competence grant',
      handle: signedIn(async (req, input, o) => {
        const fields = formFields(input.body)
        const userId = fields.get('userId') ?? ''
        const revoked = await asPerson(req, 'competence_grant_revoke', { recordId: fields.get('recordId') ?? '' })
        if (revoked.error) return render(req, o, userId, html`<div class="error" role="alert">${revoked.error.message}</div>`, revoked.error.status)
        return redirect(`/app/settings/competences?userId=${encodeURIComponent(userId)}`)
      }),
    },
  ]
}
