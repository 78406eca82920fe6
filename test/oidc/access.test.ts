// Who gets tokens, decided again at each step: membership of the client's one
// organization (active, not disabled), a verified email, the organization's
// second-factor rule and a live client, at the authorization, before a code is
// exchanged and when userinfo is read; codes and tokens expire after five minutes;
// tokens of the issuer are not API keys.
import t, { type Test } from 'tap'
import * as client from 'openid-client'
import { REDIRECT_URI, browserOf, codeFlow, follow, relyingParty, tokenRequest, type Relying } from './lib.ts'
import { pinClock } from '../lib/db.ts'
import { refused } from '../lib/assert.ts'

/** An authorization up to the code, not exchanged yet. */
async function codeFor(rp: Relying, email: string) {
  const { jar } = await browserOf(rp, email)
  const started = await rp.start()
  const landing = await follow(started.url, jar)
  if (!landing.callback?.searchParams.get('code')) throw new Error(`no code: ${landing.callback ?? landing.body.slice(0, 200)}`)
  const exchange = () => tokenRequest(rp, {
    grant_type: 'authorization_code', code: landing.callback!.searchParams.get('code')!,
    redirect_uri: REDIRECT_URI, code_verifier: started.verifier,
  })
  return { exchange }
}

const userinfo = (rp: Relying, token: string) => fetch(`${rp.issuer.href}/oauth2/userinfo`, { headers: { authorization: `Bearer ${token}` } })

async function refusedToken(t: Test, response: Response, label: string) {
  t.equal(response.status, 401, `${label}: 401`)
  t.match(response.headers.get('www-authenticate'), /^Bearer realm="[^"]+", error="invalid_token"/, `${label}: a Bearer challenge`)
  t.same(await response.json(), { error: 'invalid_token', error_description: 'invalid token provided' }, `${label}: the body`)
}

t.test('a member removed or disabled after the authorization gets no tokens, and userinfo stops answering', async (t) => {
  const rp = await relyingParty(t)
  const acme = rp.w.seeded.organizations.acme!.id
  const max = rp.w.seeded.users['max@acme.test']!.id
  const eddie = rp.w.seeded.users['eddie@acme.test']!.id

  const pending = await codeFor(rp, 'max@acme.test')
  const { jar: eddieJar } = await browserOf(rp, 'eddie@acme.test')
  const { tokens } = await codeFlow(rp, eddieJar)
  t.equal((await userinfo(rp, tokens.access_token)).status, 200, 'userinfo answers while eddie is a member')

  await rp.w.service.db.owner`delete from app.memberships where organization_id = ${acme} and user_id = ${max}`
  const exchanged = await pending.exchange()
  t.equal(exchanged.status, 400, 'removed before the exchange: refused')
  t.same(exchanged.body, { error: 'invalid_grant', error_description: 'grant request is invalid' })

  await rp.w.service.db.owner`update app.memberships set disabled = true where organization_id = ${acme} and user_id = ${eddie}`
  await refusedToken(t, await userinfo(rp, tokens.access_token), 'disabled after the tokens were issued')

  await rp.w.service.db.owner`update app.memberships set disabled = false where organization_id = ${acme} and user_id = ${eddie}`
  t.equal((await userinfo(rp, tokens.access_token)).status, 200, 'restored: the same token answers again')
})

t.test('a person outside the client\'s organization is refused at the authorization: access_denied', async (t) => {
  const rp = await relyingParty(t)
  const { jar } = await browserOf(rp, 'gina@globex.test')
  const interactive = await follow((await rp.start()).url, jar)
  t.equal(interactive.callback?.searchParams.get('error'), 'access_denied')
  t.match(interactive.callback?.searchParams.get('error_description'), /not an active member/)
  const silent = await follow((await rp.start({ prompt: 'none' })).url, jar)
  t.equal(silent.callback?.searchParams.get('error'), 'access_denied', 'prompt=none too')
})

t.test('a person without a verified email gets no tokens', async (t) => {
  const rp = await relyingParty(t)
  const max = rp.w.seeded.users['max@acme.test']!.id
  const pending = await codeFor(rp, 'max@acme.test')
  await rp.w.service.db.owner`update app.users set email_verified = false where id = ${max}`
  t.equal((await pending.exchange()).body.error, 'invalid_grant', 'not at the code exchange')
  const { jar } = await browserOf(rp, 'max@acme.test')
  const landing = await follow((await rp.start()).url, jar)
  t.equal(landing.callback?.searchParams.get('error'), 'access_denied', 'nor a code')
  t.match(landing.callback?.searchParams.get('error_description'), /not verified/)
})

t.test('the organization\'s second-factor rule: refused without one, recheck at the exchange and at userinfo', async (t) => {
  const rp = await relyingParty(t)
  const acme = rp.w.seeded.organizations.acme!.id
  const { jar } = await browserOf(rp, 'max@acme.test')
  const pending = await codeFor(rp, 'max@acme.test')
  const { tokens } = await codeFlow(rp, jar)

  await rp.w.service.db.owner`update app.organizations set require_mfa = true where id = ${acme}`
  t.equal((await pending.exchange()).body.error, 'invalid_grant', 'a code of a sign-in without a second factor is not exchanged')
  await refusedToken(t, await userinfo(rp, tokens.access_token), 'userinfo for such a sign-in')
  const landing = await follow((await rp.start()).url, jar)
  t.equal(landing.callback?.searchParams.get('error'), 'access_denied', 'and no new authorization')
  t.match(landing.callback?.searchParams.get('error_description'), /second factor/)

  // A session that proved its second factor (as app.session_complete leaves it).
  const { jar: proven, person } = await browserOf(rp, 'max@acme.test')
  await rp.w.service.db.owner`update app.sessions set mfa_at = now() where user_id = ${person.userId} and revoked_at is null`
  const { tokens: strong } = await codeFlow(rp, proven)
  t.equal((await userinfo(rp, strong.access_token)).status, 200, 'a sign-in with a second factor is admitted, at userinfo too')
})

t.test('a disabled client gets no authorization and no tokens; restored, it works again', async (t) => {
  const rp = await relyingParty(t)
  const acme = rp.w.seeded.organizations.acme!.id
  const status = (disabled: boolean) => rp.owner.post(`/api/app/identity/clients/portal/status?orgId=${acme}`, { disabled })
  const pending = await codeFor(rp, 'max@acme.test')
  const { jar } = await browserOf(rp, 'max@acme.test')
  const { tokens } = await codeFlow(rp, jar)

  t.equal((await status(true)).status, 200)
  const exchanged = await pending.exchange()
  t.equal(exchanged.status, 401, 'the code exchange: the client does not authenticate')
  t.equal(exchanged.body.error, 'invalid_client')
  await refusedToken(t, await userinfo(rp, tokens.access_token), 'userinfo with its access token')
  const page = await follow((await rp.start()).url, jar)
  t.notOk(page.callback, 'no redirect to the client')
  t.equal(page.status, 400)
  t.match(page.body, /invalid_client/, 'the issuer\'s own error page')

  t.equal((await status(false)).status, 200)
  t.ok((await codeFlow(rp, jar)).tokens.id_token, 'restored')
})

t.test('codes and access tokens expire after five minutes, on the database clock', async (t) => {
  // app.now() is pinned; the adapter finds no code or token past its stored expiry on
  // that clock. oidc-provider's own checks and the ID token's exp use the real clock,
  // so the ID token's lifetime is checked as exp - iat (flow.test.ts).
  const rp = await relyingParty(t)
  const start = Date.now()
  await pinClock(rp.w.service.db.owner, start)
  const pending = await codeFor(rp, 'max@acme.test')
  const { jar } = await browserOf(rp, 'max@acme.test')
  const { tokens } = await codeFlow(rp, jar)

  await pinClock(rp.w.service.db.owner, start + 299_000)
  t.equal((await userinfo(rp, tokens.access_token)).status, 200, 'at 4:59 the access token answers')
  await pinClock(rp.w.service.db.owner, start + 301_000)
  await refusedToken(t, await userinfo(rp, tokens.access_token), 'at 5:01')
  const late = await pending.exchange()
  t.equal(late.status, 400)
  t.equal(late.body.error, 'invalid_grant', 'at 5:01 the code is not exchanged')
})

t.test('the issuer\'s access tokens and ID tokens are not API keys: the REST API answers 401', async (t) => {
  const rp = await relyingParty(t)
  const { jar } = await browserOf(rp, 'olive@acme.test')
  const { tokens } = await codeFlow(rp, jar)
  refused(t, await rp.w.service.request('GET', '/api/v1/me', { key: tokens.access_token }), 401, 'UNAUTHORIZED', 'access token')
  refused(t, await rp.w.service.request('GET', '/api/v1/me', { key: tokens.id_token! }), 401, 'UNAUTHORIZED', 'ID token')
  const info = await client.fetchUserInfo(rp.config, tokens.access_token, client.skipSubjectCheck)
  t.equal(info.email, 'olive@acme.test', 'the access token serves userinfo')
})
