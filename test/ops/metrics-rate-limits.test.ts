// /metrics/platform counts 429 refusals by the budget that refused them (SPEC.md
// "Metrics", "Rate limits"): the budget travels from SQL's bucket to the metrics and
// never to the client.
import t from 'tap'
import { world } from '../lib/world.ts'
import type { Response } from '../lib/service.ts'
import { freshDatabase, pinClock } from '../lib/db.ts'
import { value } from '../lib/prometheus.ts'
import { METRICS_TOKEN as TOKEN, scrape, scrapeUntil } from '../lib/metrics.ts'

t.test('/metrics/platform counts 429 refusals by the budget that refused them', async (t) => {
  const w = await world(t, { projects: [], env: { METRICS_BEARER_TOKEN: TOKEN, RATE_LIMIT_SCALE: '0.02' } })
  const { service } = w
  {
    await pinClock(service.db.owner, Date.now())
    const before = value(await scrape(t, service, '/metrics/platform'), 'platform_rate_limited_total', { budget: 'general' })
    t.equal(before, 0, 'every budget is there from the start, at 0')
    // Scale 0.02: the general budget holds 4 tokens.
    let limited: Response | undefined
    for (let i = 0; i < 10 && !limited; i++) {
      const res = await w.adam.get('/api/v1/me')
      if (res.status === 429) limited = res
    }
    t.ok(limited, 'the general budget ran out')
    t.notOk('budget' in (limited?.body.data ?? {}), 'the budget is not sent to the client')
    const exposition = await scrapeUntil(t, service, '/metrics/platform',
      (e) => (value(e, 'platform_rate_limited_total', { budget: 'general' }) ?? 0) >= 1)
    t.equal(value(exposition, 'platform_rate_limited_total', { budget: 'general' }), 1)
    t.equal(value(exposition, 'platform_rate_limited_total', { budget: 'start' }), 0, 'another budget is not blamed')
    t.ok((value(exposition, 'platform_http_requests_total', { method: 'GET', route: '/api/v1/me', status: '429' }) ?? 0) >= 1)
  }
  // Scraping takes no key and spends no budget: it still answers with every budget spent.
  await scrape(t, service, '/metrics/store')
})


t.test('a refusal of app.take_tokens names its bucket\'s budget, never the bucket', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  await pinClock(db.owner, Date.now())
  const general = { key: 'user:00000000-0000-4000-8000-000000000001:general', perMinute: 120, burst: 200 }
  const start = { key: 'user:00000000-0000-4000-8000-000000000001:start', perMinute: 20, burst: 1 }
  const refusedBy = await db.owner.begin(async (sql) => {
    await sql`select app.take_tokens(${sql.json([general, start])})`
    const [{ wait }] = await sql<[{ wait: number }]>`select app.take_tokens(${sql.json([general, start])}) as wait`
    t.ok(wait > 0, 'the start bucket refuses the second take')
    const [{ budget }] = await sql<[{ budget: string }]>`select app.refused_budget() as budget`
    return budget
  })
  t.equal(refusedBy, 'start', 'the narrower bucket that refused, not the general one taken before it')
  const [{ outside }] = await db.owner<[{ outside: string }]>`select app.refused_budget() as outside`
  t.equal(outside, 'unknown', 'a transaction that was refused nothing names no budget')
  const budgets = await db.owner<{ budget: string }[]>`
    select app.budget_of(key) as budget
      from unnest(array['user:00000000-0000-4000-8000-000000000001:files', 'authfail:203.0.113.9', 'webhook-sender:::1',
                        'webhook-trigger:00000000-0000-4000-8000-000000000002', 'signin-address:203.0.113.9',
                        'signin-account:olive@acme.test', 'something-else']) with ordinality as k (key, n)
     order by n`
  t.same(budgets.map((row) => row.budget),
    ['files', 'authFailures', 'webhookSender', 'webhookTrigger', 'signInAddress', 'signInAccount', 'unknown'])
})
