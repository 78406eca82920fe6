// Token buckets per key holder (SPEC.md "Rate limits"), kept in PostgreSQL.
import t from 'tap'
import { world } from '../lib/world.ts'
import { acme, person } from '../lib/fixtures.ts'
import { freshDatabase, pinClock } from '../lib/db.ts'
import { rateBudgets, webhookBuckets } from '../../server/auth/rate-budgets.ts'
import { ownerPool } from '../../server/core/db/connection.ts'

// Scale 0.02: the general bucket holds 4 tokens and refills 2.4 a minute.
const SCALE = '0.02'

t.test('the general budget of olive, with two keys, and adam', async (t) => {
  const { service, seeded } = await world(t, { env: { RATE_LIMIT_SCALE: SCALE }, projects: [], seed: { ...acme(), users: [person('olive@acme.test', [{ org: 'acme', role: 'owner' }], ['one', 'two']),
    person('adam@acme.test', [{ org: 'acme', role: 'admin' }])], teams: [] } })
  const start = Date.now()
  await pinClock(service.db.owner, start)
  const [one, two] = [seeded.users['olive@acme.test']!.keys.one!, seeded.users['olive@acme.test']!.keys.two!]

  t.test('all keys of one user share the general budget, refused with 429 and Retry-After in whole seconds', async (t) => {
    for (const key of [one, two, one, two]) t.equal((await service.request('GET', '/api/v1/me', { key })).status, 200)

    const limited = await service.request('GET', '/api/v1/me', { key: one })
    t.equal(limited.status, 429)
    t.equal(limited.body.code, 'RATE_LIMITED')
    // One token refills in 60 / 2.4 = 25 seconds.
    t.equal(limited.headers.get('retry-after'), '25', 'Retry-After in whole seconds, rounded up')
    t.ok(limited.body.requestId)
    t.ok(limited.headers.get('x-service-api-version'))
  })

  t.test('another user keeps a general budget of their own', async (t) => {
    t.equal((await service.request('GET', '/api/v1/me', { key: seeded.users['adam@acme.test']!.keys.main })).status, 200,
      'another user is not affected')
  })

  t.test('Retry-After shrinks as the bucket refills, and a refilled token is spent by the first request', async (t) => {
    await pinClock(service.db.owner, start + 10_000)
    const soon = await service.request('GET', '/api/v1/me', { key: two })
    t.equal(soon.status, 429)
    t.equal(soon.headers.get('retry-after'), '15', 'the wait shrinks as the bucket refills')

    await pinClock(service.db.owner, start + 25_000)
    t.equal((await service.request('GET', '/api/v1/me', { key: two })).status, 200, 'a refilled token is spent')
    t.equal((await service.request('GET', '/api/v1/me', { key: one })).status, 429)
  })
})

t.test('refused requests still spend budget; a request over budget has no effect', async (t) => {
  const { service, seeded } = await world(t, { env: { RATE_LIMIT_SCALE: SCALE }, projects: [], seed: acme() })
  await pinClock(service.db.owner, Date.now())
  const key = seeded.users['olive@acme.test']!.keys.main!
  const missing = '00000000-0000-4000-8000-000000000000'
  t.equal((await service.request('PATCH', `/api/v1/projects/${missing}`, { key, body: { name: 'x' } })).status, 404)
  t.equal((await service.request('GET', '/api/v1/projects?bogus=1', { key })).status, 400)
  t.equal((await service.request('GET', '/api/v1/me', { key, org: 'nowhere' })).status, 404)
  t.equal((await service.request('POST', '/api/v1/projects', { key, body: { name: '' } })).status, 400)

  const refused = await service.request('POST', '/api/v1/projects', { key, body: { name: 'Over budget' } })
  t.equal(refused.status, 429, 'domain, shape and organization refusals each spent a token')
  const [count] = await service.db.owner`select count(*)::int as n from app.projects`
  t.equal(count!.n, 0, 'the refused request created nothing')
  const [audit] = await service.db.owner`select count(*)::int as n from app.audit_log`
  t.equal(audit!.n, 0, 'and wrote nothing')
})

t.test('a request without a key costs nothing', async (t) => {
  const { service, seeded } = await world(t, { env: { RATE_LIMIT_SCALE: SCALE }, projects: [], seed: acme() })
  for (let i = 0; i < 10; i++) t.equal((await service.request('GET', '/api/v1/me')).status, 401)
  const [buckets] = await service.db.owner`select count(*)::int as n from app.rate_buckets`
  t.equal(buckets!.n, 0)
})

t.test('token buckets in SQL, on a pinned clock', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  const start = Date.now()
  await pinClock(db.owner, start)
  const take = async (buckets: object[]) => (await db.owner`select app.take_tokens(${db.owner.json(buckets as never)}) as wait`)[0]!.wait as number
  const tokens = async (key: string) => (await db.owner`select tokens from app.rate_buckets where bucket = ${key}`)[0]?.tokens as number
  const general = { key: 'user:u:general', perMinute: 120, burst: 200 }
  const start_ = { key: 'user:u:start', perMinute: 20, burst: 2 }

  t.test('the narrowest bucket governs, and a refusal takes nothing from any bucket', async (t) => {
    t.equal(await take([general, start_]), 0)
    t.equal(await take([general, start_]), 0)
    const wait = await take([general, start_])
    t.equal(wait, 3, 'the start bucket is empty: 60/20 = 3 seconds for one token')
    t.equal(await tokens('user:u:general'), 198, 'the refused request took nothing from the general bucket')
    t.equal(await take([general]), 0, 'the general bucket alone still serves')
  })

  t.test('a bucket refills continuously, up to its burst', async (t) => {
    await pinClock(db.owner, start + 1500)
    t.equal(await take([start_]), 2, 'half a token after 1.5 s; 1.5 s more, rounded up to 2')
    await pinClock(db.owner, start + 3000)
    t.equal(await take([start_]), 0)
    await pinClock(db.owner, start + 3_600_000)
    t.equal(await take([start_]), 0)
    t.equal(await tokens('user:u:start'), 1, 'refill stops at the burst')
  })

  t.test('the webhook buckets carry the documented budgets', async (t) => {
    const webhook = webhookBuckets(rateBudgets(1))
    t.same(webhook.sender('203.0.113.9'), { key: 'webhook-sender:203.0.113.9', perMinute: 120, burst: 240 })
    t.same(webhook.trigger('t1'), { key: 'webhook-trigger:t1', perMinute: 20, burst: 40 })
    const small = webhookBuckets(rateBudgets(0.05))
    t.equal(await take([small.trigger('t1')]), 0)
    t.equal(await take([small.trigger('t1')]), 0)
    t.ok((await take([small.trigger('t1')])) > 0, 'a trigger bucket of burst 2 refuses the third delivery')
  })

  t.test('idle buckets are forgotten by the cleanup task', async (t) => {
    await db.owner`update app.rate_buckets set refreshed_at = now() - interval '2 hours'`
    await pinClock(db.owner, Date.now())
    const [forgotten] = await db.owner`select app.forget_idle_rate_buckets() as n`
    t.ok(forgotten!.n >= 3, 'idle buckets are forgotten by the cleanup task')
  })
})

t.test('concurrent takes from one bucket never grant more than it holds', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  await pinClock(db.owner, Date.now())
  const many = ownerPool(db.url, 16)
  t.teardown(() => many.end())
  const bucket = [{ key: 'user:race:general', perMinute: 0.001, burst: 25 }]
  const waits = await Promise.all(Array.from({ length: 60 }, () =>
    many.begin(async (tx) => (await tx`select app.take_tokens(${tx.json(bucket as never)}) as wait`)[0]!.wait as number)))
  t.equal(waits.filter((w) => w === 0).length, 25, 'exactly the burst is granted')
  const [row] = await db.owner`select tokens from app.rate_buckets where bucket = 'user:race:general'`
  t.ok(row!.tokens < 1 && row!.tokens >= 0, `nothing left (${row!.tokens})`)
})

t.test('over budget, nothing runs and nothing is looked up', async (t) => {
  const { service, seeded } = await world(t, { env: { RATE_LIMIT_SCALE: SCALE }, projects: [], seed: acme() })
  await pinClock(service.db.owner, Date.now())
  const key = seeded.users['olive@acme.test']!.keys.main!
  for (let i = 0; i < 4; i++) await service.request('GET', '/api/v1/me', { key })
  // The operation is made to fail loudly if it runs at all.
  await service.db.owner`alter function api.me(jsonb) rename to me_parked`
  t.teardown(() => service.db.owner`alter function api.me_parked(jsonb) rename to me`)
  const limited = await service.request('GET', '/api/v1/me', { key })
  t.equal(limited.status, 429, 'refused before the operation would have failed')

  // An address out of failed attempts gets 429 even for a valid key.
  const { service: scaled, seeded: other } = await world(t, { env: { RATE_LIMIT_SCALE: '0.05' }, projects: [], seed: acme() })
  await pinClock(scaled.db.owner, Date.now())
  for (let i = 0; i < 2; i++) t.equal((await scaled.request('GET', '/api/v1/projects', { key: 'tale_guess' })).status, 401)
  const valid = await scaled.request('GET', '/api/v1/projects', { key: other.users['olive@acme.test']!.keys.main })
  t.equal(valid.status, 429, 'a guesser cannot tell a valid key from an invalid one')
})
