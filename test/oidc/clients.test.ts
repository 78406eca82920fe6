// Registering applications with the identity issuer (SPEC endpoint table): 201 with the
// secret once, the same configuration 200 without it, a changed one 409; exact
// callbacks; rotation retiring the old secret at once; disabling and restoring; only
// owners and admins of the organization, signed in to the app, from its own pages.
import t from 'tap'
import { createHash } from 'node:crypto'
import { world } from '../lib/world.ts'
import { signIn } from '../lib/session.ts'
import { refused } from '../lib/assert.ts'
import { REDIRECT_URI, browserOf, codeFlow, CookieJar, follow, relyingParty, tokenRequest } from './lib.ts'

const clients = '/api/app/identity/clients'

t.test('register: 201 with the secret once, 200 for the same configuration, 409 for another', async (t) => {
  const w = await world(t, { projects: [] })
  const acme = w.seeded.organizations.acme!.id
  const olive = await signIn(w, 'olive@acme.test')
  const register = (body: Record<string, unknown>) => olive.post(`${clients}?orgId=${acme}`, body)
  const body = { key: 'portal', name: 'Acme Portal', redirectUri: 'https://portal.acme.example/oidc/callback' }

  const created = await register(body)
  t.equal(created.status, 201)
  t.equal(created.headers.get('location'), '/api/app/identity/clients/portal')
  t.match(created.body, {
    created: true,
    client: { client_id: /^tale_[A-Za-z0-9_-]{22}$/, client_secret: /^[A-Za-z0-9_-]{43}$/, key: 'portal', name: 'Acme Portal',
      redirectUri: body.redirectUri, organizationId: acme, disabled: false, createdAt: Number, updatedAt: Number },
  })
  const { client_id: clientId, client_secret: secret } = created.body.client

  const again = await register({ ...body, name: '  Acme Portal ' })
  t.equal(again.status, 200, 'the same configuration (names are trimmed) answers what is there')
  const { client_secret: _shown, ...kept } = created.body.client
  t.same(again.body, { created: false, client: kept })
  t.notOk('client_secret' in again.body.client, 'without the secret')
  t.equal(again.headers.get('location'), null, 'nothing was created')

  const moved = refused(t, await register({ ...body, redirectUri: 'https://portal.acme.example/other' }), 409, 'IDENTITY_CLIENT_CONFLICT', 'another callback')
  t.same(moved.data, { key: 'portal', fields: ['redirectUri'] })
  const renamed = refused(t, await register({ ...body, name: 'Portal 2' }), 409, 'IDENTITY_CLIENT_CONFLICT', 'another name')
  t.same(renamed.data, { key: 'portal', fields: ['name'] })

  const [row] = await w.service.db.owner<{ hash: string; name: string; redirect: string }[]>`
    select encode(secret_hash, 'hex') as hash, name, redirect_uri as redirect from app.identity_clients where client_id = ${clientId}`
  t.equal(row!.hash, createHash('sha256').update(secret).digest('hex'), 'only the secret\'s SHA-256 is stored')
  t.same([row!.name, row!.redirect], ['Acme Portal', body.redirectUri], 'the conflicts changed nothing')
  const [stored] = await w.service.db.owner<{ n: number }[]>`
    select count(*)::int as n from app.identity_clients c where to_jsonb(c)::text like ${`%${secret}%`}`
  t.equal(stored!.n, 0, 'the plaintext secret is nowhere in the row')
  const audit = await w.service.db.owner<{ action: string }[]>`select action from app.audit_log where subject_type = 'identity_client'`
  t.same(audit.map((a) => a.action), ['identity_client.registered'], 'audited once')
})

t.test('callbacks are exact HTTPS addresses; plain HTTP only on loopback', async (t) => {
  const w = await world(t, { projects: [] })
  const acme = w.seeded.organizations.acme!.id
  const olive = await signIn(w, 'olive@acme.test')
  let n = 0
  const register = (redirectUri: string) => olive.post(`${clients}?orgId=${acme}`, { key: `app-${++n}`, name: 'App', redirectUri })
  for (const good of ['https://app.example.com/cb', 'https://app.example.com:8443/cb?tenant=acme', 'https://app.example.com',
    'http://localhost:3000/callback', 'http://127.0.0.1/cb', 'http://[::1]:8080/cb', 'https://[2001:db8::1]/cb']) {
    t.equal((await register(good)).status, 201, `${good} is accepted`)
  }
  for (const bad of ['http://app.example.com/cb', 'https://app.example.com/cb#done', 'https://*.example.com/cb',
    'https://user:pw@app.example.com/cb', 'app.example.com/cb', 'https://app example.com/cb', 'ftp://app.example.com/cb',
    'http://localhost.example.com/cb', 'http://10.0.0.1/cb', 'https:///cb', '']) {
    const body = refused(t, await register(bad), 400, 'IDENTITY_CLIENT_CALLBACK_INVALID', JSON.stringify(bad))
    t.same(body.data, { redirectUri: bad })
  }
})

t.test('the registered callback is matched exactly at the authorization', async (t) => {
  const rp = await relyingParty(t)
  const { jar } = await browserOf(rp, 'max@acme.test')
  for (const variant of [`${REDIRECT_URI}/`, REDIRECT_URI.replace('/callback', '/CALLBACK'), `${REDIRECT_URI}?x=1`, REDIRECT_URI.replace('127.0.0.1:9', '127.0.0.1:10')]) {
    const url = new URL((await rp.start()).url)
    url.searchParams.set('redirect_uri', variant)
    const landing = await follow(url, jar)
    t.notOk(landing.callback, `${variant}: not redirected to`)
    t.equal(landing.status, 400, `${variant}: the issuer's error page`)
  }
})

t.test('rotating the secret shows the new one once and retires the old one at once', async (t) => {
  const rp = await relyingParty(t)
  const acme = rp.w.seeded.organizations.acme!.id
  const rotated = await rp.owner.post(`${clients}/portal/rotate-secret?orgId=${acme}`, {})
  t.equal(rotated.status, 200)
  t.match(rotated.body, { client: { client_id: rp.clientId, key: 'portal', client_secret: /^[A-Za-z0-9_-]{43}$/ } })
  const fresh = rotated.body.client.client_secret as string
  t.not(fresh, rp.clientSecret)

  const old = await tokenRequest(rp, { grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT_URI })
  t.equal(old.status, 401)
  t.equal(old.body.error, 'invalid_client', 'the old secret no longer authenticates')
  const { jar } = await browserOf(rp, 'max@acme.test')
  const withFresh = { ...rp, config: await rp.configure(fresh) }
  t.ok((await codeFlow(withFresh, jar)).tokens.id_token, 'the new one does')
  t.equal((await rp.owner.post(`${clients}/portal/rotate-secret?orgId=${acme}`)).status, 200, 'the body may be left out')

  refused(t, await rp.owner.post(`${clients}/nothing/rotate-secret?orgId=${acme}`, {}), 404, 'IDENTITY_CLIENT_NOT_FOUND')
  refused(t, await rp.owner.post(`${clients}/portal/rotate-secret?orgId=${acme}`, { secret: 'mine' }), 400, 'INVALID_BODY',
    'no secret can be chosen')
  const audit = await rp.w.service.db.owner<{ action: string }[]>`
    select action from app.audit_log where subject_type = 'identity_client' order by id`
  t.same(audit.map((a) => a.action), ['identity_client.registered', 'identity_client.secret_rotated', 'identity_client.secret_rotated'])
})

t.test('status: disabled and restored, answered with the client; unknown keys 404', async (t) => {
  const rp = await relyingParty(t)
  const acme = rp.w.seeded.organizations.acme!.id
  const status = (body: unknown, key = 'portal') => rp.owner.post(`${clients}/${key}/status?orgId=${acme}`, body)
  const disabled = await status({ disabled: true })
  t.equal(disabled.status, 200)
  t.match(disabled.body, { client: { client_id: rp.clientId, disabled: true } })
  t.notOk('client_secret' in disabled.body.client)
  t.equal((await status({ disabled: true })).body.client.disabled, true, 'disabling again changes nothing')
  const page = await follow((await rp.start()).url, new CookieJar())
  t.equal(page.status, 400, 'a disabled client is unknown to the issuer')
  t.match((await status({ disabled: false })).body, { client: { disabled: false } })
  refused(t, await status({ disabled: 'yes' }), 400, 'INVALID_BODY')
  refused(t, await status({}), 400, 'INVALID_BODY')
  refused(t, await status({ disabled: true }, 'nothing'), 404, 'IDENTITY_CLIENT_NOT_FOUND')
  const audit = await rp.w.service.db.owner<{ action: string }[]>`
    select action from app.audit_log where subject_type = 'identity_client' order by id`
  t.same(audit.map((a) => a.action), ['identity_client.registered', 'identity_client.disabled', 'identity_client.restored'])
})

t.test('owners and admins of the organization only, signed in to the app, from the service\'s own pages', async (t) => {
  const w = await world(t, { projects: [] })
  const acme = w.seeded.organizations.acme!.id
  const globex = w.seeded.organizations.globex!.id
  const body = { key: 'portal', name: 'Portal', redirectUri: 'https://portal.example/cb' }
  const adam = await signIn(w, 'adam@acme.test')
  t.equal((await adam.post(`${clients}?orgId=${acme}`, body)).status, 201, 'an admin registers')

  for (const email of ['dev@acme.test', 'eddie@acme.test', 'max@acme.test']) {
    const person = await signIn(w, email)
    refused(t, await person.post(`${clients}?orgId=${acme}`, { ...body, key: 'mine' }), 403, 'ROLE_FORBIDDEN', `${email} registers`)
    refused(t, await person.post(`${clients}/portal/rotate-secret?orgId=${acme}`, {}), 403, 'ROLE_FORBIDDEN', `${email} rotates`)
    refused(t, await person.post(`${clients}/portal/status?orgId=${acme}`, { disabled: true }), 403, 'ROLE_FORBIDDEN', `${email} disables`)
  }

  const key = w.seeded.users['olive@acme.test']!.keys.main!
  const keyed = await w.service.request('POST', `${clients}?orgId=${acme}`, { key, body, headers: { origin: w.service.url } })
  refused(t, keyed, 401, 'UNAUTHORIZED', 'an API key')

  const olive = await signIn(w, 'olive@acme.test')
  refused(t, await olive.request('POST', `${clients}?orgId=${acme}`, { body, origin: null }), 403, 'ORIGIN_FORBIDDEN', 'no Origin')
  refused(t, await olive.request('POST', `${clients}?orgId=${acme}`, { body, origin: 'https://evil.example' }), 403,
    'ORIGIN_FORBIDDEN', 'another site')
  refused(t, await olive.post(clients, body), 400, 'INVALID_QUERY', 'no organization named')
  refused(t, await olive.post(`${clients}?orgId=${acme}`, { ...body, key: 'a/b' }), 400, 'INVALID_BODY', 'a key with a slash')
  refused(t, await olive.post(`${clients}?orgId=${acme}`, { ...body, extra: 1 }), 400, 'INVALID_BODY', 'an unknown key')

  // Each client is bound to one organization: globex's owner neither sees nor changes acme's.
  const gina = await signIn(w, 'gina@globex.test')
  refused(t, await gina.post(`${clients}?orgId=${acme}`, body), 403, 'ORG_FORBIDDEN', 'an owner of another organization')
  refused(t, await gina.post(`${clients}/portal/rotate-secret?orgId=${globex}`, {}), 404, 'IDENTITY_CLIENT_NOT_FOUND',
    'another organization\'s client')
  const own = await gina.post(`${clients}?orgId=${globex}`, body)
  t.equal(own.status, 201, 'the same key is globex\'s own client')
  t.equal(own.body.client.organizationId, globex)
  const [count] = await w.service.db.owner<{ n: number }[]>`select count(distinct client_id)::int as n from app.identity_clients where key = 'portal'`
  t.equal(count!.n, 2, 'two clients, one per organization')
})
