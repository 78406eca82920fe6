// Hub documents over real HTTP, with the worker indexing them and a real S3-protocol
// store (docs/knowledge.md "Hub documents").
import t from 'tap'
import { putBytes, uploadFile } from '../lib/files.ts'
import { world, type Client } from '../lib/world.ts'
import { eventually } from '../lib/wait.ts'
import { refused } from '../lib/assert.ts'

const MiB = 1024 * 1024

/** Polls a document until its indexing settled (indexed or failed). */
const settled = (caller: Client, id: string) => eventually(() => caller.get(`/api/v1/documents/${id}`),
  (res) => res.status === 200 && ['indexed', 'failed'].includes(res.body.indexing.status))

/** Prepare, PUT and create: the whole organization upload handoff. */
async function uploadDocument(caller: Client, fileName: string, bytes: string | Buffer, create: Record<string, unknown> = {}) {
  const prepared = await caller.post('/api/v1/documents/uploads', { fileName })
  if (prepared.status !== 200) return { prepared, created: prepared }
  const stored = await putBytes(prepared.body.url, bytes)
  if (stored !== 200) throw new Error(`the store refused the PUT: ${stored}`)
  const created = await caller.post('/api/v1/documents', { uploadId: prepared.body.uploadId, fileId: prepared.body.s3Ref, ...create })
  return { prepared, created }
}

t.test('an inline document: created, read, its text, indexed', async (t) => {
  const { service, olive, max } = await world(t, { worker: true, store: true })
  const text = '# Travel\n\nEconomy class for flights under six hours.'
  const created = await olive.post('/api/v1/documents', {
    name: 'Travel policy', content: text, mimeType: 'text/markdown',
    metadata: { department: 'finance' },
  })

  t.test('creating answers 201 with the document and its Location; indexing starts at once', async (t) => {
    t.equal(created.status, 201)
    t.match(created.body, {
      name: 'Travel policy', mimeType: 'text/markdown', size: Buffer.byteLength(text), metadata: { department: 'finance' }, source: 'inline',
      indexing: { status: 'indexing', error: null },
    })
    t.equal(created.headers.get('location'), `/api/v1/documents/${created.body.id}`)
    const [row] = await service.db.owner`select status from app.index_files where document_id = ${created.body.id}`
    t.ok(row, 'an index row is queued in the same transaction')
  })

  t.test('a member reads it and its text as given; indexing settles indexed', async (t) => {
    const done = await settled(max, created.body.id)
    t.same(done.body.indexing, { status: 'indexed', error: null })
    t.same((await max.get(`/api/v1/documents/${created.body.id}/content`)).body,
      { id: created.body.id, content: text })
    const [chunks] = await service.db.owner`select count(*)::int as n from app.index_chunks where document_id = ${created.body.id}`
    t.ok(chunks!.n > 0, 'its passages are stored')
  })

  t.test('a UTF-8 size counts bytes, and mimeType defaults to text/plain', async (t) => {
    const res = await olive.post('/api/v1/documents', { name: 'Grüße', content: 'é€😀' })
    t.equal(res.status, 201)
    t.equal(res.body.size, 2 + 3 + 4)
    t.equal(res.body.mimeType, 'text/plain')
    t.same(res.body.metadata, {})
  })
})

t.test('the hub document list: newest first, by cursor, never project files', async (t) => {
  const { service, olive, max, alpha } = await world(t, { store: true })
  const ids: string[] = []
  for (let n = 0; n < 5; n++) {
    const res = await olive.post('/api/v1/documents', { name: `Doc ${n}`, content: `body ${n}` })
    t.equal(res.status, 201)
    ids.push(res.body.id)
  }
  // Two documents created in the same instant are ordered by id.
  await service.db.owner`update app.documents set created_at = (select created_at from app.documents where id = ${ids[3]!})
                          where id = ${ids[4]!}`
  const file = await uploadFile(olive, alpha, 'project.txt', 'a project file', { skipRagIndexing: false })
  t.equal(file.status, 201)

  const pages: string[][] = []
  let cursor: string | undefined
  for (;;) {
    const res = await max.get(`/api/v1/documents?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
    t.equal(res.status, 200)
    pages.push(res.body.page.map((d: { id: string }) => d.id))
    if (res.body.isDone) {
      t.equal(res.body.continueCursor, '')
      break
    }
    cursor = res.body.continueCursor
  }
  const tied = [ids[3]!, ids[4]!].sort().reverse()
  t.same(pages.flat(), [...tied, ids[2], ids[1], ids[0]], 'newest first; equal times by id, descending')
  t.same(pages.map((p) => p.length), [2, 2, 1], 'pages of the limit')
  t.notOk(pages.flat().includes(file.body.file.id), 'the project file is never listed')
  refused(t, await max.get(`/api/v1/documents/${file.body.file.id}`), 404, 'DOCUMENT_NOT_FOUND', 'a project file read as a document')
  refused(t, await olive.del(`/api/v1/documents/${file.body.file.id}`), 404, 'DOCUMENT_NOT_FOUND', 'nor deleted as one')
  refused(t, await max.get('/api/v1/documents?cursor='), 400, 'INVALID_QUERY', 'an empty cursor')
})

t.test('inline content is limited to 32 MiB of UTF-8: exactly the limit is accepted, one byte more is 413', async (t) => {
  const { service, eddie } = await world(t)
  const exact = await eddie.post('/api/v1/documents', { name: 'Large', content: 'a'.repeat(32 * MiB) })
  t.equal(exact.status, 201, '32 MiB exactly')
  t.equal(exact.body.size, 32 * MiB)
  const [stored] = await service.db.owner`select octet_length(inline_content)::int as n from app.documents where id = ${exact.body.id}`
  t.equal(stored!.n, 32 * MiB, 'stored whole')

  const over = refused(t, await eddie.post('/api/v1/documents', { name: 'Larger', content: 'a'.repeat(32 * MiB + 1) }),
    413, 'BODY_TOO_LARGE', 'one byte more')
  t.equal(over.data.limitBytes, 32 * MiB)
  // Bytes, not characters: 'é' is two bytes in UTF-8.
  const accents = refused(t, await eddie.post('/api/v1/documents', { name: 'Accents', content: 'é'.repeat(16 * MiB) + 'a' }),
    413, 'BODY_TOO_LARGE', '16 MiB of two-byte characters and one more byte')
  t.equal(accents.data.limitBytes, 32 * MiB)
  const [count] = await service.db.owner`select count(*)::int as n from app.documents where kind = 'document'`
  t.equal(count!.n, 1, 'nothing was stored of the refused ones')
})

t.test('a document from an organization upload', async (t) => {
  const { service, local, olive, max, alpha } = await world(t, { worker: true, store: true })
  const handbook = '# Handbook\n\nOnboarding takes two weeks.'
  const { prepared, created } = await uploadDocument(olive, 'handbook.md', handbook)

  t.test('preparing answers a presigned PUT whose s3Ref names no project', async (t) => {
    t.equal(prepared.status, 200)
    t.same(Object.keys(prepared.body).sort(), ['expiresAt', 'maxBytes', 'method', 's3Ref', 'uploadId', 'url'])
    t.match(prepared.body.s3Ref, /^[0-9a-f-]{36}\/documents\/[0-9a-f-]{36}$/)
    const [row] = await service.db.owner`select project_id from app.uploads where id = ${prepared.body.uploadId}`
    t.equal(row!.project_id, null)
  })

  t.test('creating answers the document typed by its extension, sized by the stored bytes; its text once indexed', async (t) => {
    t.equal(created.status, 201)
    t.match(created.body, { name: 'handbook.md', mimeType: 'text/markdown', size: Buffer.byteLength(handbook), source: 'upload', indexing: { status: 'indexing' } })
    const early = await max.get(`/api/v1/documents/${created.body.id}/content`)
    t.ok(early.body.content === null || early.body.content.includes('Onboarding'), 'null until indexed')
    const done = await settled(max, created.body.id)
    t.equal(done.body.indexing.status, 'indexed')
    const content = await max.get(`/api/v1/documents/${created.body.id}/content`)
    t.match(content.body.content, /Onboarding takes two weeks\./)
  })

  t.test('an uploadId is used once; a project upload is not an organization one, nor the reverse', async (t) => {
    const again = await olive.post('/api/v1/documents', { uploadId: prepared.body.uploadId, fileId: prepared.body.s3Ref })
    t.equal(refused(t, again, 404, 'BLOB_NOT_FOUND').data.reason, 'bound')
    const project = await olive.post(`/api/v1/projects/${alpha}/uploads`, { fileName: 'p.txt' })
    await putBytes(project.body.url, 'project bytes')
    const crossed = await olive.post('/api/v1/documents', {
      uploadId: project.body.uploadId, fileId: project.body.s3Ref.replace(/\/[0-9a-f-]{36}\//, '/documents/'),
    })
    t.equal(refused(t, crossed, 404, 'BLOB_NOT_FOUND', 'a project upload').data.reason, 'unknown')
    refused(t, await olive.post('/api/v1/documents', { uploadId: project.body.uploadId, fileId: project.body.s3Ref }),
      400, 'INVALID_BODY', 'a project s3Ref')
    const org = await olive.post('/api/v1/documents/uploads', { fileName: 'o.txt' })
    await putBytes(org.body.url, 'organization bytes')
    refused(t, await olive.post(`/api/v1/projects/${alpha}/files`, { uploadId: org.body.uploadId, fileId: org.body.s3Ref, fileName: 'o.txt' }),
      400, 'INVALID_BODY', 'an organization s3Ref bound into a project')
  })

  t.test('the bytes must have arrived, and the fileId must be the upload\'s', async (t) => {
    const pending = await olive.post('/api/v1/documents/uploads', { fileName: 'later.txt' })
    const early = await olive.post('/api/v1/documents', { uploadId: pending.body.uploadId, fileId: pending.body.s3Ref })
    t.equal(refused(t, early, 404, 'BLOB_NOT_FOUND', 'bytes not there yet').data.reason, 'pending')
    const other = await olive.post('/api/v1/documents/uploads', { fileName: 'other.txt' })
    await putBytes(pending.body.url, 'now here')
    refused(t, await olive.post('/api/v1/documents', { uploadId: pending.body.uploadId, fileId: other.body.s3Ref }),
      400, 'INVALID_BODY', 'another upload\'s s3Ref')
    const named = await olive.post('/api/v1/documents', { uploadId: pending.body.uploadId, fileId: pending.body.s3Ref, name: 'Renamed.txt' })
    t.equal(named.status, 201)
    t.equal(named.body.name, 'Renamed.txt', 'a name given at creation replaces the upload\'s')
  })

  t.test('file type rules apply as for project files', async (t) => {
    refused(t, await olive.post('/api/v1/documents/uploads', { fileName: 'tool.exe' }), 400, 'UNSUPPORTED_FILE_TYPE')
    refused(t, await olive.post('/api/v1/documents/uploads', { fileName: 'big.txt', size: 104_857_601 }), 400, 'FILE_TOO_LARGE')
    await service.db.owner`update app.organizations set upload_extensions = '{pdf}' where slug = 'acme'`
    refused(t, await olive.post('/api/v1/documents/uploads', { fileName: 'notes.txt' }), 400, 'UPLOAD_POLICY_REJECTED')
    await service.db.owner`update app.organizations set upload_extensions = null where slug = 'acme'`
    const bare = await olive.post('/api/v1/documents/uploads', { fileName: 'notes.txt' })
    await putBytes(bare.body.url, 'x')
    refused(t, await olive.post('/api/v1/documents', { uploadId: bare.body.uploadId, fileId: bare.body.s3Ref, name: 'noext' }),
      400, 'UNSUPPORTED_FILE_TYPE', 'a name without a supported extension at creation')
  })

  t.test('a deleted document is gone, with its passages and its object', async (t) => {
    t.equal((await olive.del(`/api/v1/documents/${created.body.id}`)).status, 204)
    refused(t, await max.get(`/api/v1/documents/${created.body.id}`), 404, 'DOCUMENT_NOT_FOUND', 'read after delete')
    refused(t, await max.get(`/api/v1/documents/${created.body.id}/content`), 404, 'DOCUMENT_NOT_FOUND', 'its content')
    refused(t, await olive.del(`/api/v1/documents/${created.body.id}`), 404, 'DOCUMENT_NOT_FOUND', 'a second delete')
    const [left] = await service.db.owner`
      select (select count(*)::int from app.index_chunks where document_id = ${created.body.id}) as chunks,
             (select count(*)::int from app.index_files where document_id = ${created.body.id}) as files`
    t.same(left, { chunks: 0, files: 0 }, 'its index row and passages went with it')
    await eventually(() => local!.store.head(prepared.body.s3Ref), (stored) => stored === null)
    t.pass('its object is removed from the store')
  })
})

t.test('retrying indexing', async (t) => {
  const { service, olive, eddie, max, alpha } = await world(t, { worker: true, store: true })
  const doc = await olive.post('/api/v1/documents', { name: 'Retry me', content: 'searchable words' })
  await settled(olive, doc.body.id)

  t.test('answers indexing, and the document is indexed again', async (t) => {
    const [before] = await service.db.owner`select revision from app.index_files where document_id = ${doc.body.id}`
    const res = await eddie.post(`/api/v1/documents/${doc.body.id}/retry-indexing`)
    t.equal(res.status, 200)
    t.same(res.body, { status: 'indexing' })
    const [after] = await service.db.owner`select revision from app.index_files where document_id = ${doc.body.id}`
    t.equal(after!.revision, before!.revision + 1, 'a new revision is queued')
    t.equal((await settled(olive, doc.body.id)).body.indexing.status, 'indexed')
  })

  t.test('shares the retry budget of project files: ten retries a minute in all, the eleventh is 429', async (t) => {
    const file = await uploadFile(eddie, alpha, 'budget.txt', 'bytes')
    t.equal(file.status, 201)
    const other = await olive.post('/api/v1/documents', { name: 'Other', content: 'more words' })
    // One retry above; nine more spend the rest of the budget.
    for (let n = 0; n < 9; n++) {
      t.equal((await eddie.post(`/api/v1/documents/${other.body.id}/retry-indexing`)).status, 200, `retry ${n + 2}`)
    }
    refused(t, await eddie.post(`/api/v1/documents/${doc.body.id}/retry-indexing`), 429, 'RATE_LIMITED', 'the eleventh')
    refused(t, await eddie.post(`/api/v1/projects/${alpha}/files/${file.body.file.id}/retry-indexing`), 429, 'RATE_LIMITED',
      'a project file\'s retry draws on the same budget')
    t.equal((await olive.post(`/api/v1/documents/${doc.body.id}/retry-indexing`)).status, 200, 'the budget is per user')
  })

  t.test('a member may not retry', async (t) => {
    refused(t, await max.post(`/api/v1/documents/${doc.body.id}/retry-indexing`), 403, 'ROLE_FORBIDDEN')
  })
})

t.test('roles and organizations', async (t) => {
  const { olive, eddie, max, gina } = await world(t, { store: true })
  const doc = await eddie.post('/api/v1/documents', { name: 'Editor made', content: 'text' })
  t.equal(doc.status, 201, 'an Editor creates')

  t.test('a Member reads but writes nothing', async (t) => {
    t.equal((await max.get(`/api/v1/documents/${doc.body.id}`)).status, 200)
    refused(t, await max.post('/api/v1/documents', { name: 'Nope', content: 'x' }), 403, 'ROLE_FORBIDDEN', 'create')
    refused(t, await max.post('/api/v1/documents/uploads', { fileName: 'a.txt' }), 403, 'ROLE_FORBIDDEN', 'prepare an upload')
    refused(t, await max.del(`/api/v1/documents/${doc.body.id}`), 403, 'ROLE_FORBIDDEN', 'delete')
    t.equal((await olive.get(`/api/v1/documents/${doc.body.id}`)).status, 200, 'still there')
  })

  t.test('another organization\'s documents are 404, in reads, lists and writes', async (t) => {
    refused(t, await gina.get(`/api/v1/documents/${doc.body.id}`), 404, 'DOCUMENT_NOT_FOUND', 'read')
    refused(t, await gina.get(`/api/v1/documents/${doc.body.id}/content`), 404, 'DOCUMENT_NOT_FOUND', 'content')
    refused(t, await gina.post(`/api/v1/documents/${doc.body.id}/retry-indexing`), 404, 'DOCUMENT_NOT_FOUND', 'retry')
    refused(t, await gina.del(`/api/v1/documents/${doc.body.id}`), 404, 'DOCUMENT_NOT_FOUND', 'delete')
    t.same((await gina.get('/api/v1/documents')).body.page, [])
    t.equal((await olive.get(`/api/v1/documents/${doc.body.id}`)).status, 200, 'still there')
  })

  t.test('the body names one kind of document', async (t) => {
    refused(t, await eddie.post('/api/v1/documents', { name: 'Both', content: 'x', uploadId: 'u', fileId: 'f' }), 400, 'INVALID_BODY', 'both')
    refused(t, await eddie.post('/api/v1/documents', { name: 'Neither' }), 400, 'INVALID_BODY', 'neither')
    refused(t, await eddie.post('/api/v1/documents', { content: 'x' }), 400, 'INVALID_BODY', 'inline without a name')
    refused(t, await eddie.post('/api/v1/documents', { name: ' ', content: 'x' }), 400, 'INVALID_BODY', 'a blank name')
    refused(t, await eddie.post('/api/v1/documents', { name: 'Meta', content: 'x', metadata: [] }), 400, 'INVALID_BODY', 'metadata not an object')
    refused(t, await eddie.post('/api/v1/documents', { name: 'Meta', content: 'x', metadata: { big: 'x'.repeat(70_000) } }),
      400, 'INVALID_BODY', 'metadata over 64 KiB')
  })
})
