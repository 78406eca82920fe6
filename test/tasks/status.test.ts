// The Task status table of SPEC.md: externalState mirrors the source item, board
// moves by people end the mirror's claim on its park, review parks by a person's hand.
import t, { type Test } from 'tap'
import { world, type Client } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'

async function board(t: Test) {
  const w = await world(t)
  const base = `/api/v1/projects/${w.alpha}/tasks`
  /** Creates or repeats the item (jira unless another system is named) and answers its status. */
  const sync = async (externalId: string, externalState?: 'open' | 'closed', externalSystem = 'jira', as: Client = w.olive) => {
    const res = await as.post(base, { externalSystem, externalId, title: externalId, ...(externalState ? { externalState } : {}) })
    t.ok([200, 201].includes(res.status), `sync ${externalId} ${externalState ?? ''}: ${res.status}`)
    return statusOf(res.body.task.id)
  }
  const statusOf = async (id: string) => (await w.olive.get(`${base}/${id}`)).body.task.status as string
  const idOf = async (externalId: string, externalSystem = 'jira') =>
    (await w.olive.post(base, { externalSystem, externalId, title: externalId })).body.task.id as string
  const move = async (id: string, status: string) => {
    const res = await w.olive.patch(`${base}/${id}`, { status })
    t.equal(res.status, 200, `moved to ${status}`)
    return res.body.task.status as string
  }
  return { ...w, base, sync, statusOf, idOf, move }
}

t.test('row 1: a new task starts in backlog', async (t) => {
  const { sync } = await board(t)
  t.equal(await sync('NEW-1'), 'backlog')
  t.equal(await sync('NEW-2', 'open'), 'backlog', 'also when the source item is open')
})

t.test('row 2: a close of the source item parks the task at in_review, from any status but cancelled', async (t) => {
  const { sync, idOf, move } = await board(t)
  t.equal(await sync('C-1', 'open'), 'backlog')
  t.equal(await sync('C-1', 'closed'), 'in_review', 'backlog to in_review')
  for (const status of ['todo', 'in_progress', 'done']) {
    const externalId = `C-${status}`
    await sync(externalId, 'open')
    await move(await idOf(externalId), status)
    t.equal(await sync(externalId, 'closed'), 'in_review', `${status} to in_review`)
  }
  t.equal(await sync('C-new', 'closed'), 'in_review', 'a task created closed is parked at once')
})

t.test('row 3: a reopen returns a task the mirror parked, or a done task, to backlog', async (t) => {
  const { sync, idOf, move } = await board(t)
  await sync('O-1', 'closed')
  t.equal(await sync('O-1', 'open'), 'backlog', 'the mirror\'s park is lifted')
  await sync('O-2', 'closed')
  await move(await idOf('O-2'), 'done')
  t.equal(await sync('O-2', 'open'), 'backlog', 'a done task returns to backlog')
  await sync('O-3', 'closed')
  await move(await idOf('O-3'), 'in_progress')
  t.equal(await sync('O-3', 'open'), 'in_progress', 'a task the board moved elsewhere stays')
})

t.test('row 4: a park at in_review by a person is kept when the source item reopens', async (t) => {
  const { sync, idOf, move, base, olive } = await board(t)
  await sync('P-1', 'closed')
  await move(await idOf('P-1'), 'in_review')
  t.equal(await sync('P-1', 'open'), 'in_review', 'a person took over the mirror\'s park')
  await sync('P-2', 'open')
  t.equal((await olive.post(`${base}/${await idOf('P-2')}/review`, {})).body.task.status, 'in_review', 'parked by review')
  t.equal(await sync('P-2', 'closed'), 'in_review')
  t.equal(await sync('P-2', 'open'), 'in_review', 'the review park is kept')
})

t.test('row 5: the states of github and glitchtip items never move the board', async (t) => {
  const { sync, idOf, move } = await board(t)
  for (const system of ['github', 'glitchtip', 'GitHub']) {
    t.equal(await sync(`G-${system}`, 'closed', system), 'backlog', `${system}: a close moves nothing`)
    await move(await idOf(`G-${system}`, system), 'done')
    t.equal(await sync(`G-${system}`, 'open', system), 'done', `${system}: a reopen moves nothing`)
  }
})

t.test('row 6: a cancelled task stays cancelled whatever the source item does', async (t) => {
  const { sync, idOf, move } = await board(t)
  await sync('X-1', 'open')
  await move(await idOf('X-1'), 'cancelled')
  t.equal(await sync('X-1', 'closed'), 'cancelled')
  t.equal(await sync('X-1', 'open'), 'cancelled')
})

t.test('a move through the board ends the mirror\'s claim: a sync resending the same state moves nothing', async (t) => {
  const { sync, idOf, move } = await board(t)
  await sync('B-1', 'closed')
  await move(await idOf('B-1'), 'in_progress')
  t.equal(await sync('B-1', 'closed'), 'in_progress', 'the same closed state again')
  t.equal(await sync('B-1'), 'in_progress', 'no state at all')
})

t.test('the externalState read back is the last one sent', async (t) => {
  const { sync, base, olive, idOf } = await board(t)
  await sync('S-1', 'closed')
  await sync('S-1')
  t.equal((await olive.get(`${base}/${await idOf('S-1')}`)).body.task.externalState, 'closed', 'kept when omitted')
  await sync('S-1', 'open')
  t.equal((await olive.get(`${base}/${await idOf('S-1')}`)).body.task.externalState, 'open')
})

t.test('board moves need the project write rules; an unknown status is refused', async (t) => {
  const { base, idOf, max, eddie } = await board(t)
  const id = await idOf('M-1')
  refused(t, await max.patch(`${base}/${id}`, { status: 'done' }), 403, 'ROLE_FORBIDDEN', 'a reader')
  t.equal((await eddie.patch(`${base}/${id}`, { status: 'done' })).status, 200, 'an editor with edit access')
  const body = refused(t, await eddie.patch(`${base}/${id}`, { status: 'finished' }), 400, 'INVALID_BODY')
  t.match(body.data.issues, [{ path: 'status' }])
})

t.test('a task is assigned to a member, to an automation, or to nobody', async (t) => {
  const { base, idOf, olive, seeded } = await board(t)
  const id = await idOf('A-1')
  const eddieId = seeded.users['eddie@acme.test']!.id
  const assigned = await olive.patch(`${base}/${id}`, { assignee: { type: 'user', id: eddieId } })
  t.same(assigned.body.task.assignee, { type: 'user', id: eddieId, name: 'eddie' })
  t.equal((await olive.patch(`${base}/${id}`, { assignee: null })).body.task.assignee, null)
  const outsider = refused(t, await olive.patch(`${base}/${id}`, { assignee: { type: 'user', id: seeded.users['gina@globex.test']!.id } }),
    400, 'INVALID_BODY', 'a member of another organization')
  t.match(outsider.data.issues, [{ path: 'assignee.id' }])
  refused(t, await olive.patch(`${base}/${id}`, { assignee: { type: 'automation', name: 'nope' } }), 404, 'AUTOMATION_NOT_FOUND')
})

t.test('review with an actor needs the act-as capability', async (t) => {
  const { base, idOf, olive, eddie } = await board(t)
  const id = await idOf('R-1')
  refused(t, await eddie.post(`${base}/${id}/review`, { actor: 'agent:reviewer' }), 403, 'ROLE_FORBIDDEN')
  const own = await eddie.post(`${base}/${id}/review`, {})
  t.equal(own.status, 200, 'without an actor an editor may')
  t.match(own.body.task.review, { requestedAt: Number })
  const acted = await olive.post(`${base}/${id}/review`, { actor: 'agent:reviewer' })
  t.equal(acted.body.task.review.actor, 'agent:reviewer')
})

t.test('review by a member holding a live act-as grant may name an actor', async (t) => {
  const w = await world(t, { seed: { grants: [{ org: 'acme', email: 'eddie@acme.test', competence: 'rest.act-as' }] } })
  const id = (await w.olive.post(`/api/v1/projects/${w.alpha}/tasks`, { externalSystem: 'jira', externalId: 'G-1', title: 'G' })).body.task.id
  const res = await w.eddie.post(`/api/v1/projects/${w.alpha}/tasks/${id}/review`, { actor: 'olive@acme.test' })
  t.equal(res.status, 200)
  t.equal(res.body.task.review.actor, 'olive@acme.test')
})

t.test('a task can be archived and restored through the board', async (t) => {
  const { base, idOf, olive } = await board(t)
  const id = await idOf('Z-1')
  t.match((await olive.patch(`${base}/${id}`, { archived: true })).body.task, { archivedAt: Number })
  t.equal((await olive.get(`${base}`)).body.tasks.length, 0, 'archived tasks leave the list')
  t.equal((await olive.get(`${base}?archived=only`)).body.tasks.length, 1)
  t.notOk('archivedAt' in (await olive.patch(`${base}/${id}`, { archived: false })).body.task, 'restored')
})
