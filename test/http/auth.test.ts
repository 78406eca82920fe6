// Authentication and organization selection, as SPEC.md "Authentication" states.
import t from 'tap'
import { startTestService } from '../lib/service.ts'
import { world } from '../lib/world.ts'
import { acme, person } from '../lib/fixtures.ts'
import { pinClock } from '../lib/db.ts'

t.test('API keys', async (t) => {
  const { service, seeded } = await world(t, { projects: [], seed: {
    ...acme(),
    teams: [],
    users: [
      person('olive@acme.test', [{ org: 'acme', role: 'owner' }], ['main', 'revoked']),
      { ...person('exp@acme.test', [{ org: 'acme', role: 'owner' }], []), keys: [{ name: 'soon', expiresAt: Date.now() + 60_000 }] },
    ],
  } })
  const key = seeded.users['olive@acme.test']!.keys.main!

  t.test('a valid key authenticates as a Bearer token, the scheme case-insensitive', async (t) => {
    const ok = await service.request('GET', '/api/v1/me', { key })
    t.equal(ok.status, 200, 'a valid Bearer key authenticates')

    const lower = await service.request('GET', '/api/v1/me', { headers: { authorization: `bearer ${key}` } })
    t.equal(lower.status, 200, 'the scheme is case-insensitive')
  })

  t.test('no key, an x-api-key header or another scheme answers 401 UNAUTHORIZED, even beside a valid Bearer header', async (t) => {
    const missing = await service.request('GET', '/api/v1/me')
    t.equal(missing.status, 401)
    t.equal(missing.body.code, 'UNAUTHORIZED')

    const xApiKey = await service.request('GET', '/api/v1/me', { key, headers: { 'x-api-key': key } })
    t.equal(xApiKey.status, 401, 'x-api-key is refused even beside a valid Bearer header')
    t.equal(xApiKey.body.code, 'UNAUTHORIZED')

    const onlyXApiKey = await service.request('GET', '/api/v1/me', { headers: { 'x-api-key': key } })
    t.equal(onlyXApiKey.status, 401)

    const basic = await service.request('GET', '/api/v1/me', { headers: { authorization: `Basic ${key}` } })
    t.equal(basic.status, 401, 'another scheme is refused')
  })

  t.test('an invalid key answers 401 UNAUTHORIZED', async (t) => {
    const invalid = await service.request('GET', '/api/v1/me', { key: key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A') })
    t.equal(invalid.status, 401)
    t.equal(invalid.body.code, 'UNAUTHORIZED')
  })

  t.test('a revoked key answers 401', async (t) => {
    const [revokedKey] = await service.db.owner<{ id: string }[]>`select id from app.api_keys where name = 'revoked'`
    await service.db.owner`select app.operator_key_revoke(${revokedKey!.id})`
    const revoked = await service.request('GET', '/api/v1/me', { key: seeded.users['olive@acme.test']!.keys.revoked! })
    t.equal(revoked.status, 401, 'a revoked key is refused')
  })

  t.test('a key is valid until it expires, then answers 401 UNAUTHORIZED', async (t) => {
    const expiring = seeded.users['exp@acme.test']!.keys.soon!
    t.equal((await service.request('GET', '/api/v1/me', { key: expiring })).status, 200, 'valid before expiry')
    await pinClock(service.db.owner, Date.now() + 120_000)
    const expired = await service.request('GET', '/api/v1/me', { key: expiring })
    t.equal(expired.status, 401, 'an expired key is refused')
    t.equal(expired.body.code, 'UNAUTHORIZED')
  })
})

t.test('a 401 happens before any shape check', async (t) => {
  const service = await startTestService(t)
  const res = await service.request('GET', '/api/v1/projects?bogus=1')
  t.equal(res.status, 401, 'unauthenticated callers learn nothing of shapes')
  const post = await service.request('POST', '/api/v1/projects', { body: { nope: true } })
  t.equal(post.status, 401)
})

t.test('failed authentication, at a burst of 2 failures per address', async (t) => {
  // A scale of 0.05 leaves a burst of 2 failures per address.
  const { service, seeded } = await world(t, { env: { RATE_LIMIT_SCALE: '0.05' }, projects: [], seed: acme() })
  await pinClock(service.db.owner, Date.now())
  const bad = 'tale_not-a-real-key'

  t.test('failures beyond the address burst answer 429 RATE_LIMITED with Retry-After and requestId', async (t) => {
    t.equal((await service.request('GET', '/api/v1/me', { key: bad })).status, 401)
    t.equal((await service.request('GET', '/api/v1/me', { key: bad })).status, 401)
    const throttled = await service.request('GET', '/api/v1/me', { key: bad })
    t.equal(throttled.status, 429)
    t.equal(throttled.body.code, 'RATE_LIMITED')
    t.match(throttled.headers.get('retry-after'), /^[1-9]\d*$/, 'Retry-After holds whole seconds')
    t.ok(throttled.body.requestId, '429 carries requestId')
  })

  t.test('a request without a key costs nothing and is not throttled', async (t) => {
    const missing = await service.request('GET', '/api/v1/me')
    t.equal(missing.status, 401, 'a request without a key costs nothing and is not throttled')
  })

  t.test('a throttled address is refused even with a valid key, so a guesser cannot tell keys apart', async (t) => {
    const good = await service.request('GET', '/api/v1/me', { key: seeded.users['olive@acme.test']!.keys.main })
    t.equal(good.status, 429, 'the address is throttled, so a guesser cannot tell valid keys from invalid ones')
  })

  t.test('once the address budget refills, a valid key works again', async (t) => {
    await pinClock(service.db.owner, Date.now() + 60_000)
    const later = await service.request('GET', '/api/v1/me', { key: seeded.users['olive@acme.test']!.keys.main })
    t.equal(later.status, 200, 'once the address budget refills, a valid key works again')
  })
})

t.test('organization selection, for keys of one and of several organizations', async (t) => {
  const { service, seeded } = await world(t, { projects: [], seed: {
    teams: [],
    organizations: [
      { slug: 'acme', name: 'Acme', skillSharingPolicy: null },
      { slug: 'globex', name: 'Globex', skillSharingPolicy: null },
      { slug: 'initech', name: 'Initech', skillSharingPolicy: null },
      { slug: 'umbrella', name: 'Umbrella', skillSharingPolicy: null },
    ],
    users: [
      person('solo@acme.test', [{ org: 'acme', role: 'editor' }]),
      person('multi@acme.test', [
        { org: 'acme', role: 'owner' }, { org: 'globex', role: 'member' },
        { org: 'initech', role: 'admin', disabled: true },
      ]),
      person('halfway@acme.test', [{ org: 'acme', role: 'member' }, { org: 'globex', role: 'member', disabled: true }]),
    ],
  } })
  const solo = seeded.users['solo@acme.test']!.keys.main!
  const multi = seeded.users['multi@acme.test']!.keys.main!
  const halfway = seeded.users['halfway@acme.test']!.keys.main!
  const selectable = [{ slug: 'acme', name: 'Acme' }, { slug: 'globex', name: 'Globex' }]

  t.test('a key of one organization needs no slug, and a blank slug counts as none', async (t) => {
    const single = await service.request('GET', '/api/v1/me', { key: solo })
    t.equal(single.status, 200, 'one organization: the slug may be omitted')
    t.equal(single.body.organization.slug, 'acme')
    const blankSolo = await service.request('GET', '/api/v1/me', { key: solo, org: ' ' })
    t.equal(blankSolo.status, 200, 'a blank slug with one organization proceeds')
  })

  t.test('a disabled membership does not count toward several organizations', async (t) => {
    const onlyOneEnabled = await service.request('GET', '/api/v1/me', { key: halfway })
    t.equal(onlyOneEnabled.status, 200, 'a disabled membership does not count toward "several"')
    t.equal(onlyOneEnabled.body.organization.slug, 'acme')
  })

  t.test('a key of several organizations needs a slug, even to read: 400 ORG_SLUG_REQUIRED listing the selectable ones', async (t) => {
    const required = await service.request('GET', '/api/v1/me', { key: multi })
    t.equal(required.status, 400)
    t.equal(required.body.code, 'ORG_SLUG_REQUIRED')
    t.same(required.body.data.organizations, selectable, 'lists selectable organizations, disabled ones left out')

    const reads = await service.request('GET', '/api/v1/projects', { key: multi })
    t.equal(reads.status, 400, 'reads need the slug too')
    t.equal(reads.body.code, 'ORG_SLUG_REQUIRED')

    const blank = await service.request('GET', '/api/v1/me', { key: multi, org: '   ' })
    t.equal(blank.body.code, 'ORG_SLUG_REQUIRED', 'a blank slug counts as absent')
  })

  t.test('a slug matches case-insensitively, and the request proceeds under the role held there', async (t) => {
    const upper = await service.request('GET', '/api/v1/me', { key: multi, org: 'GLOBEX' })
    t.equal(upper.status, 200, 'slugs match case-insensitively')
    t.equal(upper.body.organization.slug, 'globex')
    t.equal(upper.body.organization.role, 'member', 'the request proceeds under that role')
  })

  t.test('an unknown slug answers 404 ORG_SLUG_INVALID listing the selectable organizations', async (t) => {
    for (const slug of ['nowhere', 'Not A Slug!', '../acme']) {
      const unknown = await service.request('GET', '/api/v1/me', { key: multi, org: slug })
      t.equal(unknown.status, 404, `${slug}: unknown slug`)
      t.equal(unknown.body.code, 'ORG_SLUG_INVALID')
      t.same(unknown.body.data.organizations, selectable)
    }
  })

  t.test('an organization the key holds no enabled membership in answers 403 ORG_FORBIDDEN', async (t) => {
    const notMember = await service.request('GET', '/api/v1/me', { key: multi, org: 'umbrella' })
    t.equal(notMember.status, 403)
    t.equal(notMember.body.code, 'ORG_FORBIDDEN')
    t.same(notMember.body.data.organizations, selectable)

    const disabled = await service.request('GET', '/api/v1/me', { key: multi, org: 'initech' })
    t.equal(disabled.status, 403, 'a disabled membership is forbidden')
    t.equal(disabled.body.code, 'ORG_FORBIDDEN')

    const soloElsewhere = await service.request('GET', '/api/v1/me', { key: solo, org: 'globex' })
    t.equal(soloElsewhere.body.code, 'ORG_FORBIDDEN', 'a single-organization key naming another organization')
    t.same(soloElsewhere.body.data.organizations, [{ slug: 'acme', name: 'Acme' }])
  })
})

t.test('removed routes under /api/v1 answer after authentication and organization selection', async (t) => {
  const { service, seeded } = await world(t, { projects: [], seed: {
    teams: [],
    organizations: [{ slug: 'acme', name: 'Acme', skillSharingPolicy: null }, { slug: 'globex', name: 'Globex', skillSharingPolicy: null }],
    users: [person('multi@acme.test', [{ org: 'acme', role: 'owner' }, { org: 'globex', role: 'member' }])],
  } })
  const key = seeded.users['multi@acme.test']!.keys.main!
  const path = '/api/v1/chat/completions'
  const noSlug = await service.request('POST', path, { key, body: { model: 'x', messages: [] } })
  t.equal(noSlug.status, 400)
  t.equal(noSlug.body.code, 'ORG_SLUG_REQUIRED')
  const withSlug = await service.request('POST', path, { key, org: 'acme', body: {} })
  t.equal(withSlug.status, 404)
  t.equal(withSlug.body.code, 'NOT_FOUND')
  t.equal((await service.request('GET', '/api/v1/images/generations')).status, 401, 'no key: 401 first')
  t.equal((await service.request('GET', '/no-api-here')).status, 404, 'outside /api/v1, a plain 404')
})
