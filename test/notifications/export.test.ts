// The notification export (SPEC.md "Notification export row" and "Notification
// export") and marking a notification read.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { world, type World } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'
import { pinClock } from '../lib/db.ts'
import { exportSeed, notify, syncPath, taskParams, versionOf, type ExportPage, type ExportRow } from '../lib/notifications.ts'

const exportWorld = async (t: Parameters<typeof world>[0]) => {
  const w = await world(t, { projects: [], seed: exportSeed() })
  return { ...w, org: w.seeded.organizations.acme!.id, maxId: w.seeded.users['max@acme.test']!.id }
}

const page = async (w: World, query: Record<string, string | number | undefined>): Promise<ExportPage> => {
  const res = await w.olive.get(syncPath(query))
  if (res.status !== 200) throw new Error(`export answered ${res.status}: ${res.text}`)
  return res.body as ExportPage
}

const personal = { recipientEmail: 'max@acme.test', stream: 'personal' }

t.test('who may export', async (t) => {
  const w = await exportWorld(t)
  await notify(w.service.db.owner, w.org, { recipient: w.maxId })

  t.test('a member without the notificationExport capability is refused 403 ROLE_FORBIDDEN', async (t) => {
    refused(t, await w.dev.get(syncPath(personal)), 403, 'ROLE_FORBIDDEN', 'a developer without a grant')
    refused(t, await w.max.get(syncPath(personal)), 403, 'ROLE_FORBIDDEN', 'the recipient themself, without a grant')
  })

  t.test('owners, admins and a member with a live notifications.export grant export', async (t) => {
    for (const [who, client] of [['owner', w.olive], ['admin', w.adam], ['editor with a grant', w.eddie]] as const) {
      const res = await client.get(syncPath(personal))
      t.equal(res.status, 200, who)
      t.equal(res.body.page.length, 1, `${who} sees the recipient's notification`)
    }
  })

  t.test('a revoked grant no longer lets its holder export', async (t) => {
    await w.service.db.owner`update app.competence_grants set revoked_at = now() where competence = 'notifications.export'`
    refused(t, await w.eddie.get(syncPath(personal)), 403, 'ROLE_FORBIDDEN', 'after revocation')
  })
})

t.test('the recipient', async (t) => {
  const w = await exportWorld(t)
  const owner = w.service.db.owner
  for (const email of ['max@acme.test', 'una@acme.test', 'dora@acme.test']) {
    await notify(owner, w.org, { recipient: w.seeded.users[email]!.id })
  }
  const empty = { recipientId: null, page: [], isDone: true, continueCursor: '' }

  t.test('recipientEmail is matched ignoring case', async (t) => {
    const res = await page(w, { recipientEmail: 'MAX@Acme.TEST', stream: 'personal' })
    t.equal(res.recipientId, w.maxId)
    t.equal(res.page.length, 1)
  })

  t.test('an email of no member, of a member of another organization, of a disabled membership or unverified answers recipientId null and an empty final page', async (t) => {
    for (const email of ['nobody@acme.test', 'gina@globex.test', 'dora@acme.test', 'una@acme.test']) {
      for (const stream of ['personal', 'organization']) {
        t.same(await page(w, { recipientEmail: email, stream }), empty, `${email}, ${stream}`)
      }
    }
  })
})

t.test('query validation', async (t) => {
  const w = await exportWorld(t)
  const issuePaths = (body: { data: { issues?: { path: string }[] } }) => (body.data.issues ?? []).map((i) => i.path)

  t.test('stream is required and is personal or organization (INVALID_QUERY at stream)', async (t) => {
    for (const stream of [undefined, 'all', 'Personal']) {
      const body = refused(t, await w.olive.get(syncPath({ recipientEmail: 'max@acme.test', stream })), 400, 'INVALID_QUERY', `stream ${stream}`)
      t.same(issuePaths(body), ['stream'])
    }
  })

  t.test('locale is en, de or fr (INVALID_QUERY at locale)', async (t) => {
    for (const locale of ['es', 'EN', 'de-DE']) {
      const body = refused(t, await w.olive.get(syncPath({ ...personal, locale })), 400, 'INVALID_QUERY', `locale ${locale}`)
      t.same(issuePaths(body), ['locale'])
    }
  })

  t.test('recipientEmail is required, an email address and at most 320 characters (INVALID_QUERY at recipientEmail)', async (t) => {
    const long = `${'a'.repeat(64)}@${Array.from({ length: 5 }, () => 'b'.repeat(60)).join('.')}.test`
    t.ok(long.length > 320)
    for (const recipientEmail of [undefined, 'max', 'max@', long]) {
      const body = refused(t, await w.olive.get(syncPath({ recipientEmail, stream: 'personal' })), 400, 'INVALID_QUERY',
        `recipientEmail ${recipientEmail?.slice(0, 20)}`)
      t.same(issuePaths(body), ['recipientEmail'])
    }
  })

  t.test('an unknown query parameter is INVALID_QUERY', async (t) => {
    refused(t, await w.olive.get(syncPath({ ...personal, since: 1 })), 400, 'INVALID_QUERY')
  })
})

t.test('limit', async (t) => {
  const w = await exportWorld(t)
  await w.service.db.owner`
    insert into app.notifications (organization_id, recipient_id, kind, stream)
    select ${w.org}, ${w.maxId}, 'task.assigned', 'personal' from generate_series(1, 101)`

  t.test('the default is 100 rows', async (t) => {
    const res = await page(w, personal)
    t.equal(res.page.length, 100)
    t.equal(res.isDone, false)
  })

  t.test('whole numbers out of 1 to 100 are clamped', async (t) => {
    for (const [limit, size] of [['0', 1], ['-5', 1], ['1000', 100], ['99999999999999999999999', 100], ['7', 7]] as const) {
      t.equal((await page(w, { ...personal, limit })).page.length, size, `limit ${limit}`)
    }
  })

  t.test('a limit that is not a whole number is 400 INVALID_LIMIT', async (t) => {
    for (const limit of ['1.5', 'abc', '1e2', '10 ']) {
      const body = refused(t, await w.olive.get(syncPath({ ...personal, limit })), 400, 'INVALID_LIMIT', `limit ${limit}`)
      t.same(body.data.issues.map((i: { path: string }) => i.path), ['limit'])
    }
  })
})

t.test('cursors', async (t) => {
  const w = await exportWorld(t)
  const owner = w.service.db.owner
  for (let i = 0; i < 3; i++) {
    await notify(owner, w.org, { recipient: w.maxId })
    await notify(owner, w.org, { recipient: w.maxId, kind: 'automation.trigger.paused', stream: 'organization', params: {} })
  }
  const first = await page(w, { ...personal, limit: 1 })
  const next = (query: Record<string, string | number>) => w.olive.get(syncPath({ ...personal, limit: 1, cursor: first.continueCursor, ...query }))

  t.test('a cursor continues its stream for its recipient', async (t) => {
    t.equal(first.isDone, false)
    const second = await next({})
    t.equal(second.status, 200)
    t.equal(second.body.page.length, 1)
    t.not(second.body.page[0].id, first.page[0]!.id)
  })

  t.test('a cursor of the personal stream is refused on the organization stream (INVALID_CURSOR)', async (t) => {
    refused(t, await next({ stream: 'organization' }), 400, 'INVALID_CURSOR')
  })

  t.test('a cursor sent with another recipient\'s email is refused (INVALID_CURSOR)', async (t) => {
    await notify(owner, w.org, { recipient: w.seeded.users['adam@acme.test']!.id })
    refused(t, await next({ recipientEmail: 'adam@acme.test' }), 400, 'INVALID_CURSOR')
  })

  t.test('a cursor whose email now names no one, or another member, is refused (INVALID_CURSOR)', async (t) => {
    await owner`update app.users set email = 'max.moved@acme.test' where id = ${w.maxId}`
    refused(t, await next({}), 400, 'INVALID_CURSOR', 'the email names no one')
    await owner`update app.users set email = 'max@acme.test' where email = 'adam@acme.test'`
    refused(t, await next({}), 400, 'INVALID_CURSOR', 'the email names another member')
    await owner`update app.users set email = 'adam@acme.test' where email = 'max@acme.test'`
    await owner`update app.users set email = 'max@acme.test' where id = ${w.maxId}`
    t.equal((await next({})).status, 200, 'the same recipient again: the cursor holds')
  })

  t.test('a cursor whose recipient was disabled is refused (INVALID_CURSOR)', async (t) => {
    await owner`update app.memberships set disabled = true where user_id = ${w.maxId}`
    t.teardown(() => owner`update app.memberships set disabled = false where user_id = ${w.maxId}`)
    refused(t, await next({}), 400, 'INVALID_CURSOR')
  })

  t.test('a tampered cursor is refused (INVALID_CURSOR)', async (t) => {
    refused(t, await next({ cursor: `x${first.continueCursor}` }), 400, 'INVALID_CURSOR')
  })

  t.test('the empty cursor is 400 INVALID_QUERY, not the first page', async (t) => {
    refused(t, await w.olive.get(`${syncPath(personal)}&cursor=`), 400, 'INVALID_QUERY')
  })

  t.test('the last page carries isDone true and the empty cursor', async (t) => {
    const all = await page(w, personal)
    t.equal(all.page.length, 3)
    t.equal(all.isDone, true)
    t.equal(all.continueCursor, '')
    t.notOk('cursor' in all, 'no deprecated cursor twin')
  })
})

t.test('rows', async (t) => {
  const w = await exportWorld(t)
  const owner = w.service.db.owner
  const at = Date.parse('2025-06-02T10:00:00Z')
  await pinClock(owner, at)
  // Every character JSON.stringify escapes or passes through as is.
  const tricky = 'Quote " backslash \\ tab \t newline \n bell \u0007 unit \u001f del \u007f line \u2028 emoji 😀 é'
  const params = taskParams({ taskTitle: tricky, assignedByName: 'Olive </script>' })
  const created = await notify(owner, w.org, { recipient: w.maxId, params })
  const row = async (query: Record<string, string> = {}) => (await page(w, { ...personal, ...query })).page[0]!

  t.test('a row is {id, version, title, body, path, createdAt, read, kind}, its id <organizationId>:<stream>:<notificationId>', async (t) => {
    const got = await row()
    t.same(Object.keys(got).sort(), ['body', 'createdAt', 'id', 'kind', 'path', 'read', 'title', 'version'])
    t.equal(got.id, `${w.org}:personal:${created.id}`)
    t.equal(got.createdAt, at)
    t.equal(got.read, false)
    t.equal(got.kind, 'task.assigned')
    const organization = await notify(owner, w.org, { recipient: w.maxId, kind: 'automation.trigger.paused', stream: 'organization', params: {} })
    t.equal((await page(w, { recipientEmail: 'max@acme.test', stream: 'organization' })).page[0]!.id,
      `${w.org}:organization:${organization.id}`)
  })

  t.test('version is the SHA-256 of JSON.stringify of the row as received, without version', async (t) => {
    const got = await row()
    t.match(got.title, tricky, 'the text holds every kind of character')
    t.match(got.version, /^[0-9a-f]{64}$/)
    t.equal(got.version, versionOf(got))
  })

  t.test('version changes when the notification is read, and the read row still hashes as received', async (t) => {
    const before = await row()
    const read = await w.max.post(`/api/v1/notifications/${before.id}/read`)
    t.equal(read.status, 200)
    const after = await row()
    t.equal(after.read, true)
    t.not(after.version, before.version)
    t.equal(after.version, versionOf(after))
  })

  t.test('version changes with the locale', async (t) => {
    const versions = new Set<string>()
    for (const locale of ['en', 'de', 'fr']) {
      const got = await row({ locale })
      t.equal(got.version, versionOf(got), locale)
      versions.add(got.version)
    }
    t.equal(versions.size, 3)
  })
})

t.test('rendering', async (t) => {
  const w = await exportWorld(t)
  const owner = w.service.db.owner
  const task = taskParams()
  const commentId = randomUUID()
  await notify(owner, w.org, { recipient: w.maxId, kind: 'task.assigned', params: { ...task, assignedByName: 'Olive Owner' } })
  await notify(owner, w.org, {
    recipient: w.maxId, kind: 'comment.mentioned',
    params: { ...task, commentId, authorName: 'Eddie Editor', excerpt: '@max could you look at this?' },
  })
  await notify(owner, w.org, {
    recipient: w.maxId, kind: 'automation.trigger.paused', stream: 'organization',
    params: { automation: 'sales/lead-intake', triggerId: randomUUID(), failures: 5, lastFailureCode: 'connector_error', lastFailedRunId: randomUUID() },
  })
  await notify(owner, w.org, { recipient: w.maxId, kind: 'invoice.overdue', params: { invoice: 42 } })
  const rows = async (locale?: string) => {
    const byKind: Record<string, ExportRow> = {}
    for (const stream of ['personal', 'organization']) {
      for (const r of (await page(w, { recipientEmail: 'max@acme.test', stream, locale })).page) byKind[r.kind] = r
    }
    return byKind
  }

  t.test('a task assignment names the task, its project and who assigned it, in en, de and fr', async (t) => {
    const expected = {
      en: ['Assigned to you: ALP-7 “Fix the login page”', 'Olive Owner assigned you the task ALP-7 “Fix the login page” in the project Alpha.'],
      de: ['Ihnen zugewiesen: ALP-7 „Fix the login page“', 'Olive Owner hat Ihnen die Aufgabe ALP-7 „Fix the login page“ im Projekt Alpha zugewiesen.'],
      fr: ['Tâche qui vous est attribuée\u00a0: ALP-7 «\u00a0Fix the login page\u00a0»',
        'Olive Owner vous a attribué la tâche ALP-7 «\u00a0Fix the login page\u00a0» du projet Alpha.'],
    }
    for (const [locale, [title, body]] of Object.entries(expected)) {
      const got = (await rows(locale))['task.assigned']!
      t.equal(got.title, title, `${locale} title`)
      t.equal(got.body, body, `${locale} body`)
    }
  })

  t.test('a mention names its author and quotes the excerpt; a paused schedule names the automation and the failure', async (t) => {
    for (const locale of ['en', 'de', 'fr']) {
      const got = await rows(locale)
      t.match(got['comment.mentioned']!.title, /Eddie Editor/, `${locale} mention title`)
      t.match(got['comment.mentioned']!.body, /^Eddie Editor .*ALP-7.*Alpha.*:\n\n@max could you look at this\?$/s, `${locale} mention body`)
      t.match(got['automation.trigger.paused']!.title, /sales\/lead-intake/, `${locale} pause title`)
      t.match(got['automation.trigger.paused']!.body, /sales\/lead-intake.*5.*connector_error/, `${locale} pause body`)
    }
  })

  t.test('the three locales render different text', async (t) => {
    const [en, de, fr] = [await rows('en'), await rows('de'), await rows('fr')]
    for (const kind of Object.keys(en)) {
      t.equal(new Set([en[kind]!.title, de[kind]!.title, fr[kind]!.title]).size, 3, `${kind} titles`)
      t.equal(new Set([en[kind]!.body, de[kind]!.body, fr[kind]!.body]).size, 3, `${kind} bodies`)
    }
  })

  t.test('without a locale the organization\'s language is used', async (t) => {
    t.same(await rows(), await rows('en'), 'en by default')
    await owner`update app.organizations set language = 'fr' where id = ${w.org}`
    t.same(await rows(), await rows('fr'), 'the organization\'s language once it is fr')
  })

  t.test('paths lead into the organization\'s dashboard', async (t) => {
    const got = await rows()
    t.equal(got['task.assigned']!.path, `/acme/projects/${task.projectId}/tasks/${task.taskId}`)
    t.equal(got['comment.mentioned']!.path, `/acme/projects/${task.projectId}/tasks/${task.taskId}#comment-${commentId}`)
    t.equal(got['automation.trigger.paused']!.path, '/acme/automations/sales__lead-intake')
    t.equal(got['invoice.overdue']!.path, '/acme')
  })

  t.test('a kind the renderer does not know still has a title and a body', async (t) => {
    for (const locale of ['en', 'de', 'fr']) {
      const got = (await rows(locale))['invoice.overdue']!
      t.ok(got.title.length > 0, `${locale} title`)
      t.match(got.body, /invoice\.overdue/, `${locale} body names the kind`)
    }
  })

  t.test('a task without an identifier is named by its title alone', async (t) => {
    const [created] = await owner`update app.notifications set params = params - 'taskIdentifier'
                                   where kind = 'task.assigned' returning id`
    t.ok(created)
    t.equal((await rows('en'))['task.assigned']!.title, 'Assigned to you: “Fix the login page”')
  })
})

t.test('a task notification missing some params still reads as a sentence', async (t) => {
  const w = await exportWorld(t)
  await notify(w.service.db.owner, w.org, { recipient: w.maxId, params: { taskTitle: 'Fix the login page' } })
  const got = (await page(w, { ...personal, locale: 'en' })).page[0]!
  t.equal(got.title, 'Assigned to you: “Fix the login page”')
  t.equal(got.body, 'Someone assigned you the task “Fix the login page”.')
  t.equal(got.path, '/acme', 'without ids, the organization\'s start page')
})

t.test('title and body are cut at 500 and 8,000 UTF-16 code units, never inside a surrogate pair', async (t) => {
  const w = await exportWorld(t)
  // Each 😀 is two code units; an odd offset in front makes a naive cut split one.
  await notify(w.service.db.owner, w.org, {
    recipient: w.maxId, kind: 'comment.mentioned',
    params: taskParams({ taskTitle: `x${'😀'.repeat(600)}`, authorName: 'Eddie', excerpt: `y${'😀'.repeat(5000)}` }),
  })
  for (const locale of ['en', 'de', 'fr']) {
    const got = (await page(w, { ...personal, locale })).page[0]!
    t.ok(got.title.length <= 500 && got.title.length >= 499, `${locale} title: ${got.title.length} units`)
    t.ok(got.body.length <= 8000 && got.body.length >= 7999, `${locale} body: ${got.body.length} units`)
    t.ok(got.title.isWellFormed() && got.body.isWellFormed(), `${locale}: no lone surrogate`)
    t.equal(got.version, versionOf(got), `${locale}: the cut row hashes as received`)
  }
})

t.test('order', async (t) => {
  const w = await exportWorld(t)
  const owner = w.service.db.owner
  const at = Date.parse('2025-06-02T10:00:00Z')

  t.test('personal pages are ordered by descending sequence, whatever the creation times', async (t) => {
    const ids: string[] = []
    for (const offset of [0, -60_000, 60_000, -120_000]) {
      await pinClock(owner, at + offset)
      ids.push((await notify(owner, w.org, { recipient: w.maxId })).id)
    }
    const served: string[] = []
    let cursor: string | undefined
    do {
      const got = await page(w, { ...personal, limit: 3, cursor })
      served.push(...got.page.map((r) => r.id.split(':')[2]!))
      cursor = got.isDone ? undefined : got.continueCursor
    } while (cursor)
    t.same(served, ids.reverse())
  })

  t.test('organization pages are ordered by descending creation time, then descending id', async (t) => {
    const rows: { id: string; createdAt: number }[] = []
    for (const offset of [0, 0, 60_000, -60_000, 0]) {
      await pinClock(owner, at + offset)
      const created = await notify(owner, w.org, { recipient: w.maxId, kind: 'automation.trigger.paused', stream: 'organization', params: {} })
      rows.push({ id: created.id, createdAt: at + offset })
    }
    rows.sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
    const served: string[] = []
    let cursor: string | undefined
    do {
      const got = await page(w, { recipientEmail: 'max@acme.test', stream: 'organization', limit: 2, cursor })
      served.push(...got.page.map((r) => r.id.split(':')[2]!))
      cursor = got.isDone ? undefined : got.continueCursor
    } while (cursor)
    t.same(served, rows.map((r) => r.id))
  })
})

t.test('reading and marking read', async (t) => {
  const w = await exportWorld(t)
  const owner = w.service.db.owner
  const mine = await notify(owner, w.org, { recipient: w.maxId })
  const adams = await notify(owner, w.org, { recipient: w.seeded.users['adam@acme.test']!.id })
  const readAt = async (id: string) => (await owner`select read_at from app.notifications where id = ${id}`)[0]!.read_at

  t.test('exporting never marks a notification read', async (t) => {
    await page(w, personal)
    await page(w, personal)
    t.equal(await readAt(mine.id), null)
    t.equal((await page(w, personal)).page[0]!.read, false)
  })

  t.test('the recipient marks their notification read by its id or its export row id, and again changes nothing', async (t) => {
    const at = Date.parse('2025-06-02T10:00:00Z')
    await pinClock(owner, at)
    const byRowId = await w.max.post(`/api/v1/notifications/${w.org}:personal:${mine.id}/read`)
    t.equal(byRowId.status, 200)
    t.same(byRowId.body, { notification: { id: `${w.org}:personal:${mine.id}`, read: true, readAt: at } })
    await pinClock(owner, at + 60_000)
    const again = await w.max.post(`/api/v1/notifications/${mine.id}/read`)
    t.same(again.body, byRowId.body, 'the first readAt stays')
  })

  t.test('another user\'s notification, or an id naming none, is 404 NOT_FOUND', async (t) => {
    refused(t, await w.max.post(`/api/v1/notifications/${adams.id}/read`), 404, 'NOT_FOUND', 'another member\'s')
    refused(t, await w.olive.post(`/api/v1/notifications/${mine.id}/read`), 404, 'NOT_FOUND', 'the owner, who may export it')
    refused(t, await w.max.post(`/api/v1/notifications/${w.org}:organization:${mine.id}/read`), 404, 'NOT_FOUND', 'the wrong stream')
    refused(t, await w.max.post(`/api/v1/notifications/${randomUUID()}:personal:${mine.id}/read`), 404, 'NOT_FOUND', 'another organization')
    refused(t, await w.max.post('/api/v1/notifications/not-an-id/read'), 404, 'NOT_FOUND', 'not an id')
    t.equal(await readAt(adams.id), null, 'nothing was marked')
  })

  t.test('marking read takes no body', async (t) => {
    refused(t, await w.max.post(`/api/v1/notifications/${mine.id}/read`, { read: true }), 400, 'INVALID_BODY')
  })
})
