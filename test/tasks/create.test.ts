// Creating tasks by natural key (SPEC.md "Task and comment", the Tasks endpoints and
// their repeat-creation rules).
import t from 'tap'
import { world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'
import { deploy, simpleDocument } from '../lib/automations.ts'

const item = (externalId: string, extra: Record<string, unknown> = {}) =>
  ({ externalSystem: 'jira', externalId, title: `Item ${externalId}`, ...extra })

t.test('a first create answers 201 with the task id and Location; a repeat answers 200 with the same task', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/tasks`
  const first = await olive.post(base, item('PROJ-1'))
  t.equal(first.status, 201)
  t.same(first.body, { task: { id: first.body.task.id, created: true } })
  t.equal(first.headers.get('location'), `${base}/${first.body.task.id}`)
  const again = await olive.post(base, item('PROJ-1'))
  t.equal(again.status, 200)
  t.same(again.body, { task: { id: first.body.task.id, created: false } })
  t.equal(again.headers.get('location'), null, 'nothing created, no Location')
})

t.test('the natural key is trimmed and NFC-normalized, so spellings of one key name one task', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/tasks`
  const first = await olive.post(base, { externalSystem: '  jira ', externalId: ' Caf\u00e9-1\t', title: 'One' })
  const again = await olive.post(base, { externalSystem: 'jira', externalId: 'Cafe\u0301-1', title: 'One' })
  t.equal(again.status, 200)
  t.equal(again.body.task.id, first.body.task.id)
  const read = await olive.get(`${base}/${first.body.task.id}`)
  t.equal(read.body.task.externalSystem, 'jira')
  t.equal(read.body.task.externalId, 'Caf\u00e9-1')
})

t.test('the same key in another project or another system is another task', async (t) => {
  const { alpha, beta, olive } = await world(t)
  const inAlpha = await olive.post(`/api/v1/projects/${alpha}/tasks`, item('K-1'))
  const inBeta = await olive.post(`/api/v1/projects/${beta}/tasks`, item('K-1'))
  const otherSystem = await olive.post(`/api/v1/projects/${alpha}/tasks`, item('K-1', { externalSystem: 'linear' }))
  t.equal(inBeta.status, 201)
  t.equal(otherSystem.status, 201)
  t.not(inBeta.body.task.id, inAlpha.body.task.id)
  t.not(otherSystem.body.task.id, inAlpha.body.task.id)
})

t.test('a new task starts in backlog and reads back what was sent, numbered in its project', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/tasks`
  const one = await olive.post(base, item('A-1', { description: 'Details', labels: ['Bug'], externalUrl: 'https://jira.example/A-1' }))
  const two = await olive.post(base, item('A-2'))
  const read = (await olive.get(`${base}/${one.body.task.id}`)).body.task
  t.match(read, {
    id: one.body.task.id, projectId: alpha, identifier: 'ALPHA-1', number: 1, externalSystem: 'jira', externalId: 'A-1',
    title: 'Item A-1', description: 'Details', labels: ['Bug'], externalUrl: 'https://jira.example/A-1',
    externalState: null, status: 'backlog', assignee: null,
  })
  t.equal((await olive.get(`${base}/${two.body.task.id}`)).body.task.identifier, 'ALPHA-2')
})

t.test('a repeat updates an active task\'s title and description, and an omitted description clears it', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/tasks`
  const { body: { task: { id } } } = await olive.post(base, item('R-1', { description: 'First' }))
  await olive.post(base, item('R-1', { title: 'Renamed', description: 'Second' }))
  t.match((await olive.get(`${base}/${id}`)).body.task, { title: 'Renamed', description: 'Second' })
  await olive.post(base, item('R-1', { title: 'Renamed' }))
  t.equal((await olive.get(`${base}/${id}`)).body.task.description, null, 'an omitted description clears it')
})

t.test('a repeat changes labels only when it sends them', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/tasks`
  const { body: { task: { id } } } = await olive.post(base, item('L-1', { labels: ['Bug', 'UI'] }))
  await olive.post(base, item('L-1'))
  t.same((await olive.get(`${base}/${id}`)).body.task.labels, ['Bug', 'UI'], 'kept when omitted')
  await olive.post(base, item('L-1', { labels: ['Docs'] }))
  t.same((await olive.get(`${base}/${id}`)).body.task.labels, ['Docs'], 'replaced when sent')
  await olive.post(base, item('L-1', { labels: [] }))
  t.same((await olive.get(`${base}/${id}`)).body.task.labels, [], 'cleared by an empty list')
})

t.test('a repeat leaves an archived task unchanged', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/tasks`
  const { body: { task: { id } } } = await olive.post(base, item('Z-1', { description: 'Kept', labels: ['Old'] }))
  t.equal((await olive.patch(`${base}/${id}`, { archived: true })).status, 200)
  const before = (await olive.get(`${base}/${id}`)).body.task
  const again = await olive.post(base, item('Z-1', { title: 'Changed', labels: ['New'], externalState: 'closed' }))
  t.same(again.body, { task: { id, created: false } })
  t.same((await olive.get(`${base}/${id}`)).body.task, before, 'title, description, labels and status as they were')
})

t.test('two identical creates racing from two connections yield one task', async (t) => {
  const { alpha, olive, service } = await world(t)
  const base = `/api/v1/projects/${alpha}/tasks`
  for (let round = 0; round < 8; round++) {
    const answers = await Promise.all([1, 2, 3].map(() => olive.post(base, item(`RACE-${round}`, { labels: [`L${round}`] }))))
    t.same(answers.map((a) => a.status).sort(), [200, 200, 201], `round ${round}: one create, two repeats`)
    t.equal(new Set(answers.map((a) => a.body.task.id)).size, 1, `round ${round}: one task`)
  }
  const [row] = await service.db.owner<{ tasks: number; labels: number }[]>`
    select (select count(*)::int from app.tasks) as tasks, (select count(*)::int from app.task_labels) as labels`
  t.same(row, { tasks: 8, labels: 8 }, 'one task and one catalog label per key')
})

t.test('creating needs edit access and an active project', async (t) => {
  const { alpha, beta, olive, max, eddie } = await world(t)
  refused(t, await max.post(`/api/v1/projects/${alpha}/tasks`, item('P-1')), 403, 'ROLE_FORBIDDEN', 'a member who reads Alpha')
  refused(t, await eddie.post(`/api/v1/projects/${beta}/tasks`, item('P-1')), 404, 'NOT_FOUND', 'a project eddie cannot see')
  t.equal((await eddie.post(`/api/v1/projects/${alpha}/tasks`, item('P-1'))).status, 201, 'an editor with edit access')
  await olive.patch(`/api/v1/projects/${alpha}`, { archived: true })
  refused(t, await olive.post(`/api/v1/projects/${alpha}/tasks`, item('P-2')), 403, 'PROJECT_ARCHIVED')
})

t.test('a repeat needs the same rights as a create', async (t) => {
  const { alpha, olive, max } = await world(t)
  const base = `/api/v1/projects/${alpha}/tasks`
  await olive.post(base, item('Q-1'))
  refused(t, await max.post(base, item('Q-1', { title: 'Changed by a reader' })), 403, 'ROLE_FORBIDDEN', 'a reader repeating')
  await olive.patch(`/api/v1/projects/${alpha}`, { archived: true })
  refused(t, await olive.post(base, item('Q-1', { title: 'Changed in an archived project' })), 403, 'PROJECT_ARCHIVED')
  await olive.patch(`/api/v1/projects/${alpha}`, { archived: false })
  t.equal((await olive.get(`${base}?externalSystem=jira&externalId=Q-1`)).body.tasks[0].title, 'Item Q-1')
})

t.test('a repeat sets externalUrl when sent, and assigns automationSlug only to a task nobody holds', async (t) => {
  const { alpha, olive, dev, seeded } = await world(t)
  await deploy(await dev.mcp(), simpleDocument('ops/triage'))
  const base = `/api/v1/projects/${alpha}/tasks`
  const { body: { task: { id } } } = await olive.post(base, item('AS-1', { externalUrl: 'https://a.test/1' }))
  await olive.post(base, item('AS-1'))
  t.equal((await olive.get(`${base}/${id}`)).body.task.externalUrl, 'https://a.test/1', 'kept when omitted')
  await olive.post(base, item('AS-1', { externalUrl: 'https://a.test/moved' }))
  t.equal((await olive.get(`${base}/${id}`)).body.task.externalUrl, 'https://a.test/moved', 'moved with the source item')
  const eddieId = seeded.users['eddie@acme.test']!.id
  await olive.patch(`${base}/${id}`, { assignee: { type: 'user', id: eddieId } })
  await olive.post(base, item('AS-1', { automationSlug: 'ops/triage' }))
  t.match((await olive.get(`${base}/${id}`)).body.task.assignee, { type: 'user', id: eddieId }, 'the person keeps it')
  await olive.patch(`${base}/${id}`, { assignee: null })
  await olive.post(base, item('AS-1', { automationSlug: 'ops/triage' }))
  t.same((await olive.get(`${base}/${id}`)).body.task.assignee, { type: 'automation', name: 'ops/triage' }, 'an unheld task takes it')
})

t.test('another organization\'s project and task answer 404', async (t) => {
  const { alpha, olive, gina } = await world(t)
  const { body: { task: { id } } } = await olive.post(`/api/v1/projects/${alpha}/tasks`, item('X-1'))
  refused(t, await gina.post(`/api/v1/projects/${alpha}/tasks`, item('X-2')), 404, 'NOT_FOUND')
  refused(t, await gina.get(`/api/v1/projects/${alpha}/tasks/${id}`), 404, 'NOT_FOUND')
  refused(t, await gina.get(`/api/v1/tasks/${id}`), 404, 'NOT_FOUND', 'flat read')
})

t.test('a task read under another project answers 404', async (t) => {
  const { alpha, beta, olive } = await world(t)
  const { body: { task: { id } } } = await olive.post(`/api/v1/projects/${alpha}/tasks`, item('Y-1'))
  refused(t, await olive.get(`/api/v1/projects/${beta}/tasks/${id}`), 404, 'NOT_FOUND')
  refused(t, await olive.get(`/api/v1/projects/${alpha}/tasks/not-a-task`), 404, 'NOT_FOUND', 'a malformed id')
})

t.test('the project route refuses a body projectId', async (t) => {
  const { alpha, olive } = await world(t)
  const body = refused(t, await olive.post(`/api/v1/projects/${alpha}/tasks`, item('B-1', { projectId: alpha })), 400, 'INVALID_BODY')
  t.match(body.data.issues, [{ path: 'projectId' }])
})

t.test('the flat create takes projectId in the body, requires it, and reads back under /api/v1/tasks', async (t) => {
  const { alpha, olive } = await world(t)
  const created = await olive.post('/api/v1/tasks', { projectId: alpha, ...item('F-1') })
  t.equal(created.status, 201)
  t.equal(created.headers.get('location'), `/api/v1/tasks/${created.body.task.id}`)
  const again = await olive.post('/api/v1/tasks', { projectId: alpha, ...item('F-1') })
  t.same(again.body, { task: { id: created.body.task.id, created: false } })
  const read = await olive.get(`/api/v1/tasks/${created.body.task.id}`)
  t.equal(read.body.task.projectId, alpha)
  const missing = refused(t, await olive.post('/api/v1/tasks', item('F-2')), 400, 'INVALID_BODY')
  t.match(missing.data.issues, [{ path: 'projectId' }])
})

t.test('a project\'s tasks list newest first, by status and by natural key, page by page', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/tasks`
  const ids: string[] = []
  for (let i = 1; i <= 5; i++) ids.push((await olive.post(base, item(`N-${i}`, { externalState: i === 3 ? 'closed' : 'open' }))).body.task.id)
  const first = await olive.get(`${base}?limit=2`)
  t.same(first.body.tasks.map((x: { id: string }) => x.id), [ids[4], ids[3]])
  t.equal(first.body.isDone, false)
  const second = await olive.get(`${base}?limit=2&cursor=${encodeURIComponent(first.body.continueCursor)}`)
  t.same(second.body.tasks.map((x: { id: string }) => x.id), [ids[2], ids[1]])
  const reviews = await olive.get(`${base}?status=in_review`)
  t.same(reviews.body.tasks.map((x: { id: string }) => x.id), [ids[2]])
  const byKey = await olive.get(`${base}?externalSystem=jira&externalId=N-4`)
  t.same(byKey.body.tasks.map((x: { id: string }) => x.id), [ids[3]])
  t.equal(byKey.body.isDone, true)
  refused(t, await olive.get(`${base}?status=${encodeURIComponent('in review')}`), 400, 'INVALID_QUERY')
})

t.test('creates racing with the same new labels in opposite orders all succeed', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/tasks`
  await olive.post(base, item('D-1'))
  await olive.post(base, item('D-2'))
  for (let round = 0; round < 10; round++) {
    const names = Array.from({ length: 6 }, (_, i) => `r${round}-label-${i}`)
    const answers = await Promise.all([
      olive.post(base, item('D-1', { labels: names })),
      olive.post(base, item('D-2', { labels: [...names].reverse() })),
      olive.post(base, item(`D-new-${round}`, { labels: [names[3], names[0], names[5]] })),
    ])
    t.same(answers.map((a) => a.status), [200, 200, 201], `round ${round}: no request waited on another crosswise`)
  }
})
