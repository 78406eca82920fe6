// A client mirroring one recipient's notifications by the spec's procedure
// (test/lib/notification-mirror.ts) converges on what the service holds, over both
// streams and many pages, and a failed page leaves its previous mirror as it was.
import t from 'tap'
import { world } from '../lib/world.ts'
import { pinClock } from '../lib/db.ts'
import { NotificationMirror, STREAMS } from '../lib/notification-mirror.ts'
import { exportSeed, notify, syncPath, type ExportRow } from '../lib/notifications.ts'
import type { Response } from '../lib/service.ts'

const LIMIT = 2

t.test('a mirror over both streams', async (t) => {
  const w = await world(t, { projects: [], seed: exportSeed() })
  const owner = w.service.db.owner
  const org = w.seeded.organizations.acme!.id
  const maxId = w.seeded.users['max@acme.test']!.id
  const start = Date.parse('2025-06-02T10:00:00Z')
  let minute = 0
  // Each notification a minute after the last, so both orders are fixed.
  const add = async (stream: 'personal' | 'organization') => {
    await pinClock(owner, start + minute++ * 60_000)
    return stream === 'personal'
      ? notify(owner, org, { recipient: maxId })
      : notify(owner, org, { recipient: maxId, kind: 'automation.trigger.paused', stream, params: { automation: `ops/job-${minute}` } })
  }
  for (let i = 0; i < 5; i++) await add('personal')
  for (let i = 0; i < 4; i++) await add('organization')

  // What a full export holds now, read page by page, by row id.
  const truth = async (): Promise<Map<string, ExportRow>> => {
    const rows = new Map<string, ExportRow>()
    for (const stream of STREAMS) {
      let cursor: string | undefined
      do {
        const page = (await w.olive.get(syncPath({ recipientEmail: 'max@acme.test', stream, cursor }))).body
        for (const row of page.page) rows.set(row.id, row)
        cursor = page.isDone ? undefined : page.continueCursor
      } while (cursor)
    }
    return rows
  }

  // Every request the mirror sends, so a test can see what it asked for.
  const sent: string[] = []
  const mirror = new NotificationMirror((path) => {
    sent.push(path)
    return w.olive.get(path)
  }, 'max@acme.test', { limit: LIMIT })

  t.test('the first sync mirrors every row of both streams, paging with the small limit', async (t) => {
    const outcome = await mirror.sync()
    t.match(outcome, { ok: true, recipientId: maxId, upserted: 9, retracted: 0 })
    // 5 personal rows in pages of 2 and 4 organization rows: 3 + 2 pages.
    t.equal(outcome.requests, 5)
    t.same(mirror.rows, await truth())
  })

  t.test('the final empty cursor is never sent', async (t) => {
    t.same(sent.filter((path) => new URL(path, 'http://x').searchParams.get('cursor') === ''), [])
  })

  t.test('added, read and deleted notifications converge on the next sync', async (t) => {
    const added = [await add('personal'), await add('organization')]
    const [read] = await owner<{ id: string }[]>`select id from app.notifications where stream = 'personal' order by seq limit 1`
    t.equal((await w.max.post(`/api/v1/notifications/${read!.id}/read`)).status, 200)
    await owner`delete from app.notifications where id in (
      select id from app.notifications where stream = 'organization' order by created_at limit 1)`
    const outcome = await mirror.sync()
    // Two added and one read are upserted; one deleted is retracted.
    t.match(outcome, { ok: true, upserted: 3, retracted: 1 })
    t.same(mirror.rows, await truth())
    for (const n of added) t.ok([...mirror.rows.keys()].some((id) => id.endsWith(n.id)), 'an added row is mirrored')
    t.equal([...mirror.rows.values()].find((r) => r.id.endsWith(read!.id))?.read, true, 'the read row is read in the mirror')
  })

  t.test('a sync with nothing changed upserts and retracts nothing', async (t) => {
    t.match(await mirror.sync(), { ok: true, upserted: 0, retracted: 0 })
  })

  // The mirror as it stood, to compare after a sync that fails.
  const snapshot = () => new Map(mirror.rows)

  t.test('a page refused with 429 keeps the previous mirror, even after earlier pages succeeded', async (t) => {
    const before = snapshot()
    await add('personal')
    await owner`delete from app.notifications where id in (select id from app.notifications where stream = 'personal' order by seq limit 1)`
    // The first page answers; then the caller's budget is spent, so the next page is 429.
    let pages = 0
    const limited = new NotificationMirror(async (path) => {
      const res = await w.olive.get(path)
      if (++pages === 1) await owner`update app.rate_buckets set tokens = -1000 where bucket = ${`user:${w.seeded.users['olive@acme.test']!.id}:general`}`
      return res
    }, 'max@acme.test', { limit: LIMIT })
    for (const [id, row] of before) limited.rows.set(id, row)
    t.match(await limited.sync(), { ok: false, status: 429, code: 'RATE_LIMITED', requests: 2 })
    t.same(limited.rows, before, 'nothing upserted, nothing retracted')
    await owner`update app.rate_buckets set tokens = 200`
  })

  t.test('a page refused with INVALID_CURSOR keeps the previous mirror', async (t) => {
    const before = snapshot()
    // The recipient's email changes between the first page and the next: the cursor
    // names a recipient the email no longer resolves to.
    let pages = 0
    const moved = new NotificationMirror(async (path: string): Promise<Response> => {
      const res = await w.olive.get(path)
      if (++pages === 1) await owner`update app.users set email = 'max.moved@acme.test' where id = ${maxId}`
      return res
    }, 'max@acme.test', { limit: LIMIT })
    for (const [id, row] of before) moved.rows.set(id, row)
    t.match(await moved.sync(), { ok: false, status: 400, code: 'INVALID_CURSOR', requests: 2 })
    t.same(moved.rows, before, 'nothing upserted, nothing retracted')
    await owner`update app.users set email = 'max@acme.test' where id = ${maxId}`
  })

  t.test('after the failures, the next sync converges again', async (t) => {
    t.match(await mirror.sync(), { ok: true, upserted: 1, retracted: 1 })
    t.same(mirror.rows, await truth())
  })
})
