// Notifications the task family writes (a mention in a comment, an assignment to a
// person), exported as SPEC.md says: rendered per locale, with a version that
// changes when the recipient reads them.
import t from 'tap'
import { world } from '../lib/world.ts'
import { syncPath, versionOf, type ExportPage } from '../lib/notifications.ts'

t.test('a mention reaches the export in en, de and fr, and its version changes when it is read', async (t) => {
  const w = await world(t)
  const base = `/api/v1/projects/${w.alpha}/tasks`
  const task = (await w.olive.post(base, { externalSystem: 'jira', externalId: 'M-1', title: 'Fix the login page' })).body.task.id
  const comment = (await w.eddie.post(`${base}/${task}/comments`, { body: 'Could you look, @max?' })).body.comment.id
  const exported = async (locale: string): Promise<ExportPage> =>
    (await w.olive.get(syncPath({ recipientEmail: 'max@acme.test', stream: 'personal', locale }))).body

  const rows = Object.fromEntries(await Promise.all(['en', 'de', 'fr'].map(async (locale) => [locale, (await exported(locale)).page] as const)))
  for (const [locale, page] of Object.entries(rows)) {
    t.equal(page.length, 1, `${locale}: one notification`)
    const row = page[0]!
    t.match(row, { kind: 'comment.mentioned', read: false, path: `/acme/projects/${w.alpha}/tasks/${task}#comment-${comment}` }, locale)
    t.match(row.body, /Could you look, @max\?/, `${locale}: the excerpt`)
    t.match(row.title, /eddie/, `${locale}: who mentioned`)
    t.equal(row.version, versionOf(row), `${locale}: the version a client recomputes`)
  }
  t.match(rows.en![0]!.title, /mentioned you/)
  t.match(rows.de![0]!.title, /erwähnt/)
  t.match(rows.fr![0]!.title, /mentionné/)
  t.equal(new Set(Object.values(rows).map((page) => page[0]!.id)).size, 1, 'one row id in every locale')
  t.equal(new Set(Object.values(rows).map((page) => page[0]!.version)).size, 3, 'a version per locale')

  const read = await w.max.post(`/api/v1/notifications/${rows.en![0]!.id}/read`)
  t.equal(read.status, 200)
  for (const locale of ['en', 'de', 'fr']) {
    const after = (await exported(locale)).page[0]!
    t.equal(after.read, true, `${locale}: read`)
    t.not(after.version, rows[locale]![0]!.version, `${locale}: the version changed with the read state`)
    t.equal(after.version, versionOf(after))
  }
})

t.test('assigning a task to a person notifies them, unless they assigned it to themselves', async (t) => {
  const w = await world(t)
  const base = `/api/v1/projects/${w.alpha}/tasks`
  const task = (await w.olive.post(base, { externalSystem: 'jira', externalId: 'A-1', title: 'Ship it' })).body.task.id
  const eddieId = w.seeded.users['eddie@acme.test']!.id
  await w.olive.patch(`${base}/${task}`, { assignee: { type: 'user', id: eddieId } })
  await w.olive.patch(`${base}/${task}`, { assignee: { type: 'user', id: eddieId } })
  await w.eddie.patch(`${base}/${task}`, { assignee: { type: 'user', id: w.seeded.users['olive@acme.test']!.id } })
  await w.eddie.patch(`${base}/${task}`, { assignee: { type: 'user', id: eddieId } })
  const page = (await w.olive.get(syncPath({ recipientEmail: 'eddie@acme.test', stream: 'personal' }))).body as ExportPage
  t.equal(page.page.length, 1, 'once for olive\'s assignment; a repeat and his own move tell him nothing')
  t.match(page.page[0], { kind: 'task.assigned', title: /Ship it/, path: `/acme/projects/${w.alpha}/tasks/${task}` })
  const olives = (await w.olive.get(syncPath({ recipientEmail: 'olive@acme.test', stream: 'personal' }))).body as ExportPage
  t.equal(olives.page.length, 1, 'olive hears of eddie assigning her')
})

t.test('a person assigned a task in a project they cannot see is not told of it', async (t) => {
  const w = await world(t)
  const task = (await w.olive.post(`/api/v1/projects/${w.beta}/tasks`, { externalSystem: 'jira', externalId: 'H-1', title: 'Hidden' })).body.task.id
  const res = await w.olive.patch(`/api/v1/projects/${w.beta}/tasks/${task}`, { assignee: { type: 'user', id: w.seeded.users['max@acme.test']!.id } })
  t.equal(res.status, 200)
  const page = (await w.olive.get(syncPath({ recipientEmail: 'max@acme.test', stream: 'personal' }))).body as ExportPage
  t.same(page.page, [])
})
