// Governance grants over the app's session routes: owners and admins grant, list and
// revoke competences; every rule and every refusal, the audit rows, revocation when a
// member leaves, and /me following at once.
import t, { type Test } from 'tap'
import { world, type World } from '../lib/world.ts'
import { signIn, type SessionClient } from '../lib/session.ts'
import { refused } from '../lib/assert.ts'
import { pinClock } from '../lib/db.ts'

const base = '/api/app/governance/competences'
const day = 24 * 60 * 60 * 1000

async function governance(t: Test) {
  const w = await world(t, { projects: [] })
  const org = w.seeded.organizations.acme!.id
  const globex = w.seeded.organizations.globex!.id
  const id = (email: string) => w.seeded.users[email]!.id
  const grants = (client: SessionClient, userId: string) => client.get(`${base}?orgId=${org}&userId=${userId}`)
  const grant = (client: SessionClient, body: Record<string, unknown>) => client.post(`${base}?orgId=${org}`, body)
  const revoke = (client: SessionClient, recordId: string) => client.post(`${base}/${recordId}/revoke?orgId=${org}`)
  const audit = (subject: string) => w.service.db.owner<{ action: string; actor: string | null; data: Record<string, any> }[]>`
    select action, actor_user_id as actor, data from app.audit_log
     where subject_type = 'competence_grant' and subject_id = ${subject} order by id`
  return {
    w, org, globex, id, grants, grant, revoke, audit,
    olive: await signIn(w, 'olive@acme.test'), adam: await signIn(w, 'adam@acme.test'),
    dev: await signIn(w, 'dev@acme.test'), max: await signIn(w, 'max@acme.test'), gina: await signIn(w, 'gina@globex.test'),
  }
}

const capabilities = async (w: World, who: 'max' | 'eddie') => (await w[who].get('/api/v1/me')).body.capabilities

t.test('a grant shows in /me at once, is listed, revoked, and stays listed as the audit trail', async (t) => {
  const g = await governance(t)
  const maxId = g.id('max@acme.test')
  t.match(await capabilities(g.w, 'max'), { notificationExport: false, actAs: false }, 'a member holds neither by role')

  const expiresAt = Date.now() + day
  const created = await g.grant(g.adam, { userId: maxId, competence: 'tale:notifications.export',
    evidence: '  Completed the export training  ', expiresAt })
  t.equal(created.status, 201)
  t.same(Object.keys(created.body), ['recordId'])
  const recordId: string = created.body.recordId
  t.match(await capabilities(g.w, 'max'), { notificationExport: true }, 'the grant counts in /me at once')

  const listed = await g.grants(g.olive, maxId)
  t.equal(listed.status, 200)
  t.match(listed.body.grants, [{
    recordId, userId: maxId, competence: 'tale:notifications.export', evidence: 'Completed the export training',
    expiresAt, grantedBy: g.id('adam@acme.test'), revokedAt: null, revokedBy: null, live: true,
  }], 'listed with the prefix, the trimmed evidence and its granter')
  t.type(listed.body.grants[0].createdAt, 'number')

  t.match(await g.audit(recordId), [{ action: 'competence.granted', actor: g.id('adam@acme.test'),
    data: { userId: maxId, competence: 'notifications.export', expiresAt, evidence: 'Completed the export training' } }])

  const revoked = await g.revoke(g.olive, recordId)
  t.equal(revoked.status, 200)
  t.match(revoked.body, { recordId, revokedBy: g.id('olive@acme.test') })
  t.type(revoked.body.revokedAt, 'number')
  t.match(await capabilities(g.w, 'max'), { notificationExport: false }, 'the revocation counts in /me at once')

  const after = (await g.grants(g.adam, maxId)).body.grants
  t.equal(after.length, 1, 'a revoked grant stays listed')
  t.match(after[0], { recordId, live: false, revokedAt: revoked.body.revokedAt, revokedBy: g.id('olive@acme.test') })
  t.match((await g.audit(recordId)).map((a) => [a.action, a.actor, a.data.reason]),
    [['competence.granted', g.id('adam@acme.test'), undefined], ['competence.revoked', g.id('olive@acme.test'), 'revoked']])

  const again = await g.revoke(g.adam, recordId)
  t.equal(again.status, 200, 'revoking a revoked grant is idempotent')
  t.same(again.body, revoked.body, 'and answers the first revocation')
  t.equal((await g.audit(recordId)).length, 2, 'writing nothing more')

  const regranted = await g.grant(g.olive, { userId: maxId, competence: 'tale:notifications.export', evidence: 'Retrained' })
  t.equal(regranted.status, 201, 'a revoked grant does not block a new one')
  const both = (await g.grants(g.olive, maxId)).body.grants
  t.same(both.map((b: any) => [b.recordId, b.live, b.expiresAt]), [[regranted.body.recordId, true, null], [recordId, false, expiresAt]],
    'newest first; no expiresAt never expires')
})

t.test('each competence turns on its capability', async (t) => {
  const g = await governance(t)
  const maxId = g.id('max@acme.test')
  t.equal((await g.grant(g.adam, { userId: maxId, competence: 'tale:rest.act-as', evidence: 'Reviews for the team' })).status, 201)
  await g.w.service.db.owner`update app.organizations set skill_sharing_policy = '{"roles": ["owner"]}' where id = ${g.org}`
  t.match(await capabilities(g.w, 'max'), { actAs: true, skillPublish: false })
  t.equal((await g.grant(g.adam, { userId: maxId, competence: 'tale:skills.publish', evidence: 'Curates skills' })).status, 201)
  t.match(await capabilities(g.w, 'max'), { actAs: true, skillPublish: true })
})

t.test('only owners and admins grant, list and revoke: 403 COMPETENCE_FORBIDDEN', async (t) => {
  const g = await governance(t)
  const maxId = g.id('max@acme.test')
  const { recordId } = (await g.grant(g.adam, { userId: maxId, competence: 'tale:rest.act-as', evidence: 'ok' })).body
  for (const [who, client] of [['a developer', g.dev], ['a member', g.max]] as const) {
    refused(t, await g.grant(client, { userId: maxId, competence: 'tale:skills.publish', evidence: 'self-service' }),
      403, 'COMPETENCE_FORBIDDEN', `${who} grants`)
    refused(t, await g.grants(client, maxId), 403, 'COMPETENCE_FORBIDDEN', `${who} lists, even their own grants`)
    refused(t, await g.revoke(client, recordId), 403, 'COMPETENCE_FORBIDDEN', `${who} revokes`)
  }
  t.equal((await g.grants(g.olive, maxId)).body.grants[0].live, true, 'nothing changed')
})

t.test('grant validation: unknown competence, expiry in the past, not a member, already granted', async (t) => {
  const g = await governance(t)
  const maxId = g.id('max@acme.test')

  for (const competence of ['notifications.export', 'tale:notifications.import', 'other:rest.act-as', '']) {
    const body = refused(t, await g.grant(g.adam, { userId: maxId, competence, evidence: 'x' }), 400,
      'COMPETENCE_CAPABILITY_UNKNOWN', `"${competence}"`)
    t.same(body.data.competences, ['tale:notifications.export', 'tale:skills.publish', 'tale:rest.act-as'], 'names the known ones')
  }

  const past = refused(t, await g.grant(g.adam, { userId: maxId, competence: 'tale:rest.act-as', evidence: 'x', expiresAt: Date.now() - 1000 }),
    400, 'COMPETENCE_EXPIRY_IN_PAST', 'an expiry gone by')
  t.type(past.data.now, 'number')
  refused(t, await g.grant(g.adam, { userId: maxId, competence: 'tale:rest.act-as', evidence: 'x', expiresAt: 0 }),
    400, 'COMPETENCE_EXPIRY_IN_PAST', 'the first instant of the range')
  const now = Date.now() + 5000
  await pinClock(g.w.service.db.owner, now)
  refused(t, await g.grant(g.adam, { userId: maxId, competence: 'tale:rest.act-as', evidence: 'x', expiresAt: now }),
    400, 'COMPETENCE_EXPIRY_IN_PAST', 'an expiry at this very instant')

  await g.w.service.db.owner`select app.operator_member_add(${g.org}, ${g.id('eddie@acme.test')}, 'editor', true)`
  for (const [who, userId] of [['another organization\'s user', g.id('gina@globex.test')],
    ['a disabled member', g.id('eddie@acme.test')], ['nobody', '00000000-0000-4000-8000-000000000000']]) {
    const body = refused(t, await g.grant(g.adam, { userId, competence: 'tale:rest.act-as', evidence: 'x' }),
      400, 'COMPETENCE_USER_NOT_MEMBER', who!)
    t.equal(body.data.userId, userId)
  }

  const first = await g.grant(g.adam, { userId: maxId, competence: 'tale:rest.act-as', evidence: 'x', expiresAt: now + 60_000 })
  t.equal(first.status, 201)
  const taken = refused(t, await g.grant(g.olive, { userId: maxId, competence: 'tale:rest.act-as', evidence: 'again' }),
    409, 'COMPETENCE_ALREADY_GRANTED', 'a live grant of that competence')
  t.match(taken.data, { recordId: first.body.recordId, userId: maxId, competence: 'tale:rest.act-as', expiresAt: now + 60_000 })
  t.equal((await g.grant(g.olive, { userId: maxId, competence: 'tale:skills.publish', evidence: 'other' })).status, 201,
    'another competence is another grant')
  t.equal((await g.grant(g.olive, { userId: g.id('dev@acme.test'), competence: 'tale:rest.act-as', evidence: 'other' })).status, 201,
    'another member is another grant')

  await pinClock(g.w.service.db.owner, now + 120_000)
  t.equal((await g.grant(g.olive, { userId: maxId, competence: 'tale:rest.act-as', evidence: 'renewed' })).status, 201,
    'an expired grant is no longer live and blocks nothing')
  // Sorted here: grants made at one pinned instant tie on createdAt.
  t.same((await g.grants(g.olive, maxId)).body.grants.map((b: any) => [b.competence, b.live, b.revokedAt]).sort(),
    [['tale:rest.act-as', false, null], ['tale:rest.act-as', true, null], ['tale:skills.publish', true, null]],
    'the expired one is listed, not live and not revoked')
})

t.test('shapes: every problem at once with its path, expiry range, evidence limits, the query', async (t) => {
  const g = await governance(t)
  const maxId = g.id('max@acme.test')
  const all = refused(t, await g.grant(g.adam, { userId: 'max', evidence: '   ', expiresAt: 1.5, extra: true }), 400, 'INVALID_BODY')
  t.same(all.data.issues.map((i: any) => i.path).sort(), ['competence', 'evidence', 'expiresAt', 'extra', 'userId'],
    'each problem named by its path')

  for (const expiresAt of [1.5, -1, 8_640_000_000_000_001, '2030-01-01', true]) {
    const body = refused(t, await g.grant(g.adam, { userId: maxId, competence: 'tale:rest.act-as', evidence: 'x', expiresAt }),
      400, 'INVALID_BODY', `expiresAt ${JSON.stringify(expiresAt)}`)
    t.same(body.data.issues.map((i: any) => i.path), ['expiresAt'])
  }
  const farthest = await g.grant(g.adam, { userId: maxId, competence: 'tale:rest.act-as', evidence: 'x', expiresAt: 8_640_000_000_000_000 })
  t.equal(farthest.status, 201, 'the last instant of the range is accepted')
  t.equal((await g.grants(g.adam, maxId)).body.grants[0].expiresAt, 8_640_000_000_000_000)

  refused(t, await g.grant(g.adam, { userId: maxId, competence: 'tale:skills.publish' }), 400, 'INVALID_BODY', 'evidence is required')
  refused(t, await g.grant(g.adam, { userId: maxId, competence: 'tale:skills.publish', evidence: 'x'.repeat(2001) }),
    400, 'INVALID_BODY', 'evidence over competence.evidenceMaxUnits')
  t.equal((await g.grant(g.adam, { userId: maxId, competence: 'tale:skills.publish', evidence: `  ${'x'.repeat(2000)}  ` })).status,
    201, 'the limit counts the trimmed evidence')

  refused(t, await g.adam.get(`${base}?userId=${maxId}`), 400, 'INVALID_QUERY', 'orgId is required')
  refused(t, await g.adam.get(`${base}?orgId=${g.org}`), 400, 'INVALID_QUERY', 'userId is required on the list')
  refused(t, await g.adam.get(`${base}?orgId=${g.org}&userId=max`), 400, 'INVALID_QUERY', 'userId is an id')
  refused(t, await g.adam.get(`${base}?orgId=%00&userId=${maxId}`), 400, 'INVALID_QUERY', 'an orgId holding a NUL character')
  refused(t, await g.adam.post(`${base}?orgId=%00`, { userId: maxId, competence: 'tale:rest.act-as', evidence: 'x' }),
    400, 'INVALID_QUERY', 'on a write too')
  refused(t, await g.adam.post(base, { userId: maxId, competence: 'tale:rest.act-as', evidence: 'x' }), 400, 'INVALID_QUERY',
    'a write names its organization too')
  refused(t, await g.adam.post(`${base}?orgId=${g.org}&other=1`, { userId: maxId, competence: 'tale:rest.act-as', evidence: 'x' }),
    400, 'INVALID_QUERY', 'and nothing else')
})

t.test('who may call: a session with Origin, in an organization of theirs; records of another organization are absent', async (t) => {
  const g = await governance(t)
  const maxId = g.id('max@acme.test')
  const body = { userId: maxId, competence: 'tale:rest.act-as', evidence: 'x' }

  for (const [method, path] of [['GET', `${base}?orgId=${g.org}&userId=${maxId}`], ['POST', `${base}?orgId=${g.org}`]]) {
    refused(t, await g.w.service.request(method!, path!, { key: g.w.keyOf('olive@acme.test'), body: method === 'POST' ? body : undefined,
      headers: { origin: g.w.service.url } }), 401, 'UNAUTHORIZED', `${method}: an API key is no session`)
  }
  refused(t, await g.adam.request('POST', `${base}?orgId=${g.org}`, { body, origin: null }), 403, 'ORIGIN_FORBIDDEN', 'a write without Origin')
  refused(t, await g.adam.request('POST', `${base}?orgId=${g.org}`, { body, origin: 'https://elsewhere.test' }),
    403, 'ORIGIN_FORBIDDEN', 'a write from another site')
  t.equal((await g.adam.request('GET', `${base}?orgId=${g.org}&userId=${maxId}`, { origin: null })).status, 200, 'a read needs no Origin')
  t.equal((await g.grants(g.adam, maxId)).body.grants.length, 0, 'nothing was written')

  refused(t, await g.adam.get(`${base}?orgId=${g.globex}&userId=${maxId}`), 403, 'ORG_FORBIDDEN', 'an organization not theirs')

  const foreign = await g.gina.post(`${base}?orgId=${g.globex}`,
    { userId: g.id('gina@globex.test'), competence: 'tale:rest.act-as', evidence: 'globex owner' })
  t.equal(foreign.status, 201, 'globex\'s owner grants in globex')
  refused(t, await g.revoke(g.adam, foreign.body.recordId), 404, 'NOT_FOUND', 'another organization\'s record is absent')
  refused(t, await g.revoke(g.adam, '00000000-0000-4000-8000-000000000000'), 404, 'NOT_FOUND', 'an unknown record')
  refused(t, await g.revoke(g.adam, 'not-a-record'), 404, 'NOT_FOUND', 'a malformed record id')
  t.same((await g.grants(g.adam, g.id('gina@globex.test'))).body.grants, [], 'another organization\'s grants are not listed')
  const [kept] = await g.w.service.db.owner`select revoked_at from app.competence_grants where id = ${foreign.body.recordId}`
  t.equal(kept!.revoked_at, null, 'and stay untouched')
})

t.test('removing or disabling a member revokes their live grants, audited, still listed', async (t) => {
  const g = await governance(t)
  const [maxId, eddieId] = [g.id('max@acme.test'), g.id('eddie@acme.test')]
  const made = async (userId: string, competence: string) =>
    (await g.grant(g.adam, { userId, competence, evidence: 'trusted' })).body.recordId as string
  const eddieGrant = await made(eddieId, 'tale:notifications.export')
  const maxGrants = [await made(maxId, 'tale:rest.act-as'), await made(maxId, 'tale:skills.publish')]
  const earlier = await made(maxId, 'tale:notifications.export')
  await g.revoke(g.adam, earlier)
  t.match(await capabilities(g.w, 'eddie'), { notificationExport: true })

  await g.w.service.db.owner`select app.operator_member_add(${g.org}, ${eddieId}, 'editor', true)`
  const [eddieRow] = (await g.grants(g.adam, eddieId)).body.grants
  t.match(eddieRow, { recordId: eddieGrant, live: false, revokedBy: null }, 'disabling revokes (an operator: no revoker)')
  t.type(eddieRow.revokedAt, 'number')
  t.match((await g.audit(eddieGrant)).map((a) => [a.action, a.data.reason]),
    [['competence.granted'], ['competence.revoked', 'member disabled']])

  await g.w.service.db.owner`delete from app.memberships where organization_id = ${g.org} and user_id = ${maxId}`
  const listed = (await g.grants(g.adam, maxId)).body.grants
  t.equal(listed.length, 3, 'a former member\'s grants stay listed')
  t.ok(listed.every((row: any) => !row.live && row.revokedAt !== null), 'all revoked')
  for (const recordId of maxGrants) {
    t.match((await g.audit(recordId)).map((a) => [a.action, a.data.reason]),
      [['competence.granted'], ['competence.revoked', 'member removed']], 'each removal audited')
  }
  t.equal((await g.audit(earlier)).length, 2, 'a grant revoked before is not revoked again')
  refused(t, await g.grant(g.adam, { userId: maxId, competence: 'tale:rest.act-as', evidence: 'back?' }),
    400, 'COMPETENCE_USER_NOT_MEMBER', 'a removed member is granted nothing')

  // Re-enabling restores the membership, never the grants.
  await g.w.service.db.owner`select app.operator_member_add(${g.org}, ${eddieId}, 'editor', false)`
  t.match(await capabilities(g.w, 'eddie'), { notificationExport: false }, 're-enabling restores no grant')
})

t.test('the document publishes the routes as session operations', async (t) => {
  const g = await governance(t)
  const document = (await g.w.service.request('GET', '/openapi.json')).body
  t.same(document.components.securitySchemes.session, { ...document.components.securitySchemes.session, in: 'cookie', name: 'tale_session' })
  for (const [path, method] of [[base, 'get'], [base, 'post'], [`${base}/{recordId}/revoke`, 'post']] as const) {
    const operation = document.paths[path][method]
    t.same(operation.security, [{ session: [] }], `${method} ${path}`)
    t.ok(operation.parameters.some((p: any) => p.in === 'query' && p.name === 'orgId' && p.required), 'orgId is a required query parameter')
    t.notOk(operation.parameters.some((p: any) => p.$ref === '#/components/parameters/OrganizationSlug'), 'no slug header')
  }
})
