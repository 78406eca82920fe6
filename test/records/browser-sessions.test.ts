// Browser sessions over real HTTP (docs/skills.md "Browser sessions"): imports only
// for operators on the deployment allowlist, a masked list and read, sealed at rest
// under BROWSER_SESSION_KEY, revocation, and no cookie or storage value in any answer.
import { randomBytes, randomUUID } from 'node:crypto'
import t from 'tap'
import { world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'
import type { Response } from '../lib/service.ts'
import { parseSealingKey, seal, sealingKeyId, unseal } from '../../server/core/sealed.ts'
import { loadConfig } from '../../server/core/config.ts'

const key = randomBytes(32).toString('base64')
const secret = (label: string) => `${label}-${randomUUID()}`
const values = { session: secret('sessval'), csrf: secret('csrfval'), token: secret('lsval'), cookieName: secret('cookiename') }
const lapses = Math.floor(Date.now() / 1000) + 86_400
const portal = {
  name: 'Supplier portal',
  cookies: [
    { name: 'session', value: values.session, domain: '.Portal.Example.com', path: '/', expires: lapses, httpOnly: true, secure: true, sameSite: 'Lax' },
    { name: values.cookieName, value: values.csrf, domain: 'portal.example.com', expires: lapses - 3600 },
    { name: 'pref', value: '', domain: 'example.com', expires: -1 },
  ],
  localStorage: { 'https://portal.example.com': { token: values.token } },
}
const everySecret = Object.values(values)

/** Every answer a test saw, to show no value ever left in any of them. */
function recorder() {
  const seen: Response[] = []
  return {
    seen,
    keep: (res: Response) => { seen.push(res); return res },
  }
}

t.test('sealing: the plaintext opens only with the same key and the same row', async (t) => {
  const k = parseSealingKey(key)!
  const sealed = seal(k, 'cookie=1', 'browser-session:a')
  t.equal(unseal(k, sealed, 'browser-session:a').toString(), 'cookie=1')
  t.throws(() => unseal(k, sealed, 'browser-session:b'), 'bound to its row')
  t.throws(() => unseal(randomBytes(32), sealed, 'browser-session:a'), 'and to its key')
  t.notSame(seal(k, 'cookie=1', 'x'), seal(k, 'cookie=1', 'x'), 'a fresh nonce every time')
  t.equal(parseSealingKey(randomBytes(16).toString('base64')), null, '16 bytes is no key')
  t.throws(() => loadConfig({ BROWSER_SESSION_KEY: 'not-a-key' }), /BROWSER_SESSION_KEY: must be 32 bytes in base64/, 'a malformed key stops start-up')
  try {
    loadConfig({ BROWSER_SESSION_KEY: 'not-a-key' })
  } catch (error) {
    t.notMatch((error as Error).message, /not-a-key/, 'without repeating the value')
  }
})

t.test('browser sessions with a key configured', async (t) => {
  const { service, seeded, olive, adam, max, eddie, gina } = await world(t, { env: { BROWSER_SESSION_KEY: key } })
  const { seen, keep } = recorder()
  const owner = service.db.owner
  const maxId = seeded.users['max@acme.test']!.id

  await t.test('an owner or admin not on the allowlist is refused 403 ROLE_FORBIDDEN; nothing is stored', async (t) => {
    for (const [who, caller] of [['the owner', olive], ['an admin', adam]] as const) {
      const body = refused(t, keep(await caller.post('/api/v1/browser-sessions/import', portal)), 403, 'ROLE_FORBIDDEN', who)
      t.equal(body.data.capability, 'deploymentEditor')
      t.equal((await caller.get('/api/v1/me')).body.capabilities.deploymentEditor, false)
    }
    const [rows] = await owner`select count(*)::int as n from app.browser_sessions`
    t.equal(rows!.n, 0)
  })

  await owner`insert into app.deployment_editors (user_id) values (${maxId})`
  const imported = keep(await max.post('/api/v1/browser-sessions/import', portal))
  const id = imported.body?.browserSession?.id as string

  await t.test('an operator on the allowlist imports, whatever their role: 201, Location, masked', async (t) => {
    t.equal((await max.get('/api/v1/me')).body.capabilities.deploymentEditor, true)
    t.equal(imported.status, 201)
    t.equal(imported.headers.get('location'), `/api/v1/browser-sessions/${id}`)
    t.same(imported.body, { browserSession: {
      id, name: 'Supplier portal', domains: ['example.com', 'portal.example.com'], cookieCount: 3,
      expiresAt: lapses * 1000, createdBy: maxId, createdAt: imported.body.browserSession.createdAt,
      revokedAt: null, revokedBy: null,
    } }, 'domains without a leading dot, lower-case, once; expiresAt when the last cookie lapses')
  })

  await t.test('every member lists and reads it, masked; another organization does not', async (t) => {
    const list = keep(await eddie.get('/api/v1/browser-sessions'))
    t.equal(list.status, 200)
    t.same(list.body, { browserSessions: [imported.body.browserSession] })
    t.same(keep(await olive.get(`/api/v1/browser-sessions/${id}`)).body, imported.body)
    refused(t, keep(await gina.get(`/api/v1/browser-sessions/${id}`)), 404, 'BROWSER_SESSION_NOT_FOUND', 'another organization')
    t.same(keep(await gina.get('/api/v1/browser-sessions')).body, { browserSessions: [] })
    refused(t, keep(await eddie.get(`/api/v1/browser-sessions/${randomUUID()}`)), 404, 'BROWSER_SESSION_NOT_FOUND', 'an unknown id')
  })

  await t.test('at rest the cookies are ciphertext under the key, which the request role cannot even select', async (t) => {
    const [row] = await owner`select sealed, key_id, to_jsonb(b)::text as everything from app.browser_sessions b where id = ${id}`
    const sealed = row!.sealed as Buffer
    for (const value of everySecret) {
      t.notOk(row!.everything.includes(value), 'no column holds a value')
      t.notOk(sealed.includes(Buffer.from(value)), 'the sealed bytes do not contain it')
    }
    t.equal(row!.key_id, sealingKeyId(parseSealingKey(key)!), 'the key that sealed it is named by its digest')
    const opened = JSON.parse(unseal(parseSealingKey(key)!, sealed, `browser-session:${id}`).toString())
    t.same(opened.cookies.map((c: { value: string }) => c.value), [values.session, values.csrf, ''], 'the key opens it')
    t.same(opened.localStorage, portal.localStorage)
    const audit = await owner`select data::text as data from app.audit_log where action like 'browser_session.%'`
    t.equal(audit.length, 1, 'the import is audited')
    t.notOk(audit.some((a) => everySecret.some((value) => a.data.includes(value))), 'without a value')
    const [privilege] = await owner`select has_column_privilege('api', 'app.browser_sessions', 'sealed', 'SELECT') as readable`
    t.equal(privilege!.readable, false)
  })

  await t.test('shape refusals name the path, never the value sent', async (t) => {
    const bad = {
      name: 'Bad',
      cookies: [
        { name: 'a', value: 12345678901, domain: 'example.com' },
        { name: 'b', value: values.session, domain: `bad domain ${values.csrf}` },
        { name: 'c', value: 'x'.repeat(4097) + values.token, domain: 'example.com' },
        { name: 'd', value: values.token, domain: 'example.com', expires: 'soon', sameSite: values.session },
      ],
      localStorage: { 'https://portal.example.com': { token: 99887766554 } },
    }
    const body = refused(t, keep(await max.post('/api/v1/browser-sessions/import', bad)), 400, 'INVALID_BODY')
    t.same(body.data.issues.map((i: { path: string }) => i.path).sort(), [
      'cookies.0.value', 'cookies.1.domain', 'cookies.2.value', 'cookies.3.expires', 'cookies.3.sameSite',
      'localStorage.https://portal.example.com.token',
    ])
    const text = JSON.stringify(body)
    t.notOk(text.includes('12345678901') || text.includes('99887766554'), 'not even a number sent as a value')
  })

  await t.test('revoking: deploymentEditor only; erases the cookies, keeps the record; idempotent', async (t) => {
    const denied = refused(t, keep(await adam.post(`/api/v1/browser-sessions/${id}/revoke`)), 403, 'ROLE_FORBIDDEN', 'an admin')
    t.equal(denied.data.capability, 'deploymentEditor')
    const revoked = keep(await max.post(`/api/v1/browser-sessions/${id}/revoke`))
    t.equal(revoked.status, 200)
    t.match(revoked.body.browserSession, { id, revokedAt: Number, revokedBy: maxId, cookieCount: 3 })
    const [row] = await owner`select sealed from app.browser_sessions where id = ${id}`
    t.equal(row!.sealed, null, 'the sealed cookies are erased')
    const again = keep(await max.post(`/api/v1/browser-sessions/${id}/revoke`))
    t.same(again.body, revoked.body, 'a second revocation answers the first')
    t.same(keep(await eddie.get('/api/v1/browser-sessions')).body.browserSessions.map((s: { id: string }) => s.id), [id],
      'still listed')
    refused(t, keep(await max.post(`/api/v1/browser-sessions/${randomUUID()}/revoke`)), 404, 'BROWSER_SESSION_NOT_FOUND')
    const [audit] = await owner`select count(*)::int as n from app.audit_log where action = 'browser_session.revoked'`
    t.equal(audit!.n, 1)
  })

  await t.test('no answer carried a cookie name or value or a storage value', async (t) => {
    t.ok(seen.length >= 10, `${seen.length} answers seen`)
    for (const res of seen) {
      for (const value of everySecret) t.notOk(res.text.includes(value), `${res.status}: no value in the body`)
      res.headers.forEach((header, name) => {
        t.notOk(everySecret.some((value) => header.includes(value)), `no value in ${name}`)
      })
    }
  })
})

t.test('without BROWSER_SESSION_KEY an import answers 503 BROWSER_SESSION_KEY_UNCONFIGURED, after the capability', async (t) => {
  const { service, seeded, adam, max } = await world(t)
  refused(t, await adam.post('/api/v1/browser-sessions/import', portal), 403, 'ROLE_FORBIDDEN', 'not on the allowlist: 403 first')
  await service.db.owner`insert into app.deployment_editors (user_id) values (${seeded.users['max@acme.test']!.id})`
  const body = refused(t, await max.post('/api/v1/browser-sessions/import', portal), 503, 'BROWSER_SESSION_KEY_UNCONFIGURED')
  t.notOk(JSON.stringify(body).includes(values.session))
  const [rows] = await service.db.owner`select count(*)::int as n from app.browser_sessions`
  t.equal(rows!.n, 0, 'nothing stored')
})
