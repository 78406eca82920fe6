// Run listings, project binding of starts, the starting-work budget, and cancel at a
// step boundary.
import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { callTool, deploy, simpleDocument, waitForRun } from '../lib/automations.ts'
import { world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'

// Inserts finished runs directly: listings are about rows, not execution.
async function insertRuns(sql: any, count: number, fields: { automation: string; project?: string | null; output?: unknown }) {
  await sql`
    insert into app.runs (organization_id, automation_id, automation_name, version, document, mode, status, project_id, started_by, output,
                          created_at, finished_at)
    select a.organization_id, a.id, a.name, 1, '{}'::jsonb, 'mock', 'completed', ${fields.project ?? null}, a.created_by,
           ${sql.json(fields.output ?? { ok: true })}, now() - n * interval '1 second', now()
      from app.automations a, generate_series(1, ${count}) n
     where a.name = ${fields.automation}`
}

t.test('200 runs of ops/one and 5 of ops/two in Alpha', async (t) => {
  const { service, alpha, dev, max } = await world(t)
  const client = await dev.mcp()
  await callTool(client, 'automation_create', { document: simpleDocument('ops/one') })
  await callTool(client, 'automation_create', { document: simpleDocument('ops/two') })
  await insertRuns(service.db.owner, 200, { automation: 'ops/one' })
  await insertRuns(service.db.owner, 5, { automation: 'ops/two', project: alpha })

  t.test('the run list pages newest first, 50 by default, with summaries that carry no output', async (t) => {
    const all = await max.get('/api/v1/runs')
    t.equal(all.status, 200)
    t.equal(all.body.runs.length, 50, 'default page of 50')
    t.equal(all.body.isDone, false)
    t.notOk('output' in all.body.runs[0], 'summaries carry no output')
    t.notOk('failureCode' in all.body.runs[0], 'nor an unset failureCode')
    const second = await max.get(`/api/v1/runs?cursor=${encodeURIComponent(all.body.continueCursor)}`)
    t.equal(second.body.runs.length, 50)
    const created = [...all.body.runs, ...second.body.runs].map((r: { createdAt: number }) => r.createdAt)
    t.same(created, [...created].sort((a, b) => b - a), 'newest first')
  })

  t.test('the run list clamps limit at 200 and refuses a limit below 1 or an unknown include', async (t) => {
    const clamped = await max.get('/api/v1/runs?limit=500')
    t.equal(clamped.body.runs.length, 200, 'limit is clamped at 200 of 205 runs')
    t.equal(clamped.body.isDone, false)
    const last = await max.get(`/api/v1/runs?limit=500&cursor=${encodeURIComponent(clamped.body.continueCursor)}`)
    t.equal(last.body.runs.length, 5)
    t.equal(last.body.isDone, true)
    t.equal(last.body.continueCursor, '')
    refused(t, await max.get('/api/v1/runs?limit=0'), 400, 'INVALID_QUERY', 'limit below 1')
    refused(t, await max.get('/api/v1/runs?include=secrets'), 400, 'INVALID_QUERY', 'an unknown include')
  })

  t.test('runs are listed per automation, per project and per both', async (t) => {
    t.equal((await max.get('/api/v1/automations/ops__two/runs')).body.runs.length, 5)
    t.equal((await max.get(`/api/v1/projects/${alpha}/runs`)).body.runs.length, 5)
    t.equal((await max.get(`/api/v1/projects/${alpha}/automations/ops__one/runs`)).body.runs.length, 0)
    refused(t, await max.get('/api/v1/automations/nope/runs'), 404, 'AUTOMATION_NOT_FOUND', 'an unknown automation')
  })

  t.test('with include, a page holds at most 25 rows carrying only what was included, and its cursor only that include', async (t) => {
    const included = await max.get('/api/v1/runs?include=output,trace&limit=100')
    t.equal(included.body.runs.length, 25, 'with include, at most 25 rows')
    t.same(included.body.runs[0].output, { ok: true })
    t.same(included.body.runs[0].trace, [])
    t.notOk('effects' in included.body.runs[0], 'only what was included')
    const cursor = included.body.continueCursor
    refused(t, await max.get(`/api/v1/runs?cursor=${encodeURIComponent(cursor)}`), 400, 'INVALID_CURSOR', 'a cursor of another include')
  })
})

t.test('with include, a page ends at the last row within 8 MiB', async (t) => {
  const { service, max, dev } = await world(t)
  await callTool(await dev.mcp(), 'automation_create', { document: simpleDocument('ops/big') })
  await insertRuns(service.db.owner, 6, { automation: 'ops/big', output: { blob: 'x'.repeat(3 * 1024 * 1024) } })
  const page = await max.get('/api/v1/runs?include=output')
  t.equal(page.body.runs.length, 2, 'two 3 MiB rows fit, a third would pass 8 MiB')
  t.equal(page.body.isDone, false)
  const next = await max.get(`/api/v1/runs?include=output&cursor=${encodeURIComponent(page.body.continueCursor)}`)
  t.equal(next.body.runs.length, 2)
  t.not(next.body.runs[0].runId, page.body.runs[1].runId, 'the next page starts after the last row served')
})

t.test('starts of ops/free, ops/single (in Alpha) and ops/double (in Alpha and Beta)', async (t) => {
  const { alpha, beta, dev, olive, service } = await world(t)
  const client = await dev.mcp()
  for (const name of ['ops/free', 'ops/single', 'ops/double']) await deploy(client, simpleDocument(name))
  await olive.post(`/api/v1/projects/${alpha}/automations/ops__single`, {})
  await olive.post(`/api/v1/projects/${alpha}/automations/ops__double`, {})
  await olive.post(`/api/v1/projects/${beta}/automations/ops__double`, {})
  const projectOf = async (runId: string) => (await service.db.owner`select project_id from app.runs where id = ${runId}`)[0]!.project_id

  t.test('a start of an automation installed in one project runs there', async (t) => {
    const single = await dev.post('/api/v1/automations/ops__single/runs', { input: { who: 'a' } })
    t.equal(await projectOf(single.body.runId), alpha, 'installed in one project: runs there')
  })

  t.test('a start of an automation installed in several projects must name one of them: 409 AUTOMATION_PROJECT_SCOPE_REQUIRED', async (t) => {
    refused(t, await dev.post('/api/v1/automations/ops__double/runs', { input: { who: 'a' } }), 409, 'AUTOMATION_PROJECT_SCOPE_REQUIRED', 'several installs, no projectId')
    const named = await olive.post('/api/v1/automations/ops__double/runs', { input: { who: 'a' }, projectId: beta })
    t.equal(await projectOf(named.body.runId), beta, 'one of its projects, named')
  })

  t.test('a start naming a project the caller cannot see answers 404 NOT_FOUND, one outside its installs 404 AUTOMATION_NOT_INSTALLED', async (t) => {
    refused(t, await dev.post('/api/v1/automations/ops__single/runs', { projectId: beta }), 404, 'NOT_FOUND', 'a project the caller cannot see')
    const [gamma] = await service.db.owner`
      insert into app.projects (organization_id, name, created_by)
      select organization_id, 'Gamma', created_by from app.projects where id = ${alpha} returning id`
    refused(t, await olive.post('/api/v1/automations/ops__single/runs', { projectId: gamma!.id }), 404, 'AUTOMATION_NOT_INSTALLED', 'a project outside its set')
  })

  t.test('an automation installed nowhere runs organization-wide, or in a project through the project route, read there only', async (t) => {
    const free = await dev.post('/api/v1/automations/ops__free/runs', {})
    t.equal(await projectOf(free.body.runId), null, 'not installed: organization-wide')
    const inProject = await dev.post(`/api/v1/projects/${alpha}/automations/ops__free/runs`, {})
    t.equal(inProject.status, 202, 'or in a project the caller may edit')
    t.equal(await projectOf(inProject.body.runId), alpha)
    const projectRun = await dev.get(`/api/v1/projects/${alpha}/runs/${inProject.body.runId}`)
    t.equal(projectRun.status, 200, 'the project form reads it')
    refused(t, await dev.get(`/api/v1/projects/${alpha}/runs/${free.body.runId}`), 404, 'NOT_FOUND', 'but not a run of another scope')
  })

  t.test('a start body refuses unknown keys, and a projectId on the project route', async (t) => {
    refused(t, await dev.post('/api/v1/automations/ops__free/runs', { projectId: alpha, extra: 1 }), 400, 'INVALID_BODY', 'an unknown key')
    refused(t, await dev.post(`/api/v1/projects/${alpha}/automations/ops__free/runs`, { projectId: alpha }), 400, 'INVALID_BODY',
      'a body projectId on the project route')
  })
})

t.test('run starts draw on the starting-work budget', async (t) => {
  // Scale 0.05: the start bucket holds 2 tokens, the general one 10.
  const { dev } = await world(t, { env: { RATE_LIMIT_SCALE: '0.05' } })
  await deploy(await dev.mcp(), simpleDocument('ops/greeter'))
  t.equal((await dev.post('/api/v1/automations/ops__greeter/runs', {})).status, 202)
  t.equal((await dev.post('/api/v1/automations/ops__greeter/runs', {})).status, 202)
  const limited = await dev.post('/api/v1/automations/ops__greeter/runs', {})
  refused(t, limited, 429, 'RATE_LIMITED', 'the third start')
  t.ok(Number(limited.headers.get('retry-after')) >= 1)
  t.equal((await dev.get('/api/v1/runs')).status, 200, 'reads go on')
})

t.test('cancel during a step stops the run at the next step boundary', async (t) => {
  let hits = 0
  const server = http.createServer((_req, res) => {
    hits++
    setTimeout(() => res.end('{}'), 600)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slow`
  const { dev } = await world(t, { worker: true })
  await deploy(await dev.mcp(), {
    name: 'ops/slow',
    steps: [
      { slug: 'one', type: 'http', config: { url }, next: { success: 'two' } },
      { slug: 'two', type: 'http', config: { url }, next: { success: 'end' } },
      { slug: 'end', type: 'output', config: { mapping: {} } },
    ],
  })
  const started = await dev.post('/api/v1/automations/ops__slow/runs', {})
  await waitForRun(dev.get, started.body.runId, (r) => r.status === 'running')
  const cancelled = await dev.post(`/api/v1/runs/${started.body.runId}/cancel`)
  t.match(cancelled.body, { status: 'running', cancelRequested: true }, 'a step is in flight')
  const run = await waitForRun(dev.get, started.body.runId)
  t.equal(run.status, 'cancelled')
  t.same(run.trace.map((e: { slug: string }) => e.slug), ['one'], 'the step in flight finished; no further step ran')
  t.equal(hits, 1)
})
