// Task fields and their limits: UTF-16 code units, labels against the project's
// catalog, externalUrl, setupFolderName, automationSlug.
import t from 'tap'
import { world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'
import { deploy, simpleDocument } from '../lib/automations.ts'

const item = (externalId: string, extra: Record<string, unknown> = {}) =>
  ({ externalSystem: 'jira', externalId, title: `Item ${externalId}`, ...extra })
// One character outside the Basic Multilingual Plane: two UTF-16 code units.
const astral = '\u{1F600}'

t.test('limits count UTF-16 code units: an astral character counts twice', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/tasks`
  t.equal((await olive.post(base, item('U-1', { title: astral.repeat(100) }))).status, 201, 'a title of 200 units')
  const long = refused(t, await olive.post(base, item('U-2', { title: `${astral.repeat(100)}x` })), 400, 'INVALID_BODY', 'a title of 201 units')
  t.match(long.data.issues, [{ path: 'title', message: /200/ }])
  t.equal((await olive.post(base, item('U-3', { description: astral.repeat(10_000) }))).status, 201, 'a description of 20,000 units')
  refused(t, await olive.post(base, item('U-4', { description: `${astral.repeat(10_000)}x` })), 400, 'INVALID_BODY', 'a description of 20,001 units')
  t.equal((await olive.post(base, item('U-5', { labels: [astral.repeat(25)] }))).status, 201, 'a label of 50 units')
  refused(t, await olive.post(base, item('U-6', { labels: [`${astral.repeat(25)}x`] })), 400, 'INVALID_BODY', 'a label of 51 units')
  const stored = await olive.get(`${base}?externalSystem=jira&externalId=U-1`)
  t.equal(stored.body.tasks[0].title, astral.repeat(100), 'stored whole')
})

t.test('SQL holds the same UTF-16 limits for writes that do not come through HTTP', async (t) => {
  const { service } = await world(t)
  const [row] = await service.db.owner<{ issues: { path: string }[] }[]>`
    select app.task_issues(${service.db.owner.json({ externalSystem: 'jira', externalId: 'S-1', title: astral.repeat(101),
      labels: [astral.repeat(26)] })}) as issues`
  t.same(row!.issues.map((i) => i.path), ['title', 'labels.0'])
  const [fits] = await service.db.owner<{ issues: unknown[] }[]>`
    select app.task_issues(${service.db.owner.json({ externalSystem: 'jira', externalId: 'S-1', title: astral.repeat(100) })}) as issues`
  t.same(fits!.issues, [])
})

t.test('up to 50 labels; more are refused', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/tasks`
  const fifty = Array.from({ length: 50 }, (_, i) => `label-${i}`)
  t.equal((await olive.post(base, item('M-1', { labels: fifty }))).status, 201)
  const body = refused(t, await olive.post(base, item('M-2', { labels: [...fifty, 'one-more'] })), 400, 'INVALID_BODY')
  t.match(body.data.issues, [{ path: 'labels', message: /50/ }])
})

t.test('every problem of a body is reported at once, each with its path', async (t) => {
  const { alpha, olive } = await world(t)
  const body = refused(t, await olive.post(`/api/v1/projects/${alpha}/tasks`, {
    externalSystem: '  ', title: 'x'.repeat(201), labels: ['ok', ' '], externalUrl: 'ftp://host/x', externalState: 'gone', color: 'red',
  }), 400, 'INVALID_BODY')
  const paths = body.data.issues.map((i: { path: string }) => i.path).sort()
  t.same(paths, ['color', 'externalId', 'externalState', 'externalSystem', 'externalUrl', 'labels.1', 'title'])
})

t.test('labels match the project catalog ignoring case, keep the catalog\'s spelling, and read back in sent order', async (t) => {
  const { alpha, beta, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/tasks`
  await olive.post(base, item('C-1', { labels: ['Bug', 'frontend'] }))
  const second = await olive.post(base, item('C-2', { labels: ['  FRONTEND ', 'New one', 'bug', 'BUG'] }))
  t.same((await olive.get(`${base}/${second.body.task.id}`)).body.task.labels, ['frontend', 'New one', 'Bug'],
    'sent order, catalog spelling, each name once')
  const ordered = await olive.post(base, item('C-3', { labels: ['new ONE', 'Bug'] }))
  t.same((await olive.get(`${base}/${ordered.body.task.id}`)).body.task.labels, ['New one', 'Bug'])
  const elsewhere = await olive.post(`/api/v1/projects/${beta}/tasks`, item('C-1', { labels: ['BUG'] }))
  t.same((await olive.get(`/api/v1/tasks/${elsewhere.body.task.id}`)).body.task.labels, ['BUG'], 'each project has its own catalog')
})

t.test('labels are NFC-normalized before they are matched', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/tasks`
  await olive.post(base, item('N-1', { labels: ['Caf\u00e9'] }))
  const again = await olive.post(base, item('N-2', { labels: ['CAFE\u0301'] }))
  t.same((await olive.get(`${base}/${again.body.task.id}`)).body.task.labels, ['Caf\u00e9'])
})

t.test('externalUrl must be an absolute http(s) URL', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/tasks`
  for (const externalUrl of ['ftp://host/x', '/relative/path', 'http://', 'https//missing-colon', 'mailto:a@b.test', 'http://a b/']) {
    const body = refused(t, await olive.post(base, item('E-1', { externalUrl })), 400, 'INVALID_BODY', externalUrl)
    t.match(body.data.issues, [{ path: 'externalUrl' }])
  }
  for (const [i, externalUrl] of ['HTTP://Example.test:8080/a?b=c#d', 'https://host.test?x=1', 'https://host.test#frag', 'https://host.test'].entries()) {
    t.equal((await olive.post(base, item(`E-ok-${i}`, { externalUrl }))).status, 201, externalUrl)
  }
})

t.test('setupFolderName stores a root folder\'s id, matched ignoring case, as the externalUrl', async (t) => {
  const { alpha, olive } = await world(t)
  const folder = await olive.post(`/api/v1/projects/${alpha}/folders`, { name: 'Setup Files' })
  await olive.post(`/api/v1/projects/${alpha}/folders`, { name: 'Nested', parentId: folder.body.folder.id })
  const base = `/api/v1/projects/${alpha}/tasks`
  const created = await olive.post(base, item('F-1', { setupFolderName: 'setup files' }))
  t.equal((await olive.get(`${base}/${created.body.task.id}`)).body.task.externalUrl, folder.body.folder.id)
  refused(t, await olive.post(base, item('F-2', { setupFolderName: 'Nested' })), 400, 'SETUP_FOLDER_MISSING', 'a nested folder is not a root folder')
  refused(t, await olive.post(base, item('F-3', { setupFolderName: 'Nowhere' })), 400, 'SETUP_FOLDER_MISSING')
  const both = refused(t, await olive.post(base, item('F-4', { setupFolderName: 'Setup Files', externalUrl: 'https://x.test/' })),
    400, 'INVALID_BODY', 'together with externalUrl')
  t.match(both.data.issues, [{ path: 'setupFolderName' }])
})

t.test('automationSlug makes that automation the assignee; an unknown one answers 404', async (t) => {
  const { alpha, olive, dev } = await world(t)
  await deploy(await dev.mcp(), simpleDocument('ops/triage'))
  const base = `/api/v1/projects/${alpha}/tasks`
  const created = await olive.post(base, item('S-1', { automationSlug: 'ops/triage' }))
  t.same((await olive.get(`${base}/${created.body.task.id}`)).body.task.assignee, { type: 'automation', name: 'ops/triage' })
  refused(t, await olive.post(base, item('S-2', { automationSlug: 'ops/missing' })), 404, 'AUTOMATION_NOT_FOUND')
})
