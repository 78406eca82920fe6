// The issuer's discovery document and signing keys, exactly as the spec has them:
// authorization code only, S256 PKCE, prompts none/login/consent, RS256, basic and post
// client authentication, nothing dynamic, no implicit grant, no refresh tokens.
import t from 'tap'
import { startTestService, type LogEntry } from '../lib/service.ts'

t.test('discovery names exactly what the issuer serves', async (t) => {
  const service = await startTestService(t)
  const issuer = `${service.url.replace('127.0.0.1', 'localhost')}/api/auth`
  const response = await fetch(`${service.url}/api/auth/.well-known/openid-configuration`)
  t.equal(response.status, 200)
  t.match(response.headers.get('content-type'), /^application\/json/)
  const document = await response.json() as Record<string, unknown>
  const claims = (document.claims_supported as string[]).sort()
  t.same({ ...document, claims_supported: claims }, {
    issuer,
    authorization_endpoint: `${issuer}/oauth2/authorize`,
    token_endpoint: `${issuer}/oauth2/token`,
    userinfo_endpoint: `${issuer}/oauth2/userinfo`,
    jwks_uri: `${issuer}/jwks`,
    response_types_supported: ['code'],
    response_modes_supported: ['form_post', 'fragment', 'query'],
    grant_types_supported: ['authorization_code'],
    code_challenge_methods_supported: ['S256'],
    prompt_values_supported: ['none', 'login', 'consent'],
    scopes_supported: ['openid', 'profile', 'email', 'tale:organization'],
    claims_supported: ['acr', 'auth_time', 'email', 'email_verified', 'family_name', 'given_name', 'iss', 'name',
      'organization', 'picture', 'sub'],
    claim_types_supported: ['normal'],
    claims_parameter_supported: false,
    request_uri_parameter_supported: false,
    acr_values_supported: ['0'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    authorization_response_iss_parameter_supported: true,
  })
  t.notMatch(JSON.stringify(document), /urn:/, 'no URN anywhere, acr values included (tokens carry "0")')
  for (const absent of ['registration_endpoint', 'end_session_endpoint', 'introspection_endpoint', 'revocation_endpoint',
    'pushed_authorization_request_endpoint', 'dpop_signing_alg_values_supported']) {
    t.notOk(absent in document, `no ${absent}`)
  }
})

t.test('the issuer is the public address, whatever address a request came through', async (t) => {
  const logs: LogEntry[] = []
  const service = await startTestService(t, { PUBLIC_BASE_URL: 'https://id.example.test' }, logs)
  const document = await (await fetch(`${service.url}/api/auth/.well-known/openid-configuration`, {
    headers: { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'http' },
  })).json() as Record<string, string>
  t.equal(document.issuer, 'https://id.example.test/api/auth')
  t.equal(document.token_endpoint, 'https://id.example.test/api/auth/oauth2/token', 'forwarded headers a client sends are not believed')
  const slash = await fetch(`${service.url}/api/auth/.well-known/openid-configuration/`)
  t.equal(slash.status, 200, 'one trailing slash is tolerated, as on every route')
  t.ok(slash.headers.get('x-request-id'), 'the transport rules apply: a request id')
  await fetch(`${service.url}/api/auth/oauth2/authorize/some-interaction-uid`, { headers: { 'x-request-id': 'probe-issuer' } })
  const logged = logs.filter((entry) => entry.message === 'request' && entry.fields.requestId === 'probe-issuer')
  t.same(logged.map((entry) => entry.fields.route), ['/api/auth/oauth2/authorize/:uid'],
    'and one request log line, naming the endpoint\'s pattern rather than the URL')
})

t.test('the signing keys: RS256 RSA keys of 2048 bits or more, public halves only', async (t) => {
  const service = await startTestService(t)
  const response = await fetch(`${service.url}/api/auth/jwks`)
  t.equal(response.status, 200)
  const { keys } = await response.json() as { keys: Record<string, string>[] }
  t.equal(keys.length, 1, 'one key on a fresh deployment')
  const key = keys[0]!
  t.match(key, { kty: 'RSA', alg: 'RS256', use: 'sig', kid: /^[A-Za-z0-9_-]{43}$/, e: 'AQAB' })
  t.ok(Buffer.from(key.n!, 'base64url').length * 8 >= 2048, 'a modulus of at least 2048 bits')
  for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi']) t.notOk(secret in key, `no private member ${secret}`)
  const [stored] = await service.db.owner<{ n: number }[]>`select count(*)::int as n from app.issuer_signing_keys where retired_at is null`
  t.equal(stored!.n, 1, 'the key is kept in the database')
  const again = await (await fetch(`${service.url}/api/auth/jwks`)).json() as { keys: { kid: string }[] }
  t.equal(again.keys[0]!.kid, key.kid, 'and reused')
})

t.test('a path under the issuer that names no endpoint is an OAuth-style 404', async (t) => {
  const service = await startTestService(t)
  const response = await fetch(`${service.url}/api/auth/oauth2/register`, { method: 'POST' })
  t.equal(response.status, 404)
  t.same(await response.json(), { error: 'invalid_request', error_description: 'no endpoint of the issuer at this path' })
})
