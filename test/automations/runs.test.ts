// Starting runs and the run routes (SPEC.md "Runs", the Run state table).
import t from 'tap'
import { callTool, deploy, simpleDocument, waitForRun } from '../lib/automations.ts'
import { world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'


const approvalDocument = (name: string) => ({
  name,
  steps: [
    { slug: 'approve', type: 'approval', config: { title: 'Go ahead for {{ input.who }}?' }, next: { approved: 'yes', rejected: 'no' } },
    { slug: 'yes', type: 'output', config: { mapping: { decision: 'yes' } } },
    { slug: 'no', type: 'output', config: { mapping: { decision: 'no' } } },
  ],
})

t.test('a run starts with 202, executes on the worker and reads back', async (t) => {
  const { dev } = await world(t, { worker: true })
  await deploy(await dev.mcp(), simpleDocument('sales/greeter'))
  const started = await dev.post('/api/v1/automations/sales__greeter/runs', { input: { who: 'Ada' } })
  t.equal(started.status, 202)
  t.same(Object.keys(started.body).sort(), ['mode', 'name', 'runId', 'version'])
  t.match(started.body, { name: 'sales/greeter', version: 1, mode: 'live' })
  const run = await waitForRun(dev.get, started.body.runId)
  t.match(run, { status: 'completed', output: { greeting: 'Hello Ada' }, failureCode: null, input: { who: 'Ada' } })
  t.same(run.trace.map((entry: { slug: string; port: string }) => [entry.slug, entry.port]), [['greet', 'success'], ['end', 'success']])
  t.ok(run.startedBy.startsWith('user:'), 'started by a person')
  t.notOk('startedVia' in run, 'no trigger attribution')
  t.ok(run.finishedAt >= run.startedAt)
})

t.test('a run read revalidates with its ETag', async (t) => {
  const { dev } = await world(t, { worker: true })
  await deploy(await dev.mcp(), simpleDocument('sales/greeter'))
  const started = await dev.post('/api/v1/automations/sales__greeter/runs', { input: { who: 'Ada' } })
  await waitForRun(dev.get, started.body.runId)
  const read = await dev.get(`/api/v1/runs/${started.body.runId}`)
  const etag = read.headers.get('etag')!
  t.equal((await dev.get(`/api/v1/runs/${started.body.runId}`, { 'if-none-match': etag })).status, 304)
})

t.test('fields reads exactly the named keys and refuses unknown ones', async (t) => {
  const { dev } = await world(t, { worker: true })
  await deploy(await dev.mcp(), simpleDocument('sales/greeter'))
  const started = await dev.post('/api/v1/automations/sales__greeter/runs', { input: { who: 'Ada' } })
  await waitForRun(dev.get, started.body.runId)
  const some = await dev.get(`/api/v1/runs/${started.body.runId}?fields=status,output`)
  t.same(some.body, { status: 'completed', output: { greeting: 'Hello Ada' } }, 'exactly the named keys')
  refused(t, await dev.get(`/api/v1/runs/${started.body.runId}?fields=status,bogus`), 400, 'INVALID_QUERY', 'an unknown field')
})

t.test('a member may start a mock run but not a live one', async (t) => {
  const { dev, max } = await world(t, { worker: true })
  await deploy(await dev.mcp(), simpleDocument('sales/greeter'))
  refused(t, await max.post('/api/v1/automations/sales__greeter/runs', { input: { who: 'x' } }), 403, 'ROLE_FORBIDDEN',
    'a live run without the developer capability')
  const mock = await max.post('/api/v1/automations/sales__greeter/runs', { input: { who: 'Max' }, mode: 'mock' })
  t.equal(mock.status, 202, 'a member may start a mock run')
  t.equal((await waitForRun(max.get, mock.body.runId)).status, 'completed')
})

t.test('start refusals: unknown automation, nothing deployed, bad mode or input', async (t) => {
  const { dev } = await world(t)
  const client = await dev.mcp()
  refused(t, await dev.post('/api/v1/automations/nope/runs', {}), 404, 'AUTOMATION_NOT_FOUND', 'unknown automation')
  await callTool(client, 'automation_create', { document: simpleDocument('ops/greeter') })
  refused(t, await dev.post('/api/v1/automations/ops__greeter/runs', {}), 409, 'AUTOMATION_NOT_DEPLOYED', 'nothing deployed')
  await callTool(client, 'automation_deploy', { name: 'ops/greeter' })
  refused(t, await dev.post('/api/v1/automations/ops__greeter/runs', { mode: 'dry' }), 400, 'INVALID_BODY', 'an unknown mode')
  refused(t, await dev.post('/api/v1/automations/ops__greeter/runs', { input: 'text' }), 400, 'INVALID_BODY', 'input must be an object')
})

t.test('an Idempotency-Key replays the run it started, and must be 1-255 printable characters', async (t) => {
  const { service, dev } = await world(t)
  await deploy(await dev.mcp(), simpleDocument('ops/greeter'))
  const headers = { 'idempotency-key': 'order-42' }
  const first = await dev.post('/api/v1/automations/ops__greeter/runs', { input: { who: 'A' } }, headers)
  const again = await dev.post('/api/v1/automations/ops__greeter/runs', { input: { who: 'A' } }, headers)
  t.equal(first.status, 202)
  t.same(again.body, first.body, 'a replay answers the same run')
  const other = await dev.post('/api/v1/automations/ops__greeter/runs', { input: { who: 'A' } }, { 'idempotency-key': 'order-43' })
  t.not(other.body.runId, first.body.runId)
  const [runs] = await service.db.owner`select count(*)::int as n from app.runs`
  t.equal(runs!.n, 2)
  const [jobs] = await service.db.owner`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'run_automation'`
  t.equal(jobs!.n, 2, 'each run was queued with its row')
  refused(t, await dev.post('/api/v1/automations/ops__greeter/runs', {}, { 'idempotency-key': '' }), 400, 'INVALID_HEADER', 'a blank key')
  refused(t, await dev.post('/api/v1/automations/ops__greeter/runs', {}, { 'idempotency-key': 'x'.repeat(256) }), 400, 'INVALID_HEADER', 'a key too long')
})

t.test('input is checked against the inputs schema', async (t) => {
  const { dev } = await world(t, { worker: true })
  await deploy(await dev.mcp(), simpleDocument('ops/greeter'))
  const started = await dev.post('/api/v1/automations/ops__greeter/runs', { input: { who: 42 } })
  const run = await waitForRun(dev.get, started.body.runId)
  t.match(run, { status: 'failed', failureCode: 'input_invalid' })
  t.match(run.detail, /input\.who must be string/)
  t.same(run.trace, [], 'no step ran')
})

t.test('approvals park the run and resume it, through REST and MCP', async (t) => {
  const { dev, max } = await world(t, { worker: true })
  const client = await dev.mcp()
  await deploy(client, approvalDocument('ops/gate'))

  const first = await dev.post('/api/v1/automations/ops__gate/runs', { input: { who: 'Ada' } })
  const waiting = await waitForRun(dev.get, first.body.runId, (r) => r.status === 'waiting')
  t.equal(waiting.waitingFor, 'approval')
  t.match(waiting.detail, /^approval:[0-9a-f-]{36}$/)
  const approvalId = waiting.detail.slice('approval:'.length)
  refused(t, await dev.post(`/api/v1/runs/${first.body.runId}/approvals/${approvalId}`, { decision: 'maybe' }), 400, 'INVALID_BODY', 'an unknown decision')
  const decided = await max.post(`/api/v1/runs/${first.body.runId}/approvals/${approvalId}`, { decision: 'approved', comment: 'fine' })
  t.equal(decided.status, 200)
  t.match(decided.body, { decision: 'approved', status: 'queued' })
  const done = await waitForRun(dev.get, first.body.runId)
  t.match(done, { status: 'completed', output: { decision: 'yes' } })
  t.match(done.trace[0], { slug: 'approve', output: { waitingFor: 'approval' } }, 'the park is traced')
  t.match(done.trace[1], { slug: 'approve', port: 'approved', output: { decision: 'approved', comment: 'fine' } }, 'and the decision')
  refused(t, await max.post(`/api/v1/runs/${first.body.runId}/approvals/${approvalId}`, { decision: 'rejected' }), 409, 'APPROVAL_DECIDED',
    'a decision twice')

  const second = await dev.post('/api/v1/automations/ops__gate/runs', { input: { who: 'Bob' } })
  const parked = await waitForRun(dev.get, second.body.runId, (r) => r.status === 'waiting')
  const viaMcp = await callTool(client, 'run_decide_approval', {
    runId: second.body.runId, approvalId: parked.detail.slice('approval:'.length), decision: 'rejected',
  })
  t.equal(viaMcp.result.decision, 'rejected')
  t.match(await waitForRun(dev.get, second.body.runId), { status: 'completed', output: { decision: 'no' } })
})

t.test('asks park the run for a typed answer', async (t) => {
  const { dev, max, olive } = await world(t, { worker: true })
  await deploy(await dev.mcp(), {
    name: 'ops/ask',
    steps: [
      { slug: 'question', type: 'ask', config: { question: 'How many?', fields: [{ name: 'count', type: 'number', required: true }, { name: 'note', type: 'string' }] },
        next: { success: 'end' } },
      { slug: 'end', type: 'output', config: { mapping: { doubled: '{{ steps.question.output.count * 2 }}' } } },
    ],
  })
  const started = await dev.post('/api/v1/automations/ops__ask/runs', {})
  const waiting = await waitForRun(dev.get, started.body.runId, (r) => r.status === 'waiting')
  t.equal(waiting.waitingFor, 'ask')
  const ask = await max.get(`/api/v1/runs/${started.body.runId}/ask`)
  t.equal(ask.status, 200)
  t.match(ask.body, { runId: started.body.runId, step: 'question', question: 'How many?' })
  const path = `/api/v1/runs/${started.body.runId}/asks/${ask.body.askId}`
  const wrong = await max.post(path, { answer: { count: 'three', extra: 1 } })
  refused(t, wrong, 400, 'INVALID_BODY', 'an answer of the wrong type')
  t.same(wrong.body.data.issues.map((i: { path: string }) => i.path).sort(), ['answer.count', 'answer.extra'])
  refused(t, await max.post(path, { answer: {} }), 400, 'INVALID_BODY', 'a missing required field')
  refused(t, await max.post(path, { answer: { count: 3 }, actor: 'bot@acme.test' }), 403, 'ROLE_FORBIDDEN', 'an actor without act-as')
  const answered = await olive.post(path, { answer: { count: 3 }, actor: 'bot@acme.test' })
  t.equal(answered.status, 200, 'an owner may answer as an actor')
  t.match(await waitForRun(dev.get, started.body.runId), { status: 'completed', output: { doubled: 6 } })
  refused(t, await olive.post(path, { answer: { count: 4 } }), 409, 'ASK_ANSWERED', 'answering twice')
  refused(t, await max.get(`/api/v1/runs/${started.body.runId}/ask`), 404, 'NOT_FOUND', 'no open question any more')
})

t.test('cancel and delete', async (t) => {
  const { dev, max } = await world(t, { worker: true })
  await deploy(await dev.mcp(), approvalDocument('ops/gate'))
  const started = await dev.post('/api/v1/automations/ops__gate/runs', { input: { who: 'Ada' } })
  t.equal((await waitForRun(dev.get, started.body.runId, (r) => r.status === 'waiting')).status, 'waiting')
  refused(t, await dev.del(`/api/v1/runs/${started.body.runId}`), 409, 'RUN_IN_FLIGHT', 'deleting a live run')
  refused(t, await max.post(`/api/v1/runs/${started.body.runId}/cancel`), 403, 'ROLE_FORBIDDEN', 'a member cancels')
  const cancelled = await dev.post(`/api/v1/runs/${started.body.runId}/cancel`)
  t.equal(cancelled.status, 200)
  t.match(cancelled.body, { status: 'cancelled' })
  const run = (await dev.get(`/api/v1/runs/${started.body.runId}`)).body
  t.match(run, { status: 'cancelled', failureCode: null })
  refused(t, await dev.post(`/api/v1/runs/${started.body.runId}/cancel`), 409, 'RUN_FINISHED', 'cancelling twice')
  refused(t, await max.del(`/api/v1/runs/${started.body.runId}`), 403, 'ROLE_FORBIDDEN', 'a member deletes')
  t.equal((await dev.del(`/api/v1/runs/${started.body.runId}`)).status, 204)
  refused(t, await dev.get(`/api/v1/runs/${started.body.runId}`), 404, 'NOT_FOUND', 'a deleted run')
})

t.test('a run input that is an array is refused as the body\'s input', async (t) => {
  const { dev } = await world(t)
  await deploy(await dev.mcp(), simpleDocument('ops/greeter'))
  const res = await dev.post('/api/v1/automations/ops__greeter/runs', { input: [] })
  refused(t, res, 400, 'INVALID_BODY', 'an array input')
  t.same(res.body.data.issues, [{ path: 'input', message: 'must be an object' }])
})

t.test('an answer that is an array is refused as the body\'s answer', async (t) => {
  const { dev } = await world(t)
  const id = '00000000-0000-4000-8000-000000000000'
  const res = await dev.post(`/api/v1/runs/${id}/asks/${id}`, { answer: [] })
  refused(t, res, 400, 'INVALID_BODY', 'an array answer')
  t.same(res.body.data.issues, [{ path: 'answer', message: 'must be an object' }])
})
