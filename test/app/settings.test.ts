// The app's settings (SPEC "API keys" item 1, "Organization selection"): Settings >
// API > REST makes keys for Owners, Admins and Developers, shows each secret once,
// lists a person's own keys and revokes them; the organization switcher changes what
// the pages show, never an API key's scope.
import t, { type Test } from 'tap'
import { world } from '../lib/world.ts'
import { acme, person } from '../lib/fixtures.ts'
import { browser } from '../lib/browser.ts'

async function appWorld(t: Test) {
  const users = [
    ...acme().users!.filter((u) => !['dev@acme.test', 'max@acme.test'].includes(u.email)),
    { ...person('dev@acme.test', [{ org: 'acme', role: 'developer' }, { org: 'globex', role: 'member' }]), password: 'pw-dev' },
    { ...person('max@acme.test', [{ org: 'acme', role: 'member' }]), password: 'pw-max' },
  ]
  const w = await world(t, { seed: { users } })
  return { ...w, signedIn: (email: string) => signedInAs(w.service.url, email) }
}

/** A browser signed in as a seeded person whose password is pw-<local part>. */
async function signedInAs(base: string, email: string) {
  const b = browser(base)
  const page = await b.post('/app/sign-in', { email, password: `pw-${email.split('@')[0]}` })
  if (page.status !== 303) throw new Error(`sign-in answered ${page.status}`)
  return b
}

const secretOn = (text: string) => /aria-label="The new API key">(tale_[A-Za-z0-9_-]+)</.exec(text)?.[1]

t.test('a developer makes a key: shown once, listed with its dates, working as them, then revoked', async (t) => {
  const { signedIn, service } = await appWorld(t)
  const b = await signedIn('dev@acme.test')
  const before = await b.get('/app/settings/api-keys')
  t.equal(before.status, 200)
  t.match(before.text, /<td>main<\/td>/, 'the seeded key is listed')
  t.match(before.text, /<label for="key-name">Name<\/label>/)

  const created = await b.post('/app/settings/api-keys', { name: '  CI runner ', expiresOn: '2099-12-31' })
  t.equal(created.status, 201)
  const key = secretOn(created.text)
  t.ok(key, 'the secret is on the page once')
  t.match(created.text, /The key <strong>CI runner<\/strong> was created/)
  const me = await service.request('GET', '/api/v1/me', { key, org: 'acme' })
  t.equal(me.status, 200, 'the key works')
  t.match(me.body, { user: { email: 'dev@acme.test' }, key: { name: 'CI runner', expiresAt: Date.parse('2099-12-31T23:59:59Z') } })

  const listed = await b.get('/app/settings/api-keys')
  t.notOk(secretOn(listed.text), 'never shown again')
  t.match(listed.text, /<td>CI runner<\/td><td>\d{4}-\d\d-\d\d<\/td><td>\d{4}-\d\d-\d\d<\/td><td>2099-12-31<\/td>/, 'created, last used, expires')
  const keyId = /<td>CI runner<\/td>[\s\S]*?name="keyId" value="([^"]+)"/.exec(listed.text)![1]!
  const revoked = await b.post('/app/settings/api-keys/revoke', { keyId })
  t.equal(revoked.status, 303)
  t.equal((await service.request('GET', '/api/v1/me', { key, org: 'acme' })).status, 401, 'a revoked key is refused')
  t.match((await b.get('/app/settings/api-keys')).text, /<td>revoked<\/td>/)
  const [audit] = await service.db.owner`select array_agg(action order by id) as actions from app.audit_log where subject_type = 'api_key'`
  t.same(audit!.actions, ['api_key.created', 'api_key.revoked'])
})

t.test('key refusals: a blank name, a past expiry, a member\'s create, another person\'s key', async (t) => {
  const { signedIn, service, keyOf } = await appWorld(t)
  const dev = await signedIn('dev@acme.test')
  const blank = await dev.post('/app/settings/api-keys', { name: '   ' })
  t.equal(blank.status, 400)
  t.match(blank.text, /role="alert">The key is not valid: name required, not blank/)
  const past = await dev.post('/app/settings/api-keys', { name: 'old', expiresOn: '2001-01-01' })
  t.equal(past.status, 400)
  t.match(past.text, /expiresAt must be in the future/)

  const max = await signedIn('max@acme.test')
  const page = await max.get('/app/settings/api-keys')
  t.match(page.text, /Owners, Admins and Developers create API keys/)
  t.notMatch(page.text, /id="key-name"/, 'no form for a member')
  const refused = await max.post('/app/settings/api-keys', { name: 'sneaky' })
  t.equal(refused.status, 403)
  t.match(refused.text, /Creating an API key needs the developer capability/)

  // The seeded key of olive is someone else's: as absent as a missing one.
  const [olives] = await service.db.owner`select k.id from app.api_keys k join app.users u on u.id = k.user_id where u.email = 'olive@acme.test'`
  const other = await dev.post('/app/settings/api-keys/revoke', { keyId: olives!.id })
  t.equal(other.status, 404)
  t.equal((await service.request('GET', '/api/v1/me', { key: keyOf('olive@acme.test') })).status, 200, 'olive\'s key still works')
})

t.test('the organization switcher changes what the pages show, never an API key\'s scope', async (t) => {
  const { signedIn, service, seeded, keyOf } = await appWorld(t)
  const b = await signedIn('dev@acme.test')
  t.match((await b.get('/app/settings')).text, /Acme: developer/, 'the first organization by name')
  const switched = await b.get(`/app/settings?orgId=${seeded.organizations.globex!.id}`)
  t.equal(switched.status, 303)
  t.match((await b.get('/app/settings')).text, /Globex: member/)
  t.match((await b.get('/app/settings')).text, /<option value="[^"]+" selected>Globex<\/option>/)
  {
    const me = await service.request('GET', '/api/v1/me', { key: keyOf('dev@acme.test') })
    t.equal(me.status, 400, 'an API key of a person in two organizations still names one')
    t.equal(me.body.code, 'ORG_SLUG_REQUIRED')
  }
  const foreign = browser(service.url)
  foreign.cookies.set('tale_session', b.cookies.get('tale_session')!)
  foreign.cookies.set('tale_app_org', '00000000-0000-0000-0000-000000000000')
  const page = await foreign.get('/app/settings')
  t.equal(page.status, 403, 'an organization the person is not in is refused')
})

t.test('the settings pages send people who are not signed in to the sign-in page', async (t) => {
  const { service } = await appWorld(t)
  const b = browser(service.url)
  for (const path of ['/app/settings', '/app/settings/api-keys', '/app/settings/security']) {
    const page = await b.get(path)
    t.equal(page.status, 303, path)
    t.equal(page.location, `/app/sign-in?return=${encodeURIComponent(path)}`)
  }
  t.equal((await b.get('/app')).location, '/app/settings')
})

t.test('Settings > Competences: owners grant with evidence, /me follows at once, a revoked grant stays listed', async (t) => {
  const users = [
    { ...person('olive@acme.test', [{ org: 'acme', role: 'owner' }]), password: 'pw-olive' },
    { ...person('eddie@acme.test', [{ org: 'acme', role: 'editor' }]), password: 'pw-eddie' },
    person('max@acme.test', [{ org: 'acme', role: 'member' }]),
  ]
  const w = await world(t, { seed: { organizations: acme().organizations, users }, projects: [] })
  const sign = (email: string) => signedInAs(w.service.url, email)
  const olive = await sign('olive@acme.test')
  const maxId = w.seeded.users['max@acme.test']!.id
  const capability = async () => (await w.service.request('GET', '/api/v1/me', { key: w.keyOf('max@acme.test') })).body.capabilities.notificationExport
  t.equal(await capability(), false)

  const picker = await olive.get('/app/settings/competences')
  t.match(picker.text, /<label for="member">Member<\/label>/)
  const blank = await olive.post('/app/settings/competences', { userId: maxId, competence: 'tale:notifications.export', evidence: ' ' })
  t.equal(blank.status, 400)
  const granted = await olive.post('/app/settings/competences', { userId: maxId, competence: 'tale:notifications.export', evidence: 'Runs the CRM sync' })
  t.equal(granted.status, 303)
  t.equal(await capability(), true, 'the capability follows at once')
  const again = await olive.post('/app/settings/competences', { userId: maxId, competence: 'tale:notifications.export', evidence: 'twice' })
  t.equal(again.status, 409)
  t.match(again.text, /already holds a live grant/)
  const listed = await olive.get(`/app/settings/competences?userId=${maxId}`)
  t.match(listed.text, /<td>Notification export<\/td><td>Runs the CRM sync<\/td>/)
  const recordId = /name="recordId" value="([^"]+)"/.exec(listed.text)![1]!
  t.equal((await olive.post('/app/settings/competences/revoke', { recordId, userId: maxId })).status, 303)
  t.equal(await capability(), false, 'and goes at once')
  t.match((await olive.get(`/app/settings/competences?userId=${maxId}`)).text, /<td>revoked \d{4}-\d\d-\d\d<\/td>/, 'the revoked grant stays listed')

  const eddie = await sign('eddie@acme.test')
  const refused = await eddie.get('/app/settings/competences')
  t.equal(refused.status, 403)
  t.match(refused.text, /Owners and Admins grant and revoke competences/)
})

t.test('Settings > Identity clients: register with the secret once, repeat, conflict, rotate, disable', async (t) => {
  const users = [
    { ...person('adam@acme.test', [{ org: 'acme', role: 'admin' }]), password: 'pw-adam' },
    { ...person('eddie@acme.test', [{ org: 'acme', role: 'editor' }]), password: 'pw-eddie' },
  ]
  const w = await world(t, { seed: { organizations: acme().organizations, users }, projects: [] })
  const sign = (email: string) => signedInAs(w.service.url, email)
  const adam = await sign('adam@acme.test')
  const client = { key: 'crm', name: 'CRM', redirectUri: 'https://crm.example/callback' }
  const first = await adam.post('/app/settings/identity-clients', client)
  t.equal(first.status, 201)
  const secret = /aria-label="Client secret of CRM">([^<]+)</.exec(first.text)?.[1]
  t.ok(secret, 'the secret is shown once')
  const again = await adam.post('/app/settings/identity-clients', client)
  t.equal(again.status, 200)
  t.match(again.text, /already registered with this configuration/)
  t.notMatch(again.text, /Client secret of CRM/)
  const changed = await adam.post('/app/settings/identity-clients', { ...client, redirectUri: 'https://crm.example/other' })
  t.equal(changed.status, 409)
  const plain = await adam.post('/app/settings/identity-clients', { key: 'web', name: 'Web', redirectUri: 'http://crm.example/cb' })
  t.equal(plain.status, 400, 'plain HTTP only on loopback')
  const rotated = await adam.post('/app/settings/identity-clients/rotate', { key: 'crm' })
  const next = /aria-label="Client secret of CRM">([^<]+)</.exec(rotated.text)?.[1]
  t.ok(next)
  t.not(next, secret, 'a new secret')
  t.equal((await adam.post('/app/settings/identity-clients/status', { key: 'crm', disabled: 'true' })).status, 303)
  t.match((await adam.get('/app/settings/identity-clients')).text, /<td>disabled<\/td>/)

  const eddie = await sign('eddie@acme.test')
  t.equal((await eddie.get('/app/settings/identity-clients')).status, 403)
  t.equal((await eddie.post('/app/settings/identity-clients', { key: 'x', name: 'X', redirectUri: 'https://x.example/cb' })).status, 403)
})
