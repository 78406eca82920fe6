// The task events (task.created, task.status_changed, comment.created,
// comment.mentioned): raised into the outbox in the transaction of the change, heard
// by event triggers; an automation's own moves raise no status change, and an
// automation never hears the events its own runs raised.
import t from 'tap'
import { world, type World } from '../lib/world.ts'
import { deploy, waitForRun } from '../lib/automations.ts'
import { eventually } from '../lib/wait.ts'

const outbox = async (w: World, name?: string) => w.service.db.owner<{ name: string; payload: any; project_id: string | null; source_run_id: string | null }[]>`
  select name, payload, project_id, source_run_id from app.events where ${name ?? null}::text is null or name = ${name ?? null} order by id`

async function bind(w: World, name: string, event: string, steps: unknown[]) {
  await deploy(await w.dev.mcp(), { name, description: `Hears ${event}`, steps })
  const put = await w.dev.put(`/api/v1/automations/${name.replaceAll('/', '__')}/triggers`, { kind: 'event', event })
  if (put.status !== 200) throw new Error(`binding ${name} to ${event} failed: ${put.status} ${put.text}`)
}
const echo = [{ slug: 'end', type: 'output', config: { mapping: { event: '{{ input.event }}', title: '{{ input.payload.task.title }}' } } }]

t.test('task.created is raised once per new task, never by a repeat', async (t) => {
  const w = await world(t)
  const base = `/api/v1/projects/${w.alpha}/tasks`
  const created = await w.olive.post(base, { externalSystem: 'jira', externalId: 'E-1', title: 'First' })
  await w.olive.post(base, { externalSystem: 'jira', externalId: 'E-1', title: 'Renamed' })
  const events = await outbox(w, 'task.created')
  t.equal(events.length, 1)
  t.match(events[0], { project_id: w.alpha, payload: { task: { id: created.body.task.id, title: 'First', status: 'backlog', identifier: 'ALPHA-1' } } })
})

t.test('a refused create raises nothing; a create whose workflow cannot start raises task.created once', async (t) => {
  const w = await world(t)
  const base = `/api/v1/projects/${w.alpha}/tasks`
  const refused = await w.olive.post(base, { externalSystem: 'jira', externalId: 'E-0', title: 'Nope', setupFolderName: 'Missing' })
  t.equal(refused.status, 400)
  t.same((await outbox(w)).filter((e) => e.name !== 'project.created'), [], 'nothing raised for a refused create')
  const saved = await w.olive.post(base, { externalSystem: 'jira', externalId: 'E-00', title: 'Saved', runWorkflowSlug: 'no/such' })
  t.same([saved.status, saved.body.runId], [201, null])
  t.equal((await outbox(w, 'task.created')).length, 1)
})

t.test('task.status_changed is raised for a person\'s moves, with where from and where to', async (t) => {
  const w = await world(t)
  const base = `/api/v1/projects/${w.alpha}/tasks`
  const id = (await w.olive.post(base, { externalSystem: 'jira', externalId: 'E-2', title: 'Move me' })).body.task.id
  await w.olive.patch(`${base}/${id}`, { status: 'in_progress' })
  await w.olive.patch(`${base}/${id}`, { status: 'in_progress' })
  await w.olive.post(base, { externalSystem: 'jira', externalId: 'E-2', title: 'Move me', externalState: 'closed' })
  await w.olive.post(`${base}/${id}/review`, {})
  const moves = (await outbox(w, 'task.status_changed')).map((e) => [e.payload.from, e.payload.to])
  t.same(moves, [['backlog', 'in_progress'], ['in_progress', 'in_review']],
    'the board move and the close a person\'s sync brought; a move to the same status and a review that moved nothing raise none')
})

t.test('an automation\'s own moves raise no task.status_changed', async (t) => {
  const w = await world(t, { worker: true })
  await deploy(await w.dev.mcp(), { name: 'sync/close', description: 'Closes', steps: [
    { slug: 'make', type: 'action', next: { success: 'end' },
      config: { action: 'task.create', params: { externalSystem: 'jira', externalId: 'E-3', title: 'Closing', externalState: 'closed' } } },
    { slug: 'end', type: 'output', config: { mapping: { status: '{{ steps.make.output.status }}' } } },
  ] })
  await w.olive.post(`/api/v1/projects/${w.alpha}/tasks`, { externalSystem: 'jira', externalId: 'E-3', title: 'Closing' })
  const started = await w.dev.post(`/api/v1/projects/${w.alpha}/automations/sync__close/runs`, { input: {} })
  t.match(await waitForRun(w.dev.get, started.body.runId), { status: 'completed', output: { status: 'done' } })
  t.same(await outbox(w, 'task.status_changed'), [], 'the engine moved it to done without an event')
})

t.test('comment.created is raised per comment, comment.mentioned per mentioned member who sees the project', async (t) => {
  const w = await world(t)
  const base = `/api/v1/projects/${w.alpha}/tasks`
  const id = (await w.olive.post(base, { externalSystem: 'jira', externalId: 'E-4', title: 'Talk' })).body.task.id
  const posted = await w.eddie.post(`${base}/${id}/comments`, { body: '@max and @adam, please look' })
  const created = await outbox(w, 'comment.created')
  t.equal(created.length, 1)
  t.match(created[0]!.payload, { task: { id }, comment: { id: posted.body.comment.id, authorType: 'user', body: '@max and @adam, please look' } })
  const mentioned = (await outbox(w, 'comment.mentioned')).map((e) => e.payload.mentionedUserId).sort()
  t.same(mentioned, [w.seeded.users['adam@acme.test']!.id, w.seeded.users['max@acme.test']!.id].sort())
})

t.test('event triggers bind the task events and their runs receive them', async (t) => {
  const w = await world(t, { worker: true })
  await bind(w, 'hear/created', 'task.created', echo)
  await bind(w, 'hear/moved', 'task.status_changed', echo)
  const base = `/api/v1/projects/${w.alpha}/tasks`
  const id = (await w.olive.post(base, { externalSystem: 'jira', externalId: 'E-5', title: 'Heard' })).body.task.id
  await w.olive.patch(`${base}/${id}`, { status: 'done' })
  const runs = await eventually(
    () => w.service.db.owner<{ id: string; automation_name: string; project_id: string }[]>`select id, automation_name, project_id from app.runs order by created_at`,
    (rows) => rows.length >= 2)
  for (const run of runs) {
    const done = await waitForRun(w.olive.get, run.id)
    t.match(done, { status: 'completed', startedVia: 'event', output: { title: 'Heard' } }, run.automation_name)
  }
  t.same(runs.map((r) => r.automation_name).sort(), ['hear/created', 'hear/moved'])
})

t.test('an automation that creates tasks never hears the task.created its own runs raised', async (t) => {
  const w = await world(t, { worker: true })
  await bind(w, 'hear/spawn', 'task.created', [
    { slug: 'make', type: 'action', next: { success: 'end' },
      config: { action: 'task.create', params: { title: 'Follow-up of {{ input.payload.task.title }}', projectId: '{{ input.payload.task.projectId }}' } } },
    { slug: 'end', type: 'output', config: { mapping: {} } },
  ])
  await w.olive.post(`/api/v1/projects/${w.alpha}/tasks`, { externalSystem: 'jira', externalId: 'E-6', title: 'Seed' })
  const [first] = await eventually(
    () => w.service.db.owner<{ id: string }[]>`select id from app.runs where automation_name = 'hear/spawn'`, (rows) => rows.length > 0)
  await waitForRun(w.olive.get, first!.id)
  // Both task.created events drained: the person's, and the run's own.
  await eventually(() => w.service.db.owner<{ n: number }[]>`select count(*)::int as n from app.events where drained_at is null`,
    (rows) => rows[0]!.n === 0)
  const events = await outbox(w, 'task.created')
  t.equal(events.length, 2, 'the run\'s task raised task.created too')
  t.equal(events[1]!.source_run_id, first!.id)
  const [row] = await w.service.db.owner<{ n: number }[]>`select count(*)::int as n from app.runs where automation_name = 'hear/spawn'`
  t.equal(row!.n, 1, 'one run: its own task did not set it off again')
})

t.test('an event-started run acts for whoever bound its trigger: no writes where they cannot write', async (t) => {
  const w = await world(t, { worker: true })
  // dev binds it; dev edits Alpha and does not see Beta.
  await bind(w, 'hear/follow', 'task.created', [
    { slug: 'make', type: 'action', next: { success: 'end' },
      config: { action: 'task.create', params: { externalSystem: 'follow', externalId: '{{ input.payload.task.id }}',
        title: 'Follow-up', projectId: '{{ input.payload.task.projectId }}' } } },
    { slug: 'end', type: 'output', config: { mapping: {} } },
  ])
  for (const project of [w.alpha, w.beta]) {
    await w.olive.post(`/api/v1/projects/${project}/tasks`, { externalSystem: 'jira', externalId: `F-${project}`, title: 'Seed' })
  }
  const runs = await eventually(
    () => w.service.db.owner<{ id: string }[]>`select id from app.runs where automation_name = 'hear/follow' order by created_at`,
    (rows) => rows.length === 2)
  const outcomes = await Promise.all(runs.map((r) => waitForRun(w.olive.get, r.id)))
  const follow = await w.service.db.owner<{ project_id: string }[]>`select project_id from app.tasks where external_system = 'follow'`
  t.same(follow.map((f) => f.project_id), [w.alpha], 'a follow-up in Alpha only')
  t.same(outcomes.map((o) => o.status).sort(), ['completed', 'failed'])
  t.match(outcomes.find((o) => o.status === 'failed'), { failureCode: 'node_error', detail: /No such project/ })
})
