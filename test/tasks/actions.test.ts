// Live action steps task.create and task.comment: they write under the run's
// organization and project by the same rules as the REST operations, are listed in
// the run's effects, and a step repeated after a crash writes once.
import t, { type Test } from 'tap'
import { world } from '../lib/world.ts'
import { deploy, waitForRun } from '../lib/automations.ts'

const output = (mapping: Record<string, unknown>) => ({ slug: 'end', type: 'output', config: { mapping } })

async function actionWorld(t: Test) {
  const w = await world(t, { worker: true })
  const mcp = await w.dev.mcp()
  const deployed = new Set<string>()
  /** Deploys the steps as an automation (once) and runs it live in Alpha (or organization-wide). */
  const run = async (name: string, steps: unknown[], options: { input?: unknown; project?: string | null } = {}) => {
    if (!deployed.has(name)) await deploy(mcp, { name, description: 'Acts', steps })
    deployed.add(name)
    const project = options.project === undefined ? w.alpha : options.project
    const path = project ? `/api/v1/projects/${project}/automations/${name.replaceAll('/', '__')}/runs` : `/api/v1/automations/${name.replaceAll('/', '__')}/runs`
    const started = await w.dev.post(path, { input: options.input ?? {} })
    t.equal(started.status, 202, `${name} started`)
    return waitForRun(w.dev.get, started.body.runId)
  }
  return { ...w, run }
}

t.test('task.create and task.comment write live in the run\'s project and are listed in its effects', async (t) => {
  const { run, olive, alpha, seeded } = await actionWorld(t)
  const done = await run('intake/lead', [
    { slug: 'make', type: 'action', next: { success: 'note' },
      config: { action: 'task.create', params: { externalSystem: 'crm', externalId: '{{ input.lead }}', title: 'Call {{ input.lead }}', labels: ['Lead'] } } },
    { slug: 'note', type: 'action', next: { success: 'end' },
      config: { action: 'task.comment', params: { taskId: '{{ steps.make.output.taskId }}', body: 'Assigned to @olive' } } },
    output({ task: '{{ steps.make.output.taskId }}', created: '{{ steps.make.output.created }}', comment: '{{ steps.note.output.commentId }}' }),
  ], { input: { lead: 'L-42' } })
  t.match(done, { status: 'completed', output: { created: true } })
  const taskId = done.output.task
  t.same(done.effects, [
    { step: 'make', type: 'task.create', taskId, projectId: alpha, created: true },
    { step: 'note', type: 'task.comment', taskId, commentId: done.output.comment, projectId: alpha },
  ])
  const task = (await olive.get(`/api/v1/projects/${alpha}/tasks/${taskId}`)).body.task
  t.match(task, { externalSystem: 'crm', externalId: 'L-42', title: 'Call L-42', labels: ['Lead'], status: 'backlog' })
  const [comment] = (await olive.get(`/api/v1/projects/${alpha}/tasks/${taskId}/comments`)).body.comments
  t.match(comment, { authorType: 'automation', authorId: null, runId: done.runId, body: 'Assigned to @olive',
    mentions: [seeded.users['olive@acme.test']!.id] })
})

t.test('a task.create without a natural key is keyed by the run and its step, so a second run makes a second task', async (t) => {
  const { run, olive, alpha } = await actionWorld(t)
  const steps = [
    { slug: 'make', type: 'action', next: { success: 'end' }, config: { action: 'task.create', params: { title: 'Follow up' } } },
    output({ task: '{{ steps.make.output.taskId }}' }),
  ]
  const first = await run('intake/plain', steps)
  const again = await run('intake/plain', steps)
  t.not(first.output.task, again.output.task)
  const read = (await olive.get(`/api/v1/projects/${alpha}/tasks/${first.output.task}`)).body.task
  t.equal(read.externalSystem, 'automation')
  t.match(read.externalId, new RegExp(`^${first.runId}:`))
})

t.test('a close sent by the workflow engine itself lands at done', async (t) => {
  const { run, olive, alpha } = await actionWorld(t)
  const done = await run('intake/close', [
    { slug: 'make', type: 'action', next: { success: 'end' },
      config: { action: 'task.create', params: { externalSystem: 'jira', externalId: 'J-1', title: 'J', externalState: 'closed' } } },
    output({ task: '{{ steps.make.output.taskId }}', status: '{{ steps.make.output.status }}' }),
  ])
  t.equal(done.output.status, 'done')
  t.equal((await olive.get(`/api/v1/projects/${alpha}/tasks/${done.output.task}`)).body.task.status, 'done')
})

t.test('task.comment without a task comments on the task that started the run', async (t) => {
  const { dev, olive, alpha } = await actionWorld(t)
  await deploy(await dev.mcp(), { name: 'board/note', description: 'Notes', steps: [
    { slug: 'note', type: 'action', next: { success: 'end' }, config: { action: 'task.comment', params: { body: 'Picked up {{ input.task.title }}' } } },
    output({}),
  ] })
  const base = `/api/v1/projects/${alpha}/tasks`
  const taskId = (await olive.post(base, { externalSystem: 'jira', externalId: 'N-1', title: 'Tidy' })).body.task.id
  const started = await olive.post(`${base}/${taskId}/start`, { workflowSlug: 'board/note' })
  t.equal((await waitForRun(olive.get, started.body.runId)).status, 'completed')
  t.same((await olive.get(`${base}/${taskId}/comments`)).body.comments.map((c: { body: string }) => c.body), ['Picked up Tidy'])
})

t.test('a refused action fails the step with its reason and writes nothing', async (t) => {
  const { run, service } = await actionWorld(t)
  const invalid = await run('intake/bad', [
    { slug: 'make', type: 'action', next: { success: 'end' }, config: { action: 'task.create', params: { title: 'x'.repeat(201), labels: ['', 'ok'] } } },
    output({}),
  ])
  t.match(invalid, { status: 'failed', failureCode: 'node_error', detail: /task\.create: .*title.*\(INVALID_BODY\)/ })
  const nowhere = await run('intake/nowhere', [
    { slug: 'make', type: 'action', next: { success: 'end' }, config: { action: 'task.create', params: { title: 'x' } } },
    output({}),
  ], { project: null })
  t.match(nowhere, { status: 'failed', failureCode: 'node_error', detail: /names the project in params\.projectId/ })
  const [row] = await service.db.owner<{ tasks: number; labels: number }[]>`
    select (select count(*)::int from app.tasks) as tasks, (select count(*)::int from app.task_labels) as labels`
  t.same(row, { tasks: 0, labels: 0 }, 'nothing half-written')
})

t.test('an organization-wide run names its project in params.projectId, one its starter may write to', async (t) => {
  const { run, alpha, beta, olive, service } = await actionWorld(t)
  const steps = (projectId: string) => [
    { slug: 'make', type: 'action', next: { success: 'end' }, config: { action: 'task.create', params: { title: 'x', projectId } } },
    output({ task: '{{ steps.make.output.taskId }}' }),
  ]
  const done = await run('intake/anywhere', steps(alpha), { project: null })
  t.equal(done.status, 'completed', 'dev edits Alpha')
  t.equal((await olive.get(`/api/v1/projects/${alpha}/tasks/${done.output.task}`)).status, 200)
  const hidden = await run('intake/hidden', steps(beta), { project: null })
  t.match(hidden, { status: 'failed', failureCode: 'node_error', detail: /No such project/ }, 'dev cannot see Beta')
  const [row] = await service.db.owner<{ n: number }[]>`select count(*)::int as n from app.tasks where project_id = ${beta}`
  t.equal(row!.n, 0, 'nothing was written to Beta')
})

t.test('task.comment names its task by externalSystem and externalId in the run\'s project', async (t) => {
  const { run, olive, alpha } = await actionWorld(t)
  const taskId = (await olive.post(`/api/v1/projects/${alpha}/tasks`, { externalSystem: 'crm', externalId: 'K-9', title: 'K' })).body.task.id
  const done = await run('intake/remark', [
    { slug: 'note', type: 'action', next: { success: 'end' },
      config: { action: 'task.comment', params: { externalSystem: 'crm', externalId: 'K-9', body: 'Noted' } } },
    output({ task: '{{ steps.note.output.taskId }}' }),
  ])
  t.equal(done.output.task, taskId)
  const missing = await run('intake/remark-missing', [
    { slug: 'note', type: 'action', next: { success: 'end' },
      config: { action: 'task.comment', params: { externalSystem: 'crm', externalId: 'K-404', body: 'Noted' } } },
    output({}),
  ])
  t.match(missing, { status: 'failed', failureCode: 'node_error', detail: /No such task/ })
})

t.test('a run in a project cannot write to another project', async (t) => {
  const { run, beta } = await actionWorld(t)
  const done = await run('intake/elsewhere', [
    { slug: 'make', type: 'action', next: { success: 'end' }, config: { action: 'task.create', params: { title: 'x', projectId: beta } } },
    output({}),
  ])
  t.match(done, { status: 'failed', detail: /own project only/ })
})

t.test('a step repeated after a crash writes its task and its comment once', async (t) => {
  const { run, service } = await actionWorld(t)
  const done = await run('intake/once', [
    { slug: 'make', type: 'action', next: { success: 'end' }, config: { action: 'task.create', params: { title: 'x' } } },
    output({}),
  ])
  const owner = service.db.owner
  // The run as a worker holds it mid-step: running, at the seq of the step in flight.
  await owner`update app.runs set status = 'running', finished_at = null, seq = 7 where id = ${done.runId}`
  const orgId = (await owner<{ id: string }[]>`select organization_id as id from app.runs where id = ${done.runId}`)[0]!.id
  const actAs = async (action: string, params: unknown) =>
    (await owner<{ result: Record<string, any> }[]>`select app.worker_action(${orgId}::uuid, ${done.runId}::uuid, ${action}, ${owner.json(params as never)}) as result`)[0]!.result
  const first = await actAs('task.create', { title: 'Crash-safe' })
  const repeat = await actAs('task.create', { title: 'Crash-safe' })
  t.equal(repeat.output.taskId, first.output.taskId, 'the same task')
  t.same([first.output.created, repeat.output.created], [true, false])
  const comment = await actAs('task.comment', { taskId: first.output.taskId, body: 'once' })
  const again = await actAs('task.comment', { taskId: first.output.taskId, body: 'once' })
  t.equal(again.output.commentId, comment.output.commentId, 'the same comment')
  const [row] = await owner<{ count: number }[]>`select count(*)::int as count from app.task_comments where body = 'once'`
  t.equal(row!.count, 1)
})
