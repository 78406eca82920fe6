// Knowledge entries over real HTTP, indexed by the worker on every write
// (docs/knowledge.md "Knowledge entries").
import t from 'tap'
import { world, type Client } from '../lib/world.ts'
import { eventually } from '../lib/wait.ts'
import { refused } from '../lib/assert.ts'

/** Polls an entry until its indexing settled. */
const indexed = (caller: Client, id: string) => eventually(() => caller.get(`/api/v1/knowledge-entries/${id}`),
  (res) => res.status === 200 && ['indexed', 'failed'].includes(res.body.indexing.status))

const search = (caller: Client, query: string) =>
  caller.post('/api/v1/knowledge/search', { query }).then((res) => res.body.results as { content: string; source: { id: string } }[])

t.test('an entry created, read, changed and deleted', async (t) => {
  const { service, eddie, max } = await world(t, { worker: true })
  const created = await eddie.post('/api/v1/knowledge-entries', {
    title: '  Cafeteria  ', content: 'The cafeteria serves lasagna on Mondays.', tags: [' food ', 'office', 'food'],
  })

  t.test('creating answers 201 with the entry and its Location; tags trimmed and kept once; indexing queued', async (t) => {
    t.equal(created.status, 201)
    t.match(created.body, { title: 'Cafeteria', content: 'The cafeteria serves lasagna on Mondays.', tags: ['food', 'office'],
      indexing: { status: 'indexing', error: null } })
    t.equal(created.headers.get('location'), `/api/v1/knowledge-entries/${created.body.id}`)
    t.equal(created.body.createdAt, created.body.updatedAt)
  })

  t.test('a member reads it; it is indexed and found by search', async (t) => {
    const done = await indexed(max, created.body.id)
    t.equal(done.body.indexing.status, 'indexed')
    t.same({ ...done.body, indexing: undefined }, { ...created.body, indexing: undefined })
    const found = await search(max, 'lasagna')
    t.equal(found[0]?.source.id, created.body.id)
  })

  t.test('a change of content is indexed again: search finds the new text, not the old', async (t) => {
    const [before] = await service.db.owner`select revision from app.index_files where knowledge_entry_id = ${created.body.id}`
    const changed = await eddie.patch(`/api/v1/knowledge-entries/${created.body.id}`, { content: 'The cafeteria serves risotto on Mondays.' })
    t.equal(changed.status, 200)
    t.match(changed.body, { title: 'Cafeteria', content: 'The cafeteria serves risotto on Mondays.', tags: ['food', 'office'],
      indexing: { status: 'indexing' } }, 'the fields not sent are kept')
    t.ok(changed.body.updatedAt >= created.body.updatedAt)
    const [after] = await service.db.owner`select revision from app.index_files where knowledge_entry_id = ${created.body.id}`
    t.equal(after!.revision, before!.revision + 1, 'queued again in the same transaction')
    t.equal((await indexed(max, created.body.id)).body.indexing.status, 'indexed')
    t.same((await search(max, 'lasagna')).filter((r) => r.source.id === created.body.id), [], 'the old text is gone')
    const risotto = await search(max, 'risotto')
    t.equal(risotto[0]?.source.id, created.body.id, 'the new text is found')
    t.match(risotto[0]?.content, /risotto/)
  })

  t.test('a change of tags alone changes no indexed text and queues nothing', async (t) => {
    const [before] = await service.db.owner`select revision from app.index_files where knowledge_entry_id = ${created.body.id}`
    const changed = await eddie.patch(`/api/v1/knowledge-entries/${created.body.id}`, { tags: [] })
    t.equal(changed.status, 200)
    t.same(changed.body.tags, [])
    t.equal(changed.body.indexing.status, 'indexed')
    const [after] = await service.db.owner`select revision from app.index_files where knowledge_entry_id = ${created.body.id}`
    t.equal(after!.revision, before!.revision)
  })

  t.test('a new title queues the entry again (the index row carries it as the name)', async (t) => {
    const [before] = await service.db.owner`select revision from app.index_files where knowledge_entry_id = ${created.body.id}`
    const changed = await eddie.patch(`/api/v1/knowledge-entries/${created.body.id}`, { title: 'Canteen menu' })
    t.equal(changed.body.title, 'Canteen menu')
    t.equal(changed.body.indexing.status, 'indexing')
    const [after] = await service.db.owner`select revision, file_name from app.index_files where knowledge_entry_id = ${created.body.id}`
    t.same(after, { revision: before!.revision + 1, file_name: 'Canteen menu' })
    t.equal((await indexed(max, created.body.id)).body.indexing.status, 'indexed')
  })

  t.test('a deleted entry is gone, with its passages', async (t) => {
    t.equal((await eddie.del(`/api/v1/knowledge-entries/${created.body.id}`)).status, 204)
    refused(t, await max.get(`/api/v1/knowledge-entries/${created.body.id}`), 404, 'KNOWLEDGE_ENTRY_NOT_FOUND', 'read after delete')
    refused(t, await eddie.patch(`/api/v1/knowledge-entries/${created.body.id}`, { title: 'x' }), 404, 'KNOWLEDGE_ENTRY_NOT_FOUND', 'update')
    refused(t, await eddie.del(`/api/v1/knowledge-entries/${created.body.id}`), 404, 'KNOWLEDGE_ENTRY_NOT_FOUND', 'a second delete')
    const [left] = await service.db.owner`
      select (select count(*)::int from app.index_chunks where knowledge_entry_id = ${created.body.id}) as chunks,
             (select count(*)::int from app.index_files where knowledge_entry_id = ${created.body.id}) as files`
    t.same(left, { chunks: 0, files: 0 })
    t.same(await search(max, 'risotto'), [])
  })
})

t.test('the entry list: newest first, by cursor', async (t) => {
  const { service, eddie, max } = await world(t)
  const ids: string[] = []
  for (let n = 0; n < 5; n++) ids.push((await eddie.post('/api/v1/knowledge-entries', { title: `Entry ${n}`, content: `text ${n}` })).body.id)
  await service.db.owner`update app.knowledge_entries set created_at = (select created_at from app.knowledge_entries where id = ${ids[1]!})
                          where id = ${ids[2]!}`
  const seen: string[][] = []
  let cursor: string | undefined
  for (;;) {
    const res = await max.get(`/api/v1/knowledge-entries?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
    t.equal(res.status, 200)
    seen.push(res.body.page.map((e: { id: string }) => e.id))
    if (res.body.isDone) break
    cursor = res.body.continueCursor
  }
  t.same(seen.flat(), [ids[4], ids[3], ...[ids[1]!, ids[2]!].sort().reverse(), ids[0]], 'newest first; equal times by id, descending')
  t.same(seen.map((p) => p.length), [2, 2, 1])
  const clamped = await max.get('/api/v1/knowledge-entries?limit=100000')
  t.equal(clamped.body.page.length, 5, 'a limit above the ceiling is clamped')
})

t.test('roles, organizations and shapes', async (t) => {
  const { olive, eddie, max, gina } = await world(t)
  const entry = (await eddie.post('/api/v1/knowledge-entries', { title: 'Kept', content: 'text' })).body

  t.test('a Member reads but writes nothing', async (t) => {
    t.equal((await max.get(`/api/v1/knowledge-entries/${entry.id}`)).status, 200)
    refused(t, await max.post('/api/v1/knowledge-entries', { title: 'No', content: 'x' }), 403, 'ROLE_FORBIDDEN', 'create')
    refused(t, await max.patch(`/api/v1/knowledge-entries/${entry.id}`, { title: 'No' }), 403, 'ROLE_FORBIDDEN', 'update')
    refused(t, await max.del(`/api/v1/knowledge-entries/${entry.id}`), 403, 'ROLE_FORBIDDEN', 'delete')
    t.equal((await olive.get(`/api/v1/knowledge-entries/${entry.id}`)).body.title, 'Kept')
  })

  t.test('another organization\'s entries are 404 and never listed', async (t) => {
    refused(t, await gina.get(`/api/v1/knowledge-entries/${entry.id}`), 404, 'KNOWLEDGE_ENTRY_NOT_FOUND', 'read')
    refused(t, await gina.patch(`/api/v1/knowledge-entries/${entry.id}`, { title: 'Mine' }), 404, 'KNOWLEDGE_ENTRY_NOT_FOUND', 'update')
    refused(t, await gina.del(`/api/v1/knowledge-entries/${entry.id}`), 404, 'KNOWLEDGE_ENTRY_NOT_FOUND', 'delete')
    t.same((await gina.get('/api/v1/knowledge-entries')).body.page, [])
    t.equal((await olive.get(`/api/v1/knowledge-entries/${entry.id}`)).body.title, 'Kept')
  })

  t.test('titles, contents and tags are held to their limits', async (t) => {
    const post = (body: Record<string, unknown>) => eddie.post('/api/v1/knowledge-entries', { title: 'T', content: 'c', ...body })
    refused(t, await post({ title: '   ' }), 400, 'INVALID_BODY', 'a blank title')
    refused(t, await post({ title: 'x'.repeat(501) }), 400, 'INVALID_BODY', 'a title over 500')
    t.equal((await post({ title: 'x'.repeat(500) })).status, 201, 'a title of 500')
    refused(t, await post({ content: ' \n ' }), 400, 'INVALID_BODY', 'a blank content')
    refused(t, await post({ content: 'é'.repeat(512 * 1024) + 'a' }), 400, 'INVALID_BODY', 'content over 1 MiB of UTF-8')
    t.equal((await post({ content: 'é'.repeat(512 * 1024) })).status, 201, 'content of 1 MiB exactly')
    refused(t, await post({ tags: Array.from({ length: 51 }, (_, n) => `t${n}`) }), 400, 'INVALID_BODY', '51 tags')
    t.equal((await post({ tags: Array.from({ length: 50 }, (_, n) => `t${n}`) })).status, 201, '50 tags')
    refused(t, await post({ tags: ['x'.repeat(101)] }), 400, 'INVALID_BODY', 'a tag over 100')
    refused(t, await post({ tags: [' '] }), 400, 'INVALID_BODY', 'a blank tag')
    refused(t, await eddie.patch(`/api/v1/knowledge-entries/${entry.id}`, { title: null }), 400, 'INVALID_BODY', 'a null title')
    refused(t, await eddie.patch(`/api/v1/knowledge-entries/${entry.id}`, { owner: 'x' }), 400, 'INVALID_BODY', 'an unknown key')
  })
})
