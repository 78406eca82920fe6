// Signing in to the app (SPEC "What the service does" item 6, DESIGN "Sessions"):
// passwords against the stored scrypt hash, throttled per address and account; the
// session cookie's attributes and its rotation; the Origin check on every form; the
// TOTP second factor, enrolled from the settings and required by an organization's
// policy; sign-out.
import t, { type Test } from 'tap'
import { world } from '../lib/world.ts'
import { acme } from '../lib/fixtures.ts'
import { browser, totpCode } from '../lib/browser.ts'
import { sessionCookie, clearedSessionCookie } from '../../server/auth/session.ts'

async function appWorld(t: Test, env: Record<string, string> = {}) {
  const users = acme().users!.map((u) => ['olive@acme.test', 'dev@acme.test', 'max@acme.test'].includes(u.email)
    ? { ...u, password: `pw-${u.email.split('@')[0]}` } : u)
  const w = await world(t, { env, seed: { users } })
  const signedIn = async (email: string) => {
    const b = browser(w.service.url)
    const page = await b.post('/app/sign-in', { email, password: `pw-${email.split('@')[0]}`, return: '/app/settings' })
    if (page.status !== 303) throw new Error(`sign-in answered ${page.status}`)
    return b
  }
  return { ...w, signedIn }
}

t.test('the sign-in page is a plain form that works without scripts, never cached', async (t) => {
  const { service } = await appWorld(t)
  const b = browser(service.url)
  const page = await b.get('/app/sign-in?return=/app/settings/api-keys')
  t.equal(page.status, 200)
  t.match(page.headers.get('content-type'), /^text\/html/)
  t.equal(page.headers.get('cache-control'), 'no-store')
  t.match(page.headers.get('content-security-policy'), /default-src 'none'/)
  t.match(page.text, /<form method="post" action="\/app\/sign-in">/)
  t.match(page.text, /<label for="email">Email<\/label>/)
  t.match(page.text, /name="return" value="\/app\/settings\/api-keys"/)
  t.notMatch(page.text, /<script/)
  const elsewhere = await b.get('/app/sign-in?return=//evil.example/x')
  t.match(elsewhere.text, /name="return" value="\/app\/settings"/, 'a return address off the service is dropped')
})

t.test('a right password opens a session: HttpOnly, SameSite=Lax cookie, then the page asked for', async (t) => {
  const { service } = await appWorld(t)
  const b = browser(service.url)
  const wrong = await b.post('/app/sign-in', { email: 'olive@acme.test', password: 'nope', return: '/app/settings' })
  t.equal(wrong.status, 401)
  t.match(wrong.text, /role="alert">That email and password do not match an account/)
  t.equal(b.cookies.size, 0, 'no cookie for a wrong password')
  const unknown = await b.post('/app/sign-in', { email: 'nobody@acme.test', password: 'nope' })
  t.equal(unknown.status, 401, 'an unknown address answers the same')

  const right = await b.post('/app/sign-in', { email: ' Olive@Acme.test ', password: 'pw-olive', return: '/app/settings/api-keys' })
  t.equal(right.status, 303)
  t.equal(right.location, '/app/settings/api-keys')
  const cookie = right.headers.getSetCookie()[0]!
  t.match(cookie, /^tale_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=43200$/, 'no Secure on loopback over HTTP')
  const settings = await b.get('/app/settings')
  t.equal(settings.status, 200)
  t.match(settings.text, /olive &lt;olive@acme.test&gt;/)
  t.match(settings.text, /Acme: owner/)
})

t.test('outside loopback the cookie is Secure', async (t) => {
  t.match(sessionCookie('x'.repeat(43), 'https://tale.example', 60), /; Secure$/)
  t.match(sessionCookie('x'.repeat(43), 'http://tale.internal:3000', 60), /; Secure$/, 'plain HTTP off loopback too')
  t.notMatch(sessionCookie('x'.repeat(43), 'http://127.0.0.1:3000', 60), /Secure/)
  t.match(clearedSessionCookie('https://tale.example'), /^tale_session=; .*Max-Age=0; Secure$/)
})

t.test('each sign-in rotates the session: the cookie held before stops working', async (t) => {
  const { signedIn, service } = await appWorld(t)
  const b = await signedIn('olive@acme.test')
  const before = b.cookies.get('tale_session')!
  const old = browser(service.url)
  old.cookies.set('tale_session', before)
  t.equal((await old.get('/app/settings')).status, 200)
  await b.post('/app/sign-in', { email: 'olive@acme.test', password: 'pw-olive' })
  t.not(b.cookies.get('tale_session'), before, 'a new token')
  const stale = await old.get('/app/settings')
  t.equal(stale.status, 303, 'the old token no longer signs anyone in')
  t.equal(stale.location, '/app/sign-in?return=%2Fapp%2Fsettings')
})

t.test('every state-changing form must come from the service\'s own origin', async (t) => {
  const { signedIn, service } = await appWorld(t)
  const b = browser(service.url)
  const none = await b.post('/app/sign-in', { email: 'olive@acme.test', password: 'pw-olive' }, null)
  t.equal(none.status, 403)
  t.match(none.text, /needs an Origin header/)
  const foreign = await b.post('/app/sign-in', { email: 'olive@acme.test', password: 'pw-olive' }, 'https://evil.example')
  t.equal(foreign.status, 403)
  t.match(foreign.text, /comes from another site/)
  t.equal(b.cookies.size, 0)
  const olive = await signedIn('olive@acme.test')
  t.equal((await olive.post('/app/settings/api-keys', { name: 'x' }, 'https://evil.example')).status, 403, 'settings forms too')
  t.equal((await olive.post('/app/sign-out', {}, 'https://evil.example')).status, 403, 'and sign-out')
  t.equal((await olive.get('/app/settings')).status, 200, 'the refused sign-out ended nothing')
})

t.test('attempts are throttled per account and per source address', async (t) => {
  // A quarter of the documented budgets: an account's burst of 2.5, an address's of 10.
  const { service } = await appWorld(t, { RATE_LIMIT_SCALE: '0.25' })
  const b = browser(service.url)
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) statuses.push((await b.post('/app/sign-in', { email: 'olive@acme.test', password: `wrong-${i}` })).status)
  t.same(statuses, [401, 401, 429], 'an account\'s burst, then 429')
  const limited = await b.post('/app/sign-in', { email: 'olive@acme.test', password: 'pw-olive' })
  t.equal(limited.status, 429, 'even the right password waits')
  t.match(limited.headers.get('retry-after'), /^\d+$/)
  t.match(limited.text, /Too many attempts/)
  t.equal(b.cookies.size, 0)
  const spread: number[] = []
  for (let i = 0; i < 12; i++) spread.push((await b.post('/app/sign-in', { email: `someone-${i}@acme.test`, password: 'x' })).status)
  t.equal(spread.at(-1), 429, 'one address guessing many accounts is throttled too')
  t.equal(spread[0], 401, 'while it had budget, each account answered for itself')
})

t.test('a second factor: enrolled from the settings, then asked at every sign-in, each code once', async (t) => {
  const { signedIn, service } = await appWorld(t)
  const b = await signedIn('dev@acme.test')
  const security = await b.get('/app/settings/security')
  t.equal(security.status, 200)
  const secret = b.field(security, 'secret')
  t.match(secret, /^[A-Z2-7]{32}$/)
  t.match(security.text, /otpauth:\/\/totp\/Tale:dev%40acme.test\?/)
  t.equal((await b.post('/app/settings/security/totp', { secret, code: '000000' })).status, 400, 'a wrong code turns nothing on')
  const on = await b.post('/app/settings/security/totp', { secret, code: totpCode(secret) })
  t.equal(on.status, 303)
  t.match((await b.get('/app/settings/security')).text, /An authenticator app is set up/)

  const next = browser(service.url)
  const password = await next.post('/app/sign-in', { email: 'dev@acme.test', password: 'pw-dev', return: '/app/settings/api-keys' })
  t.equal(password.status, 303)
  t.equal(password.location, '/app/sign-in/totp?return=%2Fapp%2Fsettings%2Fapi-keys')
  t.equal((await next.get('/app/settings')).status, 303, 'a password alone signs nobody in')
  const bad = await next.post('/app/sign-in/totp', { code: '123456', return: '/app/settings/api-keys' })
  t.equal(bad.status, 401)
  const pending = next.cookies.get('tale_session')
  // The enrolment used the current step: the next step's code completes the sign-in.
  const good = await next.post('/app/sign-in/totp', { code: totpCode(secret, 1), return: '/app/settings/api-keys' })
  t.equal(good.status, 303)
  t.equal(good.location, '/app/settings/api-keys')
  t.not(next.cookies.get('tale_session'), pending, 'the cookie is rotated at the second factor')
  t.equal((await next.get('/app/settings')).status, 200)

  const third = browser(service.url)
  await third.post('/app/sign-in', { email: 'dev@acme.test', password: 'pw-dev' })
  t.equal((await third.post('/app/sign-in/totp', { code: totpCode(secret, 1) })).status, 401, 'a code works once')
})

t.test('an organization that requires a second factor admits only sessions that proved one', async (t) => {
  const { signedIn, service, seeded } = await appWorld(t)
  await service.db.owner`update app.organizations set require_mfa = true where id = ${seeded.organizations.acme!.id}`
  const b = await signedIn('olive@acme.test')
  const settings = await b.get('/app/settings')
  t.equal(settings.status, 303)
  t.equal(settings.location, '/app/settings/security?required=1')
  const security = await b.get('/app/settings/security?required=1')
  t.match(security.text, /Your organization requires a second factor/)
  const secret = b.field(security, 'secret')
  t.equal((await b.post('/app/settings/security/totp', { secret, code: totpCode(secret) })).status, 303)
  t.equal((await b.get('/app/settings')).status, 303, 'this session still proved no second factor')
  const removal = await b.post('/app/settings/security/totp/remove', {})
  t.equal(removal.status, 403, 'nor can the factor be removed while the organization requires it')
  t.match(removal.text, /Acme requires a second factor/)

  const again = browser(service.url)
  await again.post('/app/sign-in', { email: 'olive@acme.test', password: 'pw-olive' })
  await again.post('/app/sign-in/totp', { code: totpCode(secret, 1) })
  t.equal((await again.get('/app/settings')).status, 200, 'a session with the second factor is admitted')
})

t.test('sign-out ends the session and clears the cookie', async (t) => {
  const { signedIn, service } = await appWorld(t)
  const b = await signedIn('olive@acme.test')
  const token = b.cookies.get('tale_session')!
  const out = await b.post('/app/sign-out', {})
  t.equal(out.status, 303)
  t.equal(out.location, '/app/sign-in')
  t.match(out.headers.getSetCookie()[0], /^tale_session=; Path=\/; HttpOnly; SameSite=Lax; Max-Age=0/)
  const replay = browser(service.url)
  replay.cookies.set('tale_session', token)
  t.equal((await replay.get('/app/settings')).status, 303, 'the ended session signs nobody in')
})
