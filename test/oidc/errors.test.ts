// OAuth-style errors exactly as the spec words them: {error, error_description} from
// the token, authorization and userinfo endpoints; unsupported_grant_type;
// invalid_request for a malformed request, a missing grant_type or client_id, a
// disallowed response_type or a wrong media type (never 415); invalid_client, with an
// unknown client never redirected to the address it sent; userinfo's challenges.
import t, { type Test } from 'tap'
import * as client from 'openid-client'
import { REDIRECT_URI, browserOf, CookieJar, follow, relyingParty, tokenRequest, type Relying } from './lib.ts'

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`

async function oauthError(t: Test, response: { status: number; headers: Headers; body: unknown }, status: number, error: string) {
  t.equal(response.status, status, `${error}: status ${status}`)
  t.match(response.headers.get('content-type'), /^application\/json/, `${error}: JSON`)
  t.same(Object.keys(response.body as object).sort(), ['error', 'error_description'], `${error}: exactly error and error_description`)
  t.equal((response.body as { error: string }).error, error)
}

const raw = async (url: string, init: RequestInit) => {
  const response = await fetch(url, init)
  return { status: response.status, headers: response.headers, body: await response.json() as unknown }
}

t.test('the token endpoint', async (t) => {
  const rp = await relyingParty(t)
  const token = `${rp.issuer.href}/oauth2/token`
  await oauthError(t, await tokenRequest(rp, { grant_type: 'password', username: 'olive', password: 'x' }), 400, 'unsupported_grant_type')
  await oauthError(t, await tokenRequest(rp, { grant_type: 'refresh_token', refresh_token: 'x' }), 400, 'unsupported_grant_type')
  await oauthError(t, await tokenRequest(rp, { grant_type: 'client_credentials' }), 400, 'unsupported_grant_type')
  const missing = await tokenRequest(rp, { code: 'x', redirect_uri: REDIRECT_URI })
  await oauthError(t, missing, 400, 'invalid_request')
  t.match((missing.body as { error_description: string }).error_description, /grant_type/)

  const json = await raw(token, {
    method: 'POST', body: JSON.stringify({ grant_type: 'authorization_code', code: 'x' }),
    headers: { 'content-type': 'application/json', authorization: basic(rp.clientId, rp.clientSecret) },
  })
  await oauthError(t, json, 400, 'invalid_request')
  t.not(json.status, 415, 'a wrong media type is invalid_request, never 415')

  const anonymous = await raw(token, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x' }) })
  await oauthError(t, anonymous, 400, 'invalid_request')
  t.match((anonymous.body as { error_description: string }).error_description, /client authentication/, 'no client_id')

  const unknown = await raw(token, {
    method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT_URI }),
    headers: { authorization: basic('tale_nobody', 'secret') },
  })
  await oauthError(t, unknown, 401, 'invalid_client')
  t.match(unknown.headers.get('www-authenticate'), /^Basic realm="[^"]+", error="invalid_client"/, 'with a Basic challenge')
  const posted = await raw(token, {
    method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT_URI,
      client_id: 'tale_nobody', client_secret: 'secret' }),
  })
  await oauthError(t, posted, 401, 'invalid_client')
  const wrongSecret = await raw(token, {
    method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT_URI }),
    headers: { authorization: basic(rp.clientId, 'not-the-secret') },
  })
  await oauthError(t, wrongSecret, 401, 'invalid_client')

  const html = await raw(token, {
    method: 'POST', body: new URLSearchParams({ grant_type: 'password' }),
    headers: { accept: 'text/html', authorization: basic(rp.clientId, rp.clientSecret) },
  })
  await oauthError(t, html, 400, 'unsupported_grant_type')
  t.pass('JSON even to a client that prefers HTML')
})

/** The error the client's callback received, from the query or the fragment. */
function callbackError(callback: URL | undefined): string | null {
  if (!callback) return null
  return callback.searchParams.get('error') ?? new URLSearchParams(callback.hash.slice(1)).get('error')
}

t.test('the authorization endpoint', async (t) => {
  const rp = await relyingParty(t)
  const { jar } = await browserOf(rp, 'max@acme.test')
  const authorize = async (change: (url: URL) => void, cookies: CookieJar = jar) => {
    const url = new URL((await rp.start()).url)
    change(url)
    return follow(url, cookies)
  }

  const unknown = await authorize((url) => url.searchParams.set('client_id', 'tale_nobody'))
  t.notOk(unknown.callback, 'an unknown client is never sent back to the address it gave')
  t.equal(unknown.status, 400)
  t.match(unknown.body, /<title>Sign-in request refused · Tale<\/title>/, 'the issuer\'s own error page')
  t.match(unknown.body, /<strong>invalid_client<\/strong>/)

  const noClient = await authorize((url) => url.searchParams.delete('client_id'))
  t.equal(noClient.status, 400)
  t.match(noClient.body, /<strong>invalid_request<\/strong>: missing required parameter &#39;client_id&#39;/)

  const elsewhere = await authorize((url) => url.searchParams.set('redirect_uri', 'https://evil.example/callback'))
  t.notOk(elsewhere.callback, 'an unregistered address is never redirected to')
  t.equal(elsewhere.status, 400)
  t.match(elsewhere.body, /redirect_uri/)

  for (const type of ['token', 'id_token', 'code id_token', 'none']) {
    const landing = await authorize((url) => url.searchParams.set('response_type', type))
    t.equal(callbackError(landing.callback), 'invalid_request', `response_type=${type}: invalid_request, sent to the client`)
  }
  const posted = await authorize((url) => {
    url.searchParams.set('response_type', 'token')
    url.searchParams.set('response_mode', 'form_post')
  })
  t.match(posted.body, /name="error" value="invalid_request"/, 'form_post carries invalid_request too')
  t.notMatch(posted.body, /unsupported_response_type/)

  const noPkce = await authorize((url) => {
    url.searchParams.delete('code_challenge')
    url.searchParams.delete('code_challenge_method')
  })
  t.equal(callbackError(noPkce.callback), 'invalid_request', 'PKCE is required')
  const plain = await authorize((url) => url.searchParams.set('code_challenge_method', 'plain'))
  t.equal(callbackError(plain.callback), 'invalid_request', 'and only S256')
  for (const prompt of ['select_account', 'create']) {
    const landing = await authorize((url) => url.searchParams.set('prompt', prompt))
    t.equal(callbackError(landing.callback), 'invalid_request', `prompt=${prompt} is not offered`)
  }
  const noRedirect = await authorize((url) => url.searchParams.delete('redirect_uri'))
  t.notOk(noRedirect.callback, 'redirect_uri is required, even with one registered')
  t.equal(noRedirect.status, 400)
})

async function accessToken(rp: Relying, scope: string): Promise<string> {
  const { jar } = await browserOf(rp, 'max@acme.test')
  const verifier = client.randomPKCECodeVerifier()
  const url = client.buildAuthorizationUrl(rp.config, {
    redirect_uri: REDIRECT_URI, scope, state: client.randomState(),
    code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  })
  const landing = await follow(url, jar)
  const exchanged = await tokenRequest(rp, {
    grant_type: 'authorization_code', code: landing.callback!.searchParams.get('code')!,
    redirect_uri: REDIRECT_URI, code_verifier: verifier,
  })
  return exchanged.body.access_token
}

t.test('the userinfo endpoint', async (t) => {
  const rp = await relyingParty(t)
  const userinfo = `${rp.issuer.href}/oauth2/userinfo`

  const missing = await raw(userinfo, {})
  await oauthError(t, missing, 401, 'invalid_token')
  t.match(missing.headers.get('www-authenticate'), /^Bearer realm="[^"]+"$/, 'a bare challenge when no token is sent')

  const invalid = await raw(userinfo, { headers: { authorization: 'Bearer not-a-token' } })
  await oauthError(t, invalid, 401, 'invalid_token')
  t.match(invalid.headers.get('www-authenticate'), /^Bearer realm="[^"]+", error="invalid_token", error_description="invalid token provided"$/)

  const withoutOpenid = await raw(userinfo, { headers: { authorization: `Bearer ${await accessToken(rp, 'profile email')}` } })
  await oauthError(t, withoutOpenid, 403, 'insufficient_scope')
  t.match(withoutOpenid.headers.get('www-authenticate'), /error="insufficient_scope".*scope="openid"/)

  const json = await raw(userinfo, {
    method: 'POST', body: '{}',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${await accessToken(rp, 'openid')}` },
  })
  await oauthError(t, json, 400, 'invalid_request')
})
