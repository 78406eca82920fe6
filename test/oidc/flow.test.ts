// The authorization code flow against the running service, with openid-client as the
// relying party: PKCE, state and nonce; the ID token's claims and signature; userinfo
// equal to the ID token; one-use codes; the person signed in through the app.
import t from 'tap'
import * as client from 'openid-client'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import { REDIRECT_URI, browserOf, codeFlow, CookieJar, follow, relyingParty, tokenRequest } from './lib.ts'
import { signIn } from '../lib/session.ts'
import { hashApiKey } from '../../server/auth/credentials.ts'

const PROTOCOL_CLAIMS = ['iss', 'aud', 'exp', 'iat', 'nonce', 'auth_time', 'at_hash', 'azp', 'sid']

t.test('a signed-in member gets a code (PKCE, state, nonce) and an ID token signed by a published key', async (t) => {
  const rp = await relyingParty(t)
  const { jar, person } = await browserOf(rp, 'max@acme.test')
  const { started, landing, tokens } = await codeFlow(rp, jar)
  t.equal(landing.callback!.searchParams.get('state'), started.state, 'the state comes back')
  t.equal(landing.callback!.searchParams.get('iss'), rp.issuer.href, 'with the issuer (RFC 9207)')
  t.equal(tokens.token_type.toLowerCase(), 'bearer')
  t.equal(tokens.expires_in, 300, 'access tokens last five minutes')
  t.notOk('refresh_token' in tokens, 'no refresh token')

  const keys = createRemoteJWKSet(new URL(`${rp.issuer.href}/jwks`))
  const { payload, protectedHeader } = await jwtVerify(tokens.id_token!, keys, {
    issuer: rp.issuer.href, audience: rp.clientId, algorithms: ['RS256'],
  })
  t.equal(protectedHeader.alg, 'RS256')
  t.match(payload, {
    sub: person.userId, acr: '0', nonce: started.nonce,
    email: 'max@acme.test', email_verified: true, name: 'max', given_name: 'max',
    organization: { id: rp.w.seeded.organizations.acme!.id, slug: 'acme', role: 'member' },
  })
  t.notOk('family_name' in payload, 'a one-word name has no family name')
  t.notOk('picture' in payload, 'no picture unless the person has one')
  t.equal(payload.exp! - payload.iat!, 300, 'ID tokens last five minutes')
  t.notOk('amr' in payload, 'no stronger authentication context is asserted')
})

t.test('userinfo answers exactly the claims of the ID token', async (t) => {
  const rp = await relyingParty(t)
  const { jar } = await browserOf(rp, 'adam@acme.test')
  const { tokens } = await codeFlow(rp, jar)
  const claims = tokens.claims()!
  const info = await client.fetchUserInfo(rp.config, tokens.access_token, claims.sub)
  const identity = Object.fromEntries(Object.entries(claims).filter(([name]) => !PROTOCOL_CLAIMS.includes(name)))
  t.same(info, identity, 'the same claims and values, acr included')
  t.equal(info.acr, '0')
})

t.test('profile claims: names split on words, the picture when present, each scope its own claims', async (t) => {
  const rp = await relyingParty(t)
  const olive = rp.w.seeded.users['olive@acme.test']!.id
  await rp.w.service.db.owner`update app.users set name = '  Ada  King Lovelace ', picture = 'https://pics.example/ada.png' where id = ${olive}`
  const { jar } = await browserOf(rp, 'olive@acme.test')
  const full = (await codeFlow(rp, jar)).tokens.claims()!
  t.match(full, { name: 'Ada King Lovelace', given_name: 'Ada King', family_name: 'Lovelace', picture: 'https://pics.example/ada.png' })

  const narrow = (await codeFlow(rp, jar, { scope: 'openid email' })).tokens
  const claims = narrow.claims()!
  for (const absent of ['name', 'given_name', 'family_name', 'picture', 'organization']) t.notOk(absent in claims, `openid email: no ${absent}`)
  t.match(claims, { email: 'olive@acme.test', email_verified: true, acr: '0' })
  const info = await client.fetchUserInfo(rp.config, narrow.access_token, claims.sub)
  t.same(Object.keys(info).sort(), ['acr', 'email', 'email_verified', 'sub'], 'userinfo follows the granted scopes too')

  const organization = (await codeFlow(rp, jar, { scope: 'openid tale:organization' })).tokens.claims()!
  t.same(organization.organization, { id: rp.w.seeded.organizations.acme!.id, slug: 'acme', role: 'owner' })
  t.notOk('email' in organization)
})

t.test('a code is redeemed once; a second redemption is refused and revokes what the first gave', async (t) => {
  const rp = await relyingParty(t)
  const { jar } = await browserOf(rp, 'max@acme.test')
  const { started, landing, tokens } = await codeFlow(rp, jar)
  const again = await tokenRequest(rp, {
    grant_type: 'authorization_code', code: landing.callback!.searchParams.get('code')!,
    redirect_uri: REDIRECT_URI, code_verifier: started.verifier,
  })
  t.equal(again.status, 400)
  t.same(again.body, { error: 'invalid_grant', error_description: 'grant request is invalid' })
  const info = await fetch(`${rp.issuer.href}/oauth2/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
  t.equal(info.status, 401, 'the access token of the first redemption no longer works')
})

t.test('PKCE is checked: a wrong verifier gets no tokens', async (t) => {
  const rp = await relyingParty(t)
  const { jar } = await browserOf(rp, 'max@acme.test')
  const started = await rp.start()
  const landing = await follow(started.url, jar)
  const exchanged = await tokenRequest(rp, {
    grant_type: 'authorization_code', code: landing.callback!.searchParams.get('code')!,
    redirect_uri: REDIRECT_URI, code_verifier: client.randomPKCECodeVerifier(),
  })
  t.equal(exchanged.status, 400)
  t.equal(exchanged.body.error, 'invalid_grant')
})

t.test('client_secret_post authenticates as well as client_secret_basic', async (t) => {
  const rp = await relyingParty(t)
  const { jar } = await browserOf(rp, 'max@acme.test')
  const posting = { ...rp, config: await rp.configure(rp.clientSecret, 'post') }
  const { tokens } = await codeFlow(posting, jar)
  t.ok(tokens.id_token, 'tokens with the secret in the body')
})

t.test('prompt=none: login_required without an app session; silent success with one', async (t) => {
  const rp = await relyingParty(t)
  const stranger = await follow((await rp.start({ prompt: 'none' })).url, new CookieJar())
  t.equal(stranger.callback?.searchParams.get('error'), 'login_required', 'answered to the client, no page shown')
  t.ok(stranger.callback?.searchParams.get('state'), 'with the state')

  const { jar } = await browserOf(rp, 'max@acme.test')
  const { tokens } = await codeFlow(rp, jar, { prompt: 'none' })
  t.ok(tokens.id_token, 'a signed-in member needs no page at all')
})

t.test('without a session the person signs in through the app and comes back to the client', async (t) => {
  const rp = await relyingParty(t)
  const started = await rp.start()
  const jar = new CookieJar()
  const signInPage = await follow(started.url, jar)
  t.equal(signInPage.status, 200)
  t.equal(signInPage.url.pathname, '/app/sign-in', 'the app\'s sign-in page')
  const back = signInPage.url.searchParams.get('return')!
  t.match(back, /^\/app\/interaction\/[A-Za-z0-9_-]+$/, 'which returns to the interaction')

  // What the sign-in page does after a right password: a session, then back.
  const person = await signIn(rp.w, 'eddie@acme.test')
  jar.set(person.cookie)
  const landing = await follow(new URL(back, signInPage.url), jar)
  t.ok(landing.callback?.searchParams.get('code'), 'the client gets its code')
  const tokens = await client.authorizationCodeGrant(rp.config, landing.callback!,
    { pkceCodeVerifier: started.verifier, expectedState: started.state, expectedNonce: started.nonce })
  t.equal(tokens.claims()!.sub, person.userId, 'for the person who signed in')
})

t.test('another person signing in to the app is another person to the issuer', async (t) => {
  const rp = await relyingParty(t)
  const { jar } = await browserOf(rp, 'max@acme.test')
  t.equal((await codeFlow(rp, jar)).tokens.claims()!.email, 'max@acme.test')
  const eddie = await signIn(rp.w, 'eddie@acme.test')
  jar.set(eddie.cookie)
  t.equal((await codeFlow(rp, jar, { prompt: 'none' })).tokens.claims()!.email, 'eddie@acme.test')
  await rp.w.service.db.owner`select app.session_close(${hashApiKey(eddie.token)})`
  const out = await follow((await rp.start({ prompt: 'none' })).url, jar)
  t.equal(out.callback?.searchParams.get('error'), 'login_required', 'signed out of the app, signed out of the issuer')
})

t.test('prompt=login asks for the password again: the app session ends and a new one is needed', async (t) => {
  const rp = await relyingParty(t)
  const { jar, person } = await browserOf(rp, 'max@acme.test')
  const started = await rp.start({ prompt: 'login' })
  const signInPage = await follow(started.url, jar)
  t.equal(signInPage.url.pathname, '/app/sign-in', 'the sign-in page, although a session was open')
  const [ended] = await rp.w.service.db.owner<{ revoked: boolean }[]>`
    select revoked_at is not null as revoked from app.sessions where user_id = ${person.userId}`
  t.ok(ended!.revoked, 'the session it came with has ended')

  const again = await signIn(rp.w, 'max@acme.test')
  jar.set(again.cookie)
  const landing = await follow(new URL(signInPage.url.searchParams.get('return')!, signInPage.url), jar)
  const tokens = await client.authorizationCodeGrant(rp.config, landing.callback!,
    { pkceCodeVerifier: started.verifier, expectedState: started.state, expectedNonce: started.nonce })
  t.equal(tokens.claims()!.sub, person.userId)
})

t.test('prompt=consent shows a consent page; allowing gives a code, denying answers access_denied', async (t) => {
  const rp = await relyingParty(t)
  const { jar } = await browserOf(rp, 'max@acme.test')
  const started = await rp.start({ prompt: 'consent' })
  const page = await follow(started.url, jar)
  t.equal(page.status, 200)
  t.match(page.body, /<h1>Allow Acme Portal\?<\/h1>/)
  t.match(page.body, /an application of Acme/)
  t.match(page.body, /<form method="post" action="\/app\/interaction\/[^"]+">/)
  t.match(page.body, /<button type="submit" name="decision" value="allow">Allow<\/button>/)
  t.match(page.body, /your email address/)
  // The page's own origin, as a browser sends it from the form.
  const answer = (decision: string, headers: Record<string, string> = { origin: page.url.origin }) => follow(page.url, jar, {
    method: 'POST', body: `decision=${decision}`, headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  })

  const forged = await answer('allow', {})
  t.equal(forged.status, 403, 'a POST without the service\'s Origin is refused')
  const foreign = await answer('allow', { origin: 'https://evil.example' })
  t.equal(foreign.status, 403, 'as is one from another site')

  const allowed = await answer('allow')
  const tokens = await client.authorizationCodeGrant(rp.config, allowed.callback!,
    { pkceCodeVerifier: started.verifier, expectedState: started.state, expectedNonce: started.nonce })
  t.ok(tokens.id_token, 'allowing completes the authorization')

  const second = await follow((await rp.start({ prompt: 'consent' })).url, jar)
  const denied = await follow(second.url, jar, {
    method: 'POST', body: 'decision=deny', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: second.url.origin },
  })
  t.equal(denied.callback?.searchParams.get('error'), 'access_denied')
})

t.test('an interaction page without its cookie, or finished, is a plain expired page', async (t) => {
  const rp = await relyingParty(t)
  const { jar, person } = await browserOf(rp, 'max@acme.test')
  const page = await follow((await rp.start({ prompt: 'consent' })).url, jar)
  const bare = await fetch(page.url, { headers: { cookie: person.cookie }, redirect: 'manual' })
  t.equal(bare.status, 400)
  t.match(await bare.text(), /has expired or was already completed/)
})
