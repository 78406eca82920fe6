// Agent steps that run: a live run parks (waiting, agent) while a worker job runs the
// named project agent, its model through the provider on loopback with its
// instructions and granted tools; the run resumes with the answer, or fails with the
// turn's code. An agent that cannot run fails the step at once; mock runs use mocks.
import t, { type Test } from 'tap'
import { world } from '../lib/world.ts'
import { deploy, waitForRun } from '../lib/automations.ts'
import { fakeProvider } from '../lib/fake-provider.ts'
import { refused } from '../lib/assert.ts'
import { eventually } from '../lib/wait.ts'
import { isInternalAddress } from '../../server/core/web/guard.ts'

const model = (id: string, extra: Record<string, unknown> = {}) =>
  ({ org: 'acme', id, providerSlug: 'fake', contextWindow: 8000, maxOutputTokens: null, default: false, ...extra })

async function agentWorld(t: Test, env: Record<string, string> = {}) {
  const fake = await fakeProvider(t)
  const w = await world(t, {
    worker: true, env: { MODEL_TIMEOUT_MS: '400', ...env },
    seed: {
      providers: [
        { org: 'acme', slug: 'fake', kind: 'openai-compatible', baseUrl: fake.url, apiKey: 'sk-fake' },
        { org: 'acme', slug: 'locked', kind: 'openai-compatible', baseUrl: fake.url, apiKey: 'sk-wrong' },
      ],
      models: [model('echo-model'), model('slow-model'), model('fail-model'), model('hang-model'), model('tool-model'),
        model('loop-model'), model('slow-loop-model'), model('surrogate-model'), model('locked-model', { providerSlug: 'locked' })],
      secrets: [{ org: 'acme', name: 'CRM_TOKEN', value: 'crm-secret' }],
    },
  })
  const mcp = await w.dev.mcp()
  /** An agent of Alpha, made by its owner; its id. */
  const agent = async (name: string, extra: Record<string, unknown> = {}) => {
    const created = await w.olive.post(`/api/v1/projects/${w.alpha}/agents`,
      { name, harness: 'codex', model: 'echo-model', skills: [], connectors: [], ...extra })
    if (created.status !== 201) throw new Error(created.text)
    return created.body.agent.id as string
  }
  let deployed = 0
  /** Deploys one agent step in an automation and starts it live in Alpha (or organization-wide). */
  const start = async (config: Record<string, unknown>, options: { mode?: string; project?: string | null; mock?: unknown; timeoutMs?: number } = {}) => {
    const name = `agents/step-${++deployed}`
    await deploy(mcp, { name, description: 'Hands work to an agent', ...(options.timeoutMs ? { config: { timeoutMs: options.timeoutMs } } : {}), steps: [
      { slug: 'delegate', type: 'agent', config, ...(options.mock !== undefined ? { mock: options.mock } : {}), next: { success: 'end' } },
      { slug: 'end', type: 'output', config: { mapping: { answer: '{{ steps.delegate.output }}' } } },
    ] })
    const project = options.project === undefined ? w.alpha : options.project
    const path = project ? `/api/v1/projects/${project}/automations/${name.replace('/', '__')}/runs` : `/api/v1/automations/${name.replace('/', '__')}/runs`
    const started = await w.dev.post(path, { input: { lead: 'L-42' }, ...(options.mode ? { mode: options.mode } : {}) })
    if (started.status !== 202) throw new Error(started.text)
    return started.body.runId as string
  }
  const finished = (runId: string) => waitForRun(w.dev.get, runId, (r) => !['queued', 'running', 'waiting'].includes(r.status))
  const turns = (runId: string) => w.service.db.owner`select * from app.agent_turns where run_id = ${runId} order by created_at`
  return { ...w, fake, agent, start, finished, turns }
}

t.test('an agent step waits for the agent and completes with its answer', async (t) => {
  const { agent, start, finished, dev, fake, turns } = await agentWorld(t)
  await agent('Scout', { model: 'slow-model', instructions: 'Be brief.' })
  const runId = await start({ agent: 'scout', prompt: 'Summarize {{ input.lead }}' })
  const waiting = await waitForRun(dev.get, runId, (r) => r.status === 'waiting')
  t.match(waiting, { status: 'waiting', waitingFor: 'agent', detail: 'agent:delegate' }, 'the run waits for its agent')
  const run = await finished(runId)
  t.match(run, { status: 'completed', output: { answer: 'echo: Summarize L-42' }, failureCode: null })
  t.same(run.trace.map((e: { slug: string; port?: string }) => [e.slug, e.port ?? null]),
    [['delegate', null], ['delegate', 'success'], ['end', 'success']], 'parked, resumed with the answer, then on')
  const asked = fake.requests.find((r) => r.model === 'slow-model')
  t.same(asked.messages, [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Summarize L-42' }],
    'the model hears the agent\'s instructions and the step\'s prompt')
  t.notOk(asked.stream, 'agents read answers whole')
  t.match(await turns(runId), [{ status: 'completed', step_slug: 'delegate', agent_name: 'Scout', output: 'echo: Summarize L-42' }])
})

t.test('an agent answers in JSON when the step asks, checked against its outputSchema', async (t) => {
  const { agent, start, finished } = await agentWorld(t)
  await agent('Parser', { model: 'tool-model', tools: ['tasks.read'] })
  // tool-model answers with what the tool said: the task list as JSON text.
  const listed = await finished(await start({ agent: 'Parser', prompt: 'list', outputFormat: 'json',
    outputSchema: { type: 'object', required: ['tasks'] } }))
  t.match(listed, { status: 'failed', failureCode: 'llm_output_invalid' }, '"tool said: ..." is not JSON')
  await agent('Echo')
  t.match(await finished(await start({ agent: 'Echo', prompt: '{}', outputFormat: 'json' })),
    { status: 'failed', failureCode: 'llm_output_invalid', detail: /delegate: the agent's answer is not JSON/ })
})

t.test('granted tools are offered as functions and write in the run\'s project as the agent', async (t) => {
  const { agent, start, finished, fake, alpha, olive, service } = await agentWorld(t)
  await agent('Maker', { model: 'tool-model', tools: ['tasks.create', 'tasks.read'] })
  const runId = await start({ agent: 'Maker', prompt: JSON.stringify({ calls: [
    { name: 'tasks_create', arguments: { title: 'Call {{ input.lead }}', labels: ['Lead'] } }] }) })
  const run = await finished(runId)
  t.equal(run.status, 'completed')
  const offered = fake.requests.find((r) => r.model === 'tool-model').tools.map((tool: any) => tool.function.name)
  t.same(offered.sort(), ['tasks_create', 'tasks_read'], 'the grants, as function names')
  const said = JSON.parse(run.output.answer.replace(/^tool said: /, ''))
  t.match(said, { task: { title: 'Call L-42', labels: ['Lead'], projectId: alpha } })
  const taskId = said.task.id
  t.match(run.effects, [{ step: 'delegate', type: 'task.create', taskId, projectId: alpha, created: true, agent: 'Maker' }])
  t.match((await olive.get(`/api/v1/projects/${alpha}/tasks/${taskId}`)).body, { task: { title: 'Call L-42' } })
  const [row] = await service.db.owner`select external_system, created_by_run_id from app.tasks where id = ${taskId}`
  t.same(row, { external_system: 'agent', created_by_run_id: runId }, 'attributed to the agent and its run')
})

t.test('a tool the agent was not granted is refused to the model, not run', async (t) => {
  const { agent, start, finished, alpha, olive } = await agentWorld(t)
  await agent('Reader', { model: 'tool-model', tools: ['tasks.read'] })
  const run = await finished(await start({ agent: 'Reader', prompt: JSON.stringify({ calls: [
    { name: 'tasks_create', arguments: { title: 'Sneaky' } }] }) }))
  t.match(run, { status: 'completed', output: { answer: 'tool said: {"error":"no tool tasks_create is granted to this agent"}' } })
  t.same((await olive.get(`/api/v1/projects/${alpha}/tasks`)).body.tasks, [], 'no task was written')
})

t.test('tasks.read lists open tasks without a task id, also when it is null', async (t) => {
  const { agent, start, finished, alpha, olive } = await agentWorld(t)
  await olive.post(`/api/v1/projects/${alpha}/tasks`, { externalSystem: 'crm', externalId: 'T-9', title: 'Listed' })
  await agent('Lister', { model: 'tool-model', tools: ['tasks.read'] })
  const run = await finished(await start({ agent: 'Lister', prompt: JSON.stringify({ calls: [{ name: 'tasks_read', arguments: { taskId: null } }] }) }))
  t.match(JSON.parse(run.output.answer.replace(/^tool said: /, '')), { tasks: [{ title: 'Listed' }] })
})

t.test('a tool call repeated at its place writes once; another call writes anew; a settled turn writes nothing', async (t) => {
  const { agent, service, seeded, alpha, start, finished } = await agentWorld(t)
  const agentId = await agent('Maker', { model: 'tool-model', tools: ['tasks.create'] })
  const orgId = seeded.organizations.acme!.id
  const db = service.db.owner
  // A run parked on its agent, its turn running: as the job sees it mid-turn.
  const [run] = await db`
    insert into app.runs (organization_id, automation_name, version, document, mode, status, waiting_for, project_id, seq)
    values (${orgId}, 'agents/manual', 1, '{"name": "agents/manual", "steps": []}', 'live', 'waiting', 'agent', ${alpha}, 1) returning id`
  const [turn] = await db`
    insert into app.agent_turns (organization_id, run_id, step_slug, run_seq, agent_id, agent_name, prompt, status)
    values (${orgId}, ${run!.id}, 'delegate', 1, ${agentId}, 'Maker', 'x', 'running') returning id`
  const call = (place: string, title: string) =>
    db`select app.worker_agent_tool(${orgId}, ${turn!.id}, ${place}, 'tasks.create', ${db.json({ title })}) as a`.then(([r]) => r!.a)
  const first = await call('1.0.aaaa', 'Once')
  const repeated = await call('1.0.aaaa', 'Once')
  t.equal(repeated.result.task.id, first.result.task.id, 'the same call addresses the same task')
  t.match(repeated.effect, { created: false })
  const other = await call('1.1.bbbb', 'Twice')
  t.not(other.result.task.id, first.result.task.id, 'another call writes its own task')
  const [effects] = await db`select effects from app.agent_turns where id = ${turn!.id}`
  t.equal(effects!.effects.length, 2, 'each call\'s write is listed once')

  const done = await finished(await start({ agent: 'Maker', prompt: JSON.stringify({ calls: [{ name: 'tasks_create', arguments: { title: 'Done' } }] }) }))
  const [settled] = await db`select id from app.agent_turns where run_id = ${done.runId ?? done.id}`
  const [late] = await db`select app.worker_agent_tool(${orgId}, ${settled!.id}, 'x', 'tasks.create', '{"title": "Late"}') as a`
  t.same(late!.a, { stopped: true }, 'a settled turn writes nothing more')
  const [count] = await db`select count(*)::int as n from app.tasks where project_id = ${alpha} and title = 'Late'`
  t.equal(count!.n, 0)
})

t.test('tasks.comment and tasks.update act on the project\'s tasks; files.read reads extracted text', async (t) => {
  const { agent, start, finished, alpha, olive, service, seeded } = await agentWorld(t)
  const created = await olive.post(`/api/v1/projects/${alpha}/tasks`, { externalSystem: 'crm', externalId: 'T-1', title: 'Follow up' })
  const taskId = created.body.task.id
  const orgId = seeded.organizations.acme!.id
  const [doc] = await service.db.owner`
    insert into app.documents (organization_id, project_id, file_name, mime_type, size_bytes, object_key, extracted_text)
    values (${orgId}, ${alpha}, 'notes.txt', 'text/plain', 11, ${`${orgId}/${alpha}/notes`}, 'hello notes') returning id`
  await agent('Worker', { model: 'tool-model', tools: ['tasks.comment', 'tasks.update', 'files.read'] })
  const run = await finished(await start({ agent: 'Worker', prompt: JSON.stringify({ calls: [
    { name: 'tasks_comment', arguments: { taskId, body: 'Looked at it' } },
    { name: 'tasks_update', arguments: { taskId, status: 'in_progress' } },
    { name: 'files_read', arguments: { fileId: doc!.id } }] }) }))
  t.equal(run.status, 'completed')
  t.same(JSON.parse(run.output.answer.replace(/^tool said: /, '')),
    { fileId: doc!.id, name: 'notes.txt', mimeType: 'text/plain', text: 'hello notes', truncated: false })
  t.match(run.effects.map((e: { type: string }) => e.type), ['task.comment', 'task.update'])
  t.match((await olive.get(`/api/v1/projects/${alpha}/tasks/${taskId}`)).body.task, { status: 'in_progress' })
  const comments = (await olive.get(`/api/v1/projects/${alpha}/tasks/${taskId}/comments`)).body.comments
  t.match(comments, [{ body: 'Looked at it' }])
  const [event] = await service.db.owner`select count(*)::int as n from app.events where name = 'task.status_changed'`
  t.equal(event!.n, 0, 'an agent\'s move raises no task.status_changed')
})

t.test('web.fetch reads public pages only: loopback and private addresses are refused', async (t) => {
  const { agent, start, finished, fake } = await agentWorld(t)
  await agent('Browser', { model: 'tool-model', tools: ['web.fetch'], secrets: ['CRM_TOKEN'] })
  const run = await finished(await start({ agent: 'Browser', prompt: JSON.stringify({ calls: [
    { name: 'web_fetch', arguments: { url: `${fake.url}/models` } }] }) }))
  t.match(run, { status: 'completed', output: { answer: /127\.0\.0\.1 is not a public address/ } })
  const named = await finished(await start({ agent: 'Browser', prompt: JSON.stringify({ calls: [
    { name: 'web_fetch', arguments: { url: 'http://localhost:9/' } }] }) }))
  t.match(named.output.answer, /localhost is not a public address/, 'a name resolving to loopback too')
  const mapped = await finished(await start({ agent: 'Browser', prompt: JSON.stringify({ calls: [
    { name: 'web_fetch', arguments: { url: 'http://[::127.0.0.1]:9/' } }] }) }))
  t.match(mapped.output.answer, /is not a public address/, 'an IPv4-compatible IPv6 address too')
  t.notOk(JSON.stringify(fake.requests).includes('crm-secret'), 'a granted secret\'s value never reaches the model')
  for (const address of ['127.0.0.1', '10.1.2.3', '172.20.0.1', '192.168.1.1', '169.254.169.254', '::1', '::', 'fe80::1', 'fd00::1',
    '::ffff:127.0.0.1', '::7f00:1', '0.0.0.0', '100.64.0.1']) {
    t.ok(isInternalAddress(address), `${address} is internal`)
  }
  for (const address of ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946', '8.8.8.8']) t.notOk(isInternalAddress(address), `${address} is public`)
})

t.test('the run\'s time limit holds across its agent step', async (t) => {
  const { agent, start, finished, turns } = await agentWorld(t)
  await agent('Slow', { model: 'slow-loop-model', tools: ['tasks.read'] })
  // Twelve rounds of 300 ms each would outlast the run's 1.5 s.
  const run = await finished(await start({ agent: 'Slow', prompt: 'x' }, { timeoutMs: 1500 }))
  t.match(run, { status: 'failed', failureCode: 'timeout', detail: /time ran out while its agent was working/ })
  const [turn] = await turns(run.runId ?? run.id)
  t.ok(turn!.deadline_at, 'the turn carries the run\'s deadline')
})

t.test('an answer PostgreSQL could not store as it is still settles the step', async (t) => {
  const { agent, start, finished } = await agentWorld(t)
  await agent('Broken text', { model: 'surrogate-model' })
  t.match(await finished(await start({ agent: 'Broken text', prompt: 'x' })),
    { status: 'completed', output: { answer: 'broken \ufffd answer' } }, 'the unpaired surrogate is stored as U+FFFD')
})

t.test('agent failures fail the run with the run failure codes', async (t) => {
  const { agent, start, finished, turns } = await agentWorld(t)
  await agent('Broken', { model: 'fail-model' })
  await agent('Locked', { model: 'locked-model' })
  await agent('Hung', { model: 'hang-model' })
  await agent('Looper', { model: 'loop-model', tools: ['tasks.read'] })
  const broken = await finished(await start({ agent: 'Broken', prompt: 'x' }))
  t.match(broken, { status: 'failed', failureCode: 'connector_error', detail: /^delegate: the model provider answered 500/ })
  t.match(broken.trace.at(-1), { slug: 'delegate', type: 'agent', error: /answered 500/ })
  t.match(await turns(broken.runId ?? broken.id), [{ status: 'failed', failure_code: 'connector_error' }])
  t.match(await finished(await start({ agent: 'Locked', prompt: 'x' })), { status: 'failed', failureCode: 'auth_error' })
  t.match(await finished(await start({ agent: 'Hung', prompt: 'x' })), { status: 'failed', failureCode: 'timeout' })
  t.match(await finished(await start({ agent: 'Looper', prompt: 'x' })),
    { status: 'failed', failureCode: 'llm_output_invalid', detail: /still asked for tools after 12 model calls/ })
})

t.test('an agent that cannot run fails the step at once, never parked', async (t) => {
  const { agent, start, finished, service, olive, alpha, turns } = await agentWorld(t)
  const neverParked = (run: any) => t.notOk(run.trace.some((e: any) => e.output?.waitingFor === 'agent'), 'never waited')

  const missing = await finished(await start({ agent: 'Nobody', prompt: 'x' }))
  t.match(missing, { status: 'failed', failureCode: 'node_error', detail: /no agent "Nobody" in the project/ })
  neverParked(missing)

  await agent('Coder', { harness: 'opencode' })
  await service.db.owner`select app.operator_harness_remove('opencode')`
  const harness = await finished(await start({ agent: 'Coder', prompt: 'x' }))
  t.match(harness, { status: 'failed', failureCode: 'node_error', detail: /harness "opencode", which this deployment does not run/ })
  neverParked(harness)
  t.same(await turns(harness.runId ?? harness.id), [], 'no turn was handed over')
  const refusedSave = await olive.post(`/api/v1/projects/${alpha}/agents`,
    { name: 'Coder 2', harness: 'opencode', model: 'echo-model', skills: [], connectors: [] })
  refused(t, refusedSave, 400, 'PROJECT_AGENT_HARNESS_INVALID', 'and a save on it is refused')
  t.same(refusedSave.body.data.harnesses, ['claude-code', 'codex'])
  t.same((await olive.get('/api/v1/models')).body.harnesses.map((h: { id: string }) => h.id), ['claude-code', 'codex'])

  await agent('Orphan', { model: 'slow-model' })
  await service.db.owner`delete from app.models where id = 'slow-model'`
  const orphan = await finished(await start({ agent: 'Orphan', prompt: 'x' }))
  t.match(orphan, { status: 'failed', failureCode: 'model_not_found' })
  neverParked(orphan)

  const wide = await finished(await start({ agent: 'Orphan', prompt: 'x' }, { project: null }))
  t.match(wide, { status: 'failed', failureCode: 'node_error', detail: /names the agent's project in the step's projectId/ },
    'an organization-wide run must name the agent\'s project')
})

t.test('an organization-wide run reaches an agent of the project its step names', async (t) => {
  const { agent, start, finished, alpha } = await agentWorld(t)
  await agent('Scout')
  t.match(await finished(await start({ agent: 'Scout', prompt: 'hi', projectId: alpha }, { project: null })),
    { status: 'completed', output: { answer: 'echo: hi' } })
})

t.test('a cancel while the agent works stops the turn mid-call and leaves the run cancelled', async (t) => {
  // The provider hangs far longer than the test waits: only the cancel can end the turn.
  const { agent, start, dev, turns } = await agentWorld(t, { MODEL_TIMEOUT_MS: '60000' })
  await agent('Hung', { model: 'hang-model' })
  const runId = await start({ agent: 'Hung', prompt: 'x' })
  await eventually(() => turns(runId), (rows) => rows[0]?.status === 'running')
  t.equal((await dev.post(`/api/v1/runs/${runId}/cancel`)).status, 200)
  const settled = await eventually(() => turns(runId), (rows) => rows[0]?.status !== 'running')
  t.equal(settled[0]!.status, 'void', 'the turn stopped without an answer')
  t.match((await dev.get(`/api/v1/runs/${runId}`)).body, { status: 'cancelled' })
})

t.test('mock runs answer with the step\'s mock and hand nothing to an agent', async (t) => {
  const { start, finished, turns, fake } = await agentWorld(t)
  const runId = await start({ agent: 'Nobody', prompt: 'x' }, { mode: 'mock', mock: 'mocked answer' })
  t.match(await finished(runId), { status: 'completed', output: { answer: 'mocked answer' } })
  t.same(await turns(runId), [])
  t.equal(fake.requests.length, 0)
})

t.test('the operator keeps the deployment\'s harness list', async (t) => {
  const { service } = await agentWorld(t)
  await service.db.owner`select app.operator_harness_add('aider', 'Aider')`
  const [listed] = await service.db.owner`select app.operator_harnesses() as h`
  t.same(listed!.h.map((h: { id: string }) => h.id), ['claude-code', 'codex', 'opencode', 'aider'])
  const [removed] = await service.db.owner`select app.operator_harness_remove('aider') as r, app.operator_harness_remove('aider') as again`
  t.same(removed, { r: true, again: false })
})
