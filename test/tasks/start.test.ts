// Workflow starts on tasks: POST .../tasks/{taskId}/start, runWorkflowSlug on create,
// and the earlier flat start.
import t, { type Test } from 'tap'
import { world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'
import { deploy, simpleDocument, waitForRun } from '../lib/automations.ts'
import { callTool } from '../lib/mcp.ts'
import { acme, person } from '../lib/fixtures.ts'

// A workflow that waits for an approval, so its run stays live.
const waiting = (name: string) => ({
  name, description: 'Waits for a person',
  steps: [
    { slug: 'ask', type: 'approval', config: { title: 'Go on?' }, next: { approved: 'end', rejected: 'end' } },
    { slug: 'end', type: 'output', config: { mapping: { task: '{{ input.task.title }}' } } },
  ],
})

async function startWorld(t: Test) {
  const w = await world(t, { worker: true })
  const mcp = await w.dev.mcp()
  await deploy(mcp, waiting('board/triage'))
  await deploy(mcp, simpleDocument('board/greet', { inputs: { type: 'object' } }))
  const base = `/api/v1/projects/${w.alpha}/tasks`
  const task = async (externalId: string, extra: Record<string, unknown> = {}) =>
    (await w.olive.post(base, { externalSystem: 'jira', externalId, title: `Task ${externalId}`, ...extra })).body.task.id as string
  return { ...w, mcp, base, task }
}

t.test('a start answers 200 with the run, which runs in the task\'s project with the task as input', async (t) => {
  const { base, task, eddie, olive, alpha } = await startWorld(t)
  const id = await task('S-1')
  const started = await eddie.post(`${base}/${id}/start`, { workflowSlug: 'board/triage' })
  t.equal(started.status, 200)
  t.same(started.body, { started: true, runId: started.body.runId, executionId: started.body.runId })
  const run = await waitForRun(olive.get, started.body.runId, (r) => r.status === 'waiting')
  t.match(run, { status: 'waiting', projectId: alpha, startedVia: 'task', mode: 'live', input: { trigger: 'task', task: { id, title: 'Task S-1' } } })
  t.equal((await olive.get(`/api/v1/projects/${alpha}/runs/${started.body.runId}`)).status, 200, 'read through the project')
})

t.test('a second start while the workflow runs answers started:false, already_running, with that run', async (t) => {
  const { base, task, eddie } = await startWorld(t)
  const id = await task('S-2')
  const first = await eddie.post(`${base}/${id}/start`, { workflowSlug: 'board/triage' })
  const second = await eddie.post(`${base}/${id}/start`, { workflowSlug: 'board/triage' })
  t.same(second.body, { started: false, reason: 'already_running', runId: first.body.runId, executionId: first.body.runId })
  const other = await task('S-3')
  t.equal((await eddie.post(`${base}/${other}/start`, { workflowSlug: 'board/triage' })).body.started, true, 'another task starts its own')
})

t.test('racing starts of one workflow on one task start it once', async (t) => {
  const { base, task, eddie } = await startWorld(t)
  const id = await task('S-4')
  const answers = await Promise.all([1, 2, 3, 4].map(() => eddie.post(`${base}/${id}/start`, { workflowSlug: 'board/triage' })))
  t.equal(answers.filter((a) => a.body.started).length, 1)
  t.equal(new Set(answers.map((a) => a.body.runId)).size, 1, 'every answer names the one run')
})

t.test('a finished run does not hold back the next start', async (t) => {
  const { base, task, eddie, olive } = await startWorld(t)
  const id = await task('S-5')
  const first = await eddie.post(`${base}/${id}/start`, { workflowSlug: 'board/greet' })
  await waitForRun(olive.get, first.body.runId)
  const second = await eddie.post(`${base}/${id}/start`, { workflowSlug: 'board/greet' })
  t.equal(second.body.started, true)
  t.not(second.body.runId, first.body.runId)
})

t.test('an unknown workflow answers 404 AUTOMATION_NOT_FOUND; one with nothing deployed 409 AUTOMATION_NOT_DEPLOYED', async (t) => {
  const { base, task, eddie, mcp } = await startWorld(t)
  const id = await task('S-6')
  refused(t, await eddie.post(`${base}/${id}/start`, { workflowSlug: 'board/missing' }), 404, 'AUTOMATION_NOT_FOUND')
  await callTool(mcp, 'automation_create', { document: simpleDocument('board/draft') })
  refused(t, await eddie.post(`${base}/${id}/start`, { workflowSlug: 'board/draft' }), 409, 'AUTOMATION_NOT_DEPLOYED')
})

t.test('a workflow bound to other projects answers 403', async (t) => {
  const { base, task, eddie, olive, beta } = await startWorld(t)
  t.equal((await olive.post(`/api/v1/projects/${beta}/automations/board__greet`, {})).status, 201)
  const id = await task('S-7')
  refused(t, await eddie.post(`${base}/${id}/start`, { workflowSlug: 'board/greet' }), 403, 'AUTOMATION_PROJECT_FORBIDDEN')
})

t.test('a workflow installed in the task\'s project starts there', async (t) => {
  const { base, task, eddie, olive, alpha, beta } = await startWorld(t)
  await olive.post(`/api/v1/projects/${beta}/automations/board__greet`, {})
  await olive.post(`/api/v1/projects/${alpha}/automations/board__greet`, {})
  const id = await task('S-8')
  t.equal((await eddie.post(`${base}/${id}/start`, { workflowSlug: 'board/greet' })).body.started, true)
})

t.test('starting needs edit access to the task\'s project, never the developer capability', async (t) => {
  // Mia is a member (no editing role, no developer capability) holding an edit grant on Alpha.
  const w = await world(t, { worker: true, seed: { users: [...acme().users!, person('mia@acme.test', [{ org: 'acme', role: 'member' }])] },
    projects: [{ org: 'acme', name: 'Alpha', createdBy: 'olive@acme.test', access: [
    { email: 'max@acme.test', level: 'read' }, { email: 'mia@acme.test', level: 'edit' }, { email: 'eddie@acme.test', level: 'edit' },
  ] }, { org: 'acme', name: 'Beta', createdBy: 'olive@acme.test', access: [] }] })
  await deploy(await w.dev.mcp(), waiting('board/triage'))
  const base = `/api/v1/projects/${w.alpha}/tasks`
  const id = (await w.olive.post(base, { externalSystem: 'jira', externalId: 'P-1', title: 'P' })).body.task.id
  refused(t, await w.max.post(`${base}/${id}/start`, { workflowSlug: 'board/triage' }), 403, 'ROLE_FORBIDDEN', 'a reader')
  const mia = w.as('mia@acme.test')
  t.equal((await mia.post(`${base}/${id}/start`, { workflowSlug: 'board/triage' })).body.started, true,
    'a member (no editing role, no developer capability) with edit access')
  refused(t, await w.gina.post(`${base}/${id}/start`, { workflowSlug: 'board/triage' }), 404, 'NOT_FOUND', 'another organization')
  const betaTask = (await w.olive.post(`/api/v1/projects/${w.beta}/tasks`, { externalSystem: 'jira', externalId: 'B-1', title: 'B' })).body.task.id
  refused(t, await w.eddie.post(`/api/v1/projects/${w.beta}/tasks/${betaTask}/start`, { workflowSlug: 'board/triage' }), 404, 'NOT_FOUND',
    'a task eddie cannot see')
})

t.test('runWorkflowSlug starts the workflow on a new task, never on a repeat', async (t) => {
  const { base, olive, service } = await startWorld(t)
  const body = { externalSystem: 'jira', externalId: 'W-1', title: 'W', runWorkflowSlug: 'board/triage' }
  const created = await olive.post(base, body)
  t.equal(created.status, 201)
  t.type(created.body.runId, 'string')
  t.equal(created.body.executionId, created.body.runId, 'executionId is the deprecated copy')
  const again = await olive.post(base, body)
  t.same(again.body, { task: { id: created.body.task.id, created: false }, runId: null, executionId: null })
  const [row] = await service.db.owner<{ count: number }[]>`select count(*)::int as count from app.runs where task_id = ${created.body.task.id}`
  t.equal(row!.count, 1, 'one run')
})

t.test('runWorkflowSlug without a deployed version, or whose start fails, still saves the task and answers null', async (t) => {
  const { base, olive, mcp, beta } = await startWorld(t)
  const unknown = await olive.post(base, { externalSystem: 'jira', externalId: 'W-2', title: 'W', runWorkflowSlug: 'board/missing' })
  t.equal(unknown.status, 201)
  t.same([unknown.body.runId, unknown.body.executionId], [null, null])
  await callTool(mcp, 'automation_create', { document: simpleDocument('board/draft') })
  const draft = await olive.post(base, { externalSystem: 'jira', externalId: 'W-3', title: 'W', runWorkflowSlug: 'board/draft' })
  t.same([draft.status, draft.body.runId], [201, null])
  await olive.post(`/api/v1/projects/${beta}/automations/board__greet`, {})
  const bound = await olive.post(base, { externalSystem: 'jira', externalId: 'W-4', title: 'W', runWorkflowSlug: 'board/greet' })
  t.same([bound.status, bound.body.runId], [201, null], 'bound to another project: the start fails after the task is saved')
  t.equal((await olive.get(`${base}/${bound.body.task.id}`)).status, 200)
})

t.test('the flat start answers an unknown or undeployed workflow with started:false, not_started', async (t) => {
  const { task, eddie, mcp } = await startWorld(t)
  const id = await task('F-1')
  t.same((await eddie.post(`/api/v1/tasks/${id}/start`, { workflowSlug: 'board/missing' })).body,
    { started: false, reason: 'not_started', runId: null, executionId: null })
  await callTool(mcp, 'automation_create', { document: simpleDocument('board/draft') })
  t.equal((await eddie.post(`/api/v1/tasks/${id}/start`, { workflowSlug: 'board/draft' })).body.reason, 'not_started')
  const started = await eddie.post(`/api/v1/tasks/${id}/start`, { workflowSlug: 'board/triage' })
  t.same(started.body, { started: true, runId: started.body.runId, executionId: started.body.runId })
  t.same((await eddie.post(`/api/v1/tasks/${id}/start`, { workflowSlug: 'board/triage' })).body,
    { started: false, reason: 'already_running', runId: started.body.runId, executionId: started.body.runId })
})

t.test('a start draws on the starting-work budget', async (t) => {
  const w = await world(t, { worker: false, env: { RATE_LIMIT_SCALE: '0.05' } })
  await deploy(await w.dev.mcp(), simpleDocument('board/greet', { inputs: { type: 'object' } }))
  const id = (await w.olive.post(`/api/v1/projects/${w.alpha}/tasks`, { externalSystem: 'jira', externalId: 'Q-1', title: 'Q' })).body.task.id
  let limited = null
  for (let i = 0; i < 10 && !limited; i++) {
    const res = await w.olive.post(`/api/v1/tasks/${id}/start`, { workflowSlug: 'board/greet' })
    if (res.status === 429) limited = res
  }
  t.ok(limited, 'the narrow budget (2 at this scale) runs out before the general one')
  if (limited) refused(t, limited, 429, 'RATE_LIMITED')
})
