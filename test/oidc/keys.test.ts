// The issuer's signing keys are rotated by the operator (`admin oidc rotate-keys`): the
// running service signs with the new key at once, the old one stays published until
// issuer.retiredKeyPublishedSeconds have passed, then it is dropped.
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose'
import { browserOf, codeFlow, relyingParty } from './lib.ts'
import { pinClock } from '../lib/db.ts'
import { limit } from '../../server/core/limits.ts'

const run = promisify(execFile)
const admin = async (url: string, args: string[]) => (await run(process.execPath, ['--import=tsx', 'server/admin/cli.ts', ...args], {
  env: { ...process.env, DATABASE_URL: url }, encoding: 'utf8',
})).stdout

t.test('oidc rotate-keys: the new key signs at once, the old one verifies until its time is up', async (t) => {
  const rp = await relyingParty(t)
  const jwks = async () => (await (await fetch(`${rp.issuer.href}/jwks`)).json() as { keys: { kid: string }[] }).keys.map((k) => k.kid)
  const { jar } = await browserOf(rp, 'max@acme.test')
  const before = (await codeFlow(rp, jar)).tokens.id_token!
  const first = decodeProtectedHeader(before).kid!
  t.same(await jwks(), [first])

  const rotated = JSON.parse(await admin(rp.w.service.db.url, ['oidc', 'rotate-keys']))
  t.match(rotated, { kid: /^[A-Za-z0-9_-]{43}$/, retired: [first], removed: [] }, 'the command prints the new kid and what it retired')
  t.not(rotated.kid, first)
  t.same(await jwks(), [rotated.kid, first], 'published at once, the new key first, the old one still there')

  const after = (await codeFlow(rp, jar)).tokens.id_token!
  t.equal(decodeProtectedHeader(after).kid, rotated.kid, 'the running service signs with the new key, no restart')
  const keys = createRemoteJWKSet(new URL(`${rp.issuer.href}/jwks`))
  for (const [label, token] of [['new', after], ['old', before]] as const) {
    const { payload } = await jwtVerify(token, keys, { issuer: rp.issuer.href, audience: rp.clientId })
    t.equal(payload.email, 'max@acme.test', `a token of the ${label} key verifies`)
  }

  await pinClock(rp.w.service.db.owner, Date.now() + (limit('issuer.retiredKeyPublishedSeconds') + 60) * 1000)
  t.same(await jwks(), [rotated.kid], 'past issuer.retiredKeyPublishedSeconds the old key is no longer published')
  const again = JSON.parse(await admin(rp.w.service.db.url, ['oidc', 'rotate-keys']))
  t.same(again.retired, [rotated.kid])
  t.same(again.removed, [first], 'and the next rotation deletes it')
  const [stored] = await rp.w.service.db.owner<{ n: number }[]>`select count(*)::int as n from app.issuer_signing_keys`
  t.equal(stored!.n, 2)
})

t.test('the command is listed by admin help', async (t) => {
  const help = await run(process.execPath, ['--import=tsx', 'server/admin/cli.ts', 'help', 'oidc rotate-keys'], { encoding: 'utf8' })
  t.match(help.stdout, /usage: npm run --silent admin -- oidc rotate-keys/)
  t.match(help.stdout, /signing key/)
})

t.test('the request role cannot read the private keys or the stored codes and tokens', async (t) => {
  const rp = await relyingParty(t)
  const { jar } = await browserOf(rp, 'max@acme.test')
  await codeFlow(rp, jar)
  const { requestPool } = await import('../../server/core/db/connection.ts')
  const requests = requestPool(rp.w.service.db.url, 1)
  t.teardown(() => requests.end())
  for (const table of ['issuer_signing_keys', 'issuer_payloads']) {
    const outcome = await requests.unsafe(`select count(*) from app.${table}`).then(() => 'read', (error: { code?: string }) => error.code)
    t.equal(outcome, '42501', `app.${table} is not readable by the request role`)
  }
  const operator = await requests`select app.operator_issuer_rotate_key('x', '{}')`.then(() => 'ran', (error: { code?: string }) => error.code)
  t.equal(operator, '42501', 'nor can it rotate keys')
})
