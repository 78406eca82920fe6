// Task comments: posting as the key's user, the newest-page-first list, and @mentions
// that notify the members who see the project.
import t, { type Test } from 'tap'
import { world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'
import { acme, person } from '../lib/fixtures.ts'

async function commentWorld(t: Test) {
  // Dana is disabled; Sam is a member who sees no project.
  const w = await world(t, { seed: { users: [...acme().users!,
    person('dana@acme.test', [{ org: 'acme', role: 'editor', disabled: true }]),
    person('sam@acme.test', [{ org: 'acme', role: 'member' }])] } })
  const task = (await w.olive.post(`/api/v1/projects/${w.alpha}/tasks`, { externalSystem: 'jira', externalId: 'C-1', title: 'Fix login' })).body.task.id as string
  const base = `/api/v1/projects/${w.alpha}/tasks/${task}/comments`
  const idOf = (email: string) => w.seeded.users[email]!.id
  const notifications = async (email: string) => w.service.db.owner<{ kind: string; stream: string; params: Record<string, unknown> }[]>`
    select kind, stream, params from app.notifications where recipient_id = ${idOf(email)} order by seq`
  return { ...w, task, base, idOf, notifications }
}

t.test('a comment is posted as the key\'s user and answers 201 with its id', async (t) => {
  const { base, eddie, olive, idOf } = await commentWorld(t)
  const posted = await eddie.post(base, { body: 'Looks good' })
  t.equal(posted.status, 201)
  t.same(posted.body, { comment: { id: posted.body.comment.id } })
  const [listed] = (await olive.get(base)).body.comments
  t.match(listed, { id: posted.body.comment.id, authorType: 'user', authorId: idOf('eddie@acme.test'), authorName: 'eddie', body: 'Looks good', mentions: [] })
})

t.test('project readers may comment; who cannot see the task gets 404', async (t) => {
  const { base, max, gina, as, alpha, task } = await commentWorld(t)
  t.equal((await max.post(base, { body: 'A reader speaks' })).status, 201, 'max reads Alpha')
  refused(t, await as('sam@acme.test').post(base, { body: 'hello' }), 404, 'NOT_FOUND', 'a member without access')
  refused(t, await gina.post(base, { body: 'hello' }), 404, 'NOT_FOUND', 'another organization')
  refused(t, await max.post(`/api/v1/projects/${alpha}/tasks/${task.replace(/.$/, (last) => (last === '0' ? '1' : '0'))}/comments`, { body: 'x' }), 404, 'NOT_FOUND', 'an unknown task')
})

t.test('a blank or oversized comment is refused; the limit counts UTF-16 code units', async (t) => {
  const { base, olive } = await commentWorld(t)
  for (const body of ['', '   \n ']) {
    const res = refused(t, await olive.post(base, { body }), 400, 'INVALID_BODY', JSON.stringify(body))
    t.match(res.data.issues, [{ path: 'body' }])
  }
  t.equal((await olive.post(base, { body: '\u{1F600}'.repeat(10_000) })).status, 201, '20,000 units')
  refused(t, await olive.post(base, { body: `${'\u{1F600}'.repeat(10_000)}!` }), 400, 'INVALID_BODY', '20,001 units')
})

t.test('comments on an archived project are refused', async (t) => {
  const { base, olive, alpha } = await commentWorld(t)
  await olive.patch(`/api/v1/projects/${alpha}`, { archived: true })
  refused(t, await olive.post(base, { body: 'late' }), 403, 'PROJECT_ARCHIVED')
})

t.test('the list answers the newest page first, chronological inside each page', async (t) => {
  const { base, olive, service } = await commentWorld(t)
  for (let i = 1; i <= 7; i++) {
    await service.db.owner`insert into app.clock (singleton, pinned_at) values (true, ${new Date(Date.UTC(2026, 0, 1, 0, i))})
      on conflict (singleton) do update set pinned_at = excluded.pinned_at`
    await olive.post(base, { body: `c${i}` })
  }
  const bodies = (res: { body: { comments: { body: string }[] } }) => res.body.comments.map((c) => c.body)
  const first = await olive.get(`${base}?limit=3`)
  t.same(bodies(first), ['c5', 'c6', 'c7'])
  t.equal(first.body.isDone, false)
  const second = await olive.get(`${base}?limit=3&cursor=${encodeURIComponent(first.body.continueCursor)}`)
  t.same(bodies(second), ['c2', 'c3', 'c4'])
  const last = await olive.get(`${base}?limit=3&cursor=${encodeURIComponent(second.body.continueCursor)}`)
  t.same(bodies(last), ['c1'])
  t.same([last.body.isDone, last.body.continueCursor], [true, ''])
  t.notOk('cursor' in first.body, 'no deprecated cursor twin on comment lists')
})

t.test('the list takes 200 by default and at most 500', async (t) => {
  const { base, olive, service, task } = await commentWorld(t)
  await service.db.owner`
    insert into app.task_comments (organization_id, project_id, task_id, author_type, author_user_id, body, created_at)
    select t.organization_id, t.project_id, t.id, 'user', t.created_by, 'bulk ' || n, now() - n * interval '1 second'
      from app.tasks t, generate_series(1, 520) n where t.id = ${task}`
  const byDefault = await olive.get(base)
  t.equal(byDefault.body.comments.length, 200)
  const clamped = await olive.get(`${base}?limit=100000`)
  t.equal(clamped.body.comments.length, 500)
  t.equal(clamped.body.isDone, false)
  refused(t, await olive.get(`${base}?limit=0`), 400, 'INVALID_QUERY')
  refused(t, await olive.get(`${base}?cursor=`), 400, 'INVALID_QUERY', 'the empty cursor')
  refused(t, await olive.get(`${base}?cursor=forged.cursor`), 400, 'INVALID_CURSOR')
})

t.test('a cursor belongs to its task\'s list', async (t) => {
  const { base, olive, alpha } = await commentWorld(t)
  await olive.post(base, { body: 'one' })
  await olive.post(base, { body: 'two' })
  const page = await olive.get(`${base}?limit=1`)
  const other = (await olive.post(`/api/v1/projects/${alpha}/tasks`, { externalSystem: 'jira', externalId: 'C-2', title: 'Other' })).body.task.id
  refused(t, await olive.get(`/api/v1/projects/${alpha}/tasks/${other}/comments?cursor=${encodeURIComponent(page.body.continueCursor)}`),
    400, 'INVALID_CURSOR')
})

t.test('the flat routes post and list the same comments', async (t) => {
  const { task, olive, base } = await commentWorld(t)
  t.equal((await olive.post(`/api/v1/tasks/${task}/comments`, { body: 'flat' })).status, 201)
  t.same((await olive.get(`/api/v1/tasks/${task}/comments`)).body.comments.map((c: { body: string }) => c.body), ['flat'])
  t.same((await olive.get(base)).body.comments.map((c: { body: string }) => c.body), ['flat'])
})

t.test('a mention of a member who sees the project notifies them, by email or by a handle', async (t) => {
  const { base, eddie, idOf, notifications } = await commentWorld(t)
  const posted = await eddie.post(base, { body: 'Ping @MAX@acme.test and @olive, thanks.' })
  const [comment] = (await eddie.get(base)).body.comments
  t.same([...comment.mentions].sort(), [idOf('max@acme.test'), idOf('olive@acme.test')].sort())
  const [mention] = await notifications('max@acme.test')
  t.match(mention, { kind: 'comment.mentioned', stream: 'personal',
    params: { commentId: posted.body.comment.id, authorName: 'eddie', taskTitle: 'Fix login', excerpt: /Ping/ } })
  t.equal((await notifications('olive@acme.test')).length, 1)
})

t.test('no notification for a member who cannot see the project, a disabled member, the author, or a stranger', async (t) => {
  const { base, eddie, notifications, idOf } = await commentWorld(t)
  await eddie.post(base, { body: '@sam @dana@acme.test @eddie @gina@globex.test @nobody@acme.test hello' })
  const [comment] = (await eddie.get(base)).body.comments
  t.same(comment.mentions, [idOf('sam@acme.test'), idOf('eddie@acme.test')].sort(),
    'active members of the organization are recognised; disabled and foreign ones are not')
  for (const email of ['sam@acme.test', 'dana@acme.test', 'eddie@acme.test']) t.same(await notifications(email), [], email)
})

t.test('an ambiguous handle and an address inside a word mention nobody', async (t) => {
  const w = await world(t, { seed: { users: [...acme().users!, person('max@other.test', [{ org: 'acme', role: 'member' }])] } })
  const task = (await w.olive.post(`/api/v1/projects/${w.alpha}/tasks`, { externalSystem: 'jira', externalId: 'A-1', title: 'A' })).body.task.id
  const base = `/api/v1/projects/${w.alpha}/tasks/${task}/comments`
  await w.olive.post(base, { body: '@max is two people; mail me at olive@acme.test' })
  t.same((await w.olive.get(base)).body.comments[0].mentions, [])
})
