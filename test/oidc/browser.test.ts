// The sign-in to an application in a real browser: from the application's
// authorization request through the app's sign-in page (a password, and a TOTP code
// where the person has a second factor) and the consent page back to the
// application's callback, then the tokens checked as a relying party checks them; the
// issuer's pages checked by axe-core for WCAG 2.1 A and AA.
import t from 'tap'
import * as client from 'openid-client'
import * as OTPAuth from 'otpauth'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import { totpCode } from '../lib/browser.ts'
import type { BrowserContext } from 'playwright-core'
import { inspect, launch } from '../lib/chromium.ts'
import { acme, person } from '../lib/fixtures.ts'
import { REDIRECT_URI, relyingParty } from './lib.ts'

const users = [
  ...acme().users!.filter((u) => u.email !== 'max@acme.test'),
  { ...person('max@acme.test', [{ org: 'acme', role: 'member' }]), name: 'Max Mustermann', password: 'pw-max' },
]

// The application's callback is not a server here: the browser's arrival is the answer.
async function callbackArrivals(context: BrowserContext): Promise<string[]> {
  const arrived: string[] = []
  await context.route(`${REDIRECT_URI}**`, (route) => {
    arrived.push(route.request().url())
    return route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>Callback</title><main>ok</main>' })
  })
  return arrived
}

t.test('a person signs in to an application with their password, consents, and the application gets its code', async (t) => {
  const rp = await relyingParty(t, { seed: { users }, projects: [] })
  const { context } = await launch(t)
  const arrived = await callbackArrivals(context)
  const page = await context.newPage()
  const accessible = async (name: string) => t.same(await inspect(page, name), [], `${name}: no accessibility violations`)

  const started = await rp.start({ prompt: 'consent' })
  await page.goto(started.url.href)
  t.match(page.url(), /\/app\/sign-in\?return=%2Fapp%2Finteraction%2F/, 'the app\'s sign-in page, returning to the interaction')
  await page.getByLabel('Email', { exact: true }).fill('max@acme.test')
  await page.getByLabel('Password', { exact: true }).fill('pw-max')
  await page.getByRole('button', { name: 'Sign in' }).click()

  await page.waitForURL(/\/app\/interaction\//)
  t.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Allow Acme Portal?')
  await accessible('oidc-consent')
  await page.getByRole('button', { name: 'Allow' }).click()
  await page.waitForURL(`${REDIRECT_URI}**`)
  t.equal(arrived.length, 1, 'the browser arrived at the application\'s callback')

  const tokens = await client.authorizationCodeGrant(rp.config, new URL(arrived[0]!),
    { pkceCodeVerifier: started.verifier, expectedState: started.state, expectedNonce: started.nonce })
  t.match(tokens.claims(), { email: 'max@acme.test', given_name: 'Max', family_name: 'Mustermann', acr: '0' })

  const unknown = new URL(started.url)
  unknown.searchParams.set('client_id', 'tale_nobody')
  await page.goto(unknown.href)
  t.match(await page.getByRole('alert').textContent(), /invalid_client/, 'an unknown client lands on the issuer\'s own page')
  await accessible('oidc-error')
})

t.test('without a consent page the sign-in form leads straight back to the application', async (t) => {
  const rp = await relyingParty(t, { seed: { users }, projects: [] })
  const { context } = await launch(t)
  const arrived = await callbackArrivals(context)
  const page = await context.newPage()
  const started = await rp.start()
  await page.goto(started.url.href)
  await page.getByLabel('Email', { exact: true }).fill('max@acme.test')
  await page.getByLabel('Password', { exact: true }).fill('pw-max')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(`${REDIRECT_URI}**`, { timeout: 10_000 }).catch(() => {})
  t.equal(arrived.length, 1, `the browser arrived at the application's callback (it is at ${page.url()})`)
})

t.test('end to end in Chromium: password and TOTP, the code flow with PKCE, state and nonce, a verified ID token equal to userinfo', async (t) => {
  const rp = await relyingParty(t, { seed: { users }, projects: [] })
  const maxId = rp.w.seeded.users['max@acme.test']!.id
  // Max has an authenticator set up (as Settings > Security stores one).
  const secret = new OTPAuth.Secret({ size: 20 }).base32
  await rp.w.service.db.owner`insert into app.user_totp (user_id, secret, confirmed_at) values (${maxId}, ${secret}, now())`
  const { context } = await launch(t)
  const arrived = await callbackArrivals(context)
  const page = await context.newPage()
  const started = await rp.start()
  t.equal(started.url.searchParams.get('code_challenge_method'), 'S256')

  await page.goto(started.url.href)
  await page.getByLabel('Email', { exact: true }).fill('max@acme.test')
  await page.getByLabel('Password', { exact: true }).fill('pw-max')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(/\/app\/sign-in\/totp/)
  t.same(await inspect(page, 'oidc-second-factor'), [], 'the second-factor page is accessible')
  await page.getByLabel('Six-digit code', { exact: true }).fill(totpCode(secret))
  await page.getByRole('button', { name: 'Continue' }).click()
  await page.waitForURL(`${REDIRECT_URI}**`)
  t.equal(arrived.length, 1, 'the browser arrived at the application\'s callback')
  const callback = new URL(arrived[0]!)
  t.equal(callback.searchParams.get('state'), started.state)

  const tokens = await client.authorizationCodeGrant(rp.config, callback,
    { pkceCodeVerifier: started.verifier, expectedState: started.state, expectedNonce: started.nonce, idTokenExpected: true })
  const { payload, protectedHeader } = await jwtVerify(tokens.id_token!, createRemoteJWKSet(new URL(`${rp.issuer.href}/jwks`)),
    { issuer: rp.issuer.href, audience: rp.clientId, algorithms: ['RS256'] })
  t.equal(protectedHeader.alg, 'RS256', 'signed with a key /jwks publishes')
  t.match(payload, {
    sub: maxId, nonce: started.nonce, acr: '0', email: 'max@acme.test', email_verified: true,
    name: 'Max Mustermann', given_name: 'Max', family_name: 'Mustermann',
    organization: { id: rp.w.seeded.organizations.acme!.id, slug: 'acme', role: 'member' },
  })
  const info = await client.fetchUserInfo(rp.config, tokens.access_token, payload.sub!)
  const protocol = ['iss', 'aud', 'exp', 'iat', 'nonce', 'auth_time', 'at_hash', 'azp', 'sid']
  t.same(info, Object.fromEntries(Object.entries(payload).filter(([name]) => !protocol.includes(name))), 'userinfo equals the ID token')
  t.equal((await rp.w.service.request('GET', '/api/v1/me', { key: tokens.access_token })).status, 401, 'the access token is no API key')
})
