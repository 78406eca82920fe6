// Metrics (SPEC.md "Metrics"): /metrics/platform, /metrics/store, and /metrics/rag and
// /metrics/crawler forwarded from their services, each answering only with
// METRICS_BEARER_TOKEN (every /metrics/* path 401 while it is unset). Expositions are
// parsed, never matched loosely.
// The 429s by budget are in metrics-rate-limits.test.ts, the forwarded paths in
// metrics-forwarding.test.ts.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'
import { deploy } from '../lib/automations.ts'
import { samples, value } from '../lib/prometheus.ts'
import { METRICS_PATHS as PATHS, METRICS_TOKEN as TOKEN, bearer, scrape, scrapeUntil } from '../lib/metrics.ts'

t.test('every /metrics/* path answers 401 while METRICS_BEARER_TOKEN is unset, whatever is sent', async (t) => {
  const { service, olive } = await world(t, { projects: [] })
  for (const path of [...PATHS, '/metrics/other']) {
    refused(t, await service.request('GET', path), 401, 'UNAUTHORIZED', `${path} without a token`)
    refused(t, await service.request('GET', path, { headers: bearer(TOKEN) }), 401, 'UNAUTHORIZED', `${path} with a token`)
    refused(t, await olive.get(path), 401, 'UNAUTHORIZED', `${path} with an API key`)
  }
})

t.test('with METRICS_BEARER_TOKEN set', async (t) => {
  const w = await world(t, { projects: [], env: { METRICS_BEARER_TOKEN: TOKEN } })
  const { service } = w

  t.test('a missing, wrong or differently-cased token, or an API key, is 401 on every path', async (t) => {
    for (const path of [...PATHS, '/metrics/other']) {
      const missing = refused(t, await service.request('GET', path), 401, 'UNAUTHORIZED', `${path} without a token`)
      t.ok(missing, 'the error envelope')
      refused(t, await service.request('GET', path, { headers: bearer(`${TOKEN}x`) }), 401, 'UNAUTHORIZED', `${path} with a longer token`)
      refused(t, await service.request('GET', path, { headers: bearer(TOKEN.slice(0, -1)) }), 401, 'UNAUTHORIZED', `${path} with a prefix`)
      refused(t, await service.request('GET', path, { headers: bearer(TOKEN.toUpperCase()) }), 401, 'UNAUTHORIZED', `${path} in upper case`)
      refused(t, await service.request('GET', path, { headers: { authorization: TOKEN } }), 401, 'UNAUTHORIZED', `${path} without the Bearer scheme`)
      refused(t, await service.request('GET', path, { key: w.keyOf('olive@acme.test') }), 401, 'UNAUTHORIZED', `${path} with an API key`)
    }
  })

  t.test('an unknown /metrics/ path is 404 once the token is right', async (t) => {
    refused(t, await service.request('GET', '/metrics/other', { headers: bearer(TOKEN) }), 404, 'NOT_FOUND')
  })

  t.test('/metrics/platform counts requests by method, route pattern and status, never by URL', async (t) => {
    const id = randomUUID()
    refused(t, await w.olive.patch(`/api/v1/projects/${id}`, { name: 'Renamed' }), 404, 'NOT_FOUND')
    const labels = { method: 'PATCH', route: '/api/v1/projects/:id', status: '404' }
    const exposition = await scrapeUntil(t, service, '/metrics/platform',
      (e) => (value(e, 'platform_http_requests_total', labels) ?? 0) >= 1)
    t.equal(exposition.get('platform_http_requests_total')?.type, 'counter')
    t.ok((value(exposition, 'platform_http_request_duration_seconds_count', { method: 'PATCH', route: '/api/v1/projects/:id' }) ?? 0) >= 1,
      'the duration histogram observed it')
    t.equal(exposition.get('platform_http_request_duration_seconds')?.type, 'histogram')
    const everyLabel = [...exposition.values()].flatMap((family) => family.samples.flatMap((s) => Object.values(s.labels)))
    t.notOk(everyLabel.some((label) => label.includes(id)), 'no label holds the identifier of the URL')

    await service.request('GET', '/nowhere/at/all')
    const unmatched = await scrapeUntil(t, service, '/metrics/platform',
      (e) => (value(e, 'platform_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }) ?? 0) >= 1)
    t.ok(unmatched, 'a path no route declares is counted as unmatched')
    t.ok((value(unmatched, 'process_resident_memory_bytes') ?? 0) > 0, 'the Node process default metrics are there')
    t.ok(unmatched.has('nodejs_eventloop_lag_seconds'), 'the event loop lag')
  })

  t.test('/metrics/platform counts webhook deliveries accepted, repeated and refused; reads the queue and the runs', async (t) => {
    await deploy(await w.dev.mcp(), {
      name: 'ops/hook', description: 'Echoes its payload',
      steps: [{ slug: 'end', type: 'output', config: { mapping: { got: '{{ input.payload }}' } } }],
    })
    const token = (await w.dev.put('/api/v1/automations/ops__hook/triggers', { kind: 'webhook' })).body.token as string
    const deliver = (path: string, id: string) => service.request('POST', path, { body: { n: 1 }, headers: { 'idempotency-key': id } })
    t.equal((await deliver(`/api/automations/webhook/${token}`, 'd-1')).status, 202)
    const again = await deliver(`/api/automations/webhook/${token}`, 'd-1')
    t.equal(again.status, 202)
    t.equal(again.body.duplicate, true)
    refused(t, await deliver(`/api/automations/webhook/not-a-token-${randomUUID()}`, 'd-2'), 404, 'NOT_FOUND')

    const exposition = await scrapeUntil(t, service, '/metrics/platform',
      (e) => (value(e, 'platform_webhook_deliveries_refused_total', { code: 'NOT_FOUND' }) ?? 0) >= 1)
    t.equal(value(exposition, 'platform_webhook_deliveries_accepted_total', { duplicate: 'false' }), 1)
    t.equal(value(exposition, 'platform_webhook_deliveries_accepted_total', { duplicate: 'true' }), 1)
    t.equal(value(exposition, 'platform_webhook_deliveries_refused_total', { code: 'NOT_FOUND' }), 1)

    // No worker runs here: the accepted delivery's run waits in the queue.
    t.equal(value(exposition, 'platform_database_scrape_success'), 1)
    const ready = samples(exposition, 'platform_job_queue_depth', { state: 'ready' }).reduce((sum, s) => sum + s.value, 0)
    t.ok(ready >= 1, `the run's job waits, ready (${ready})`)
    const waiting = samples(exposition, 'platform_job_queue_depth', { state: 'ready' }).filter((s) => s.value > 0)
    for (const sample of waiting) {
      t.ok((value(exposition, 'platform_job_oldest_ready_age_seconds', { task: sample.labels.task! }) ?? -1) >= 0,
        `the age of ${sample.labels.task}'s oldest ready job`)
    }
    t.equal(value(exposition, 'platform_runs', { status: 'queued', failure_code: 'none' }), 1, 'the queued run')
  })

  t.test('/metrics/platform reads the job queue across workers: a job added in SQL, and a failed run by its code', async (t) => {
    await service.db.owner`select graphile_worker.add_job('metrics_probe', '{}'::json, run_at => now() - interval '1 hour')`
    const [org] = await service.db.owner<{ id: string }[]>`select id from app.organizations where slug = 'acme'`
    await service.db.owner`
      insert into app.runs (organization_id, automation_name, version, document, mode, status, failure_code, finished_at)
      values (${org!.id}, 'ops/failing', 1, '{}', 'live', 'failed', 'timeout', now())`
    const exposition = await scrape(t, service, '/metrics/platform')
    t.equal(value(exposition, 'platform_job_queue_depth', { task: 'metrics_probe', state: 'ready' }), 1)
    t.equal(value(exposition, 'platform_job_queue_depth', { task: 'metrics_probe', state: 'locked' }), 0)
    t.ok((value(exposition, 'platform_job_oldest_ready_age_seconds', { task: 'metrics_probe' }) ?? 0) >= 3000,
      'the job has been due for an hour')
    t.equal(value(exposition, 'platform_runs', { status: 'failed', failure_code: 'timeout' }), 1)
  })

  t.test('/metrics/store describes the database', async (t) => {
    const exposition = await scrape(t, service, '/metrics/store')
    t.equal(value(exposition, 'store_up'), 1)
    t.ok((value(exposition, 'store_connections', { state: 'active' }) ?? 0) >= 1, 'the scrape\'s own connection is active')
    t.equal(samples(exposition, 'store_connections').length >= 5, true, 'every state is listed')
    t.ok((value(exposition, 'store_max_connections') ?? 0) > 0)
    t.equal(exposition.get('store_transactions_committed_total')?.type, 'counter')
    t.ok((value(exposition, 'store_transactions_committed_total') ?? 0) > 0, 'commits')
    t.ok((value(exposition, 'store_transactions_rolled_back_total') ?? -1) >= 0, 'rollbacks')
    t.ok(samples(exposition, 'store_locks', { state: 'held' }).length > 0, 'the scrape\'s own locks are held')
    t.equal(typeof value(exposition, 'store_locks_waiting'), 'number', 'waiting locks, even at 0')
    t.equal(value(exposition, 'store_in_recovery'), 0, 'a primary')
    t.ok(exposition.has('store_replication_lag_seconds'), 'replication lag is declared, empty without replicas')
    t.ok((value(exposition, 'store_table_live_rows', { schema: 'app', table: 'organizations' }) ?? -1) >= 0, 'live rows per table')
    t.ok((value(exposition, 'store_table_dead_rows', { schema: 'app', table: 'runs' }) ?? -1) >= 0, 'dead rows per table')
    t.ok(exposition.has('store_table_last_vacuum_age_seconds'), 'vacuum ages')
    t.ok((value(exposition, 'store_database_size_bytes') ?? 0) > 0, 'the size')
  })

  t.test('the metrics paths are documented', async (t) => {
    const document = (await service.request('GET', '/openapi.json')).body
    for (const path of PATHS) {
      const operation = document.paths[path]?.get
      t.ok(operation, `${path} is documented`)
      t.same(operation?.security, [{ metricsBearer: [] }], `${path} asks for the metrics bearer`)
      t.ok(operation?.responses['200']?.content?.['text/plain; version=0.0.4'], `${path} answers the text format`)
      t.ok(operation?.responses['401'], `${path} documents 401`)
    }
    for (const path of ['/metrics/rag', '/metrics/crawler']) t.ok(document.paths[path].get.responses['503'], `${path} documents 503`)
    t.ok(document.components.securitySchemes.metricsBearer, 'the scheme is declared')
    t.ok(document.components.schemas.ErrorCode.enum.includes('METRICS_SOURCE_UNAVAILABLE'))
  })
})
