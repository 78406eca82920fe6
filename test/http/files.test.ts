// Project files over real HTTP and a real S3-protocol store (SPEC.md "Uploads and
// files", "Project file indexing").
import t from 'tap'
import { putBytes, uploadFile } from '../lib/files.ts'
import { world } from '../lib/world.ts'
import { eventually } from '../lib/wait.ts'
import { pinClock } from '../lib/db.ts'
import { refused } from '../lib/assert.ts'

t.test('a file prepared, PUT and bound in Alpha', async (t) => {
  const { service, local, alpha, olive } = await world(t, { store: true, worker: true })
  const base = `/api/v1/projects/${alpha}`
  const prepared = await olive.post(`${base}/uploads`, { fileName: 'notes.txt', contentType: 'text/plain', size: 13 })
  const put = await putBytes(prepared.body.url, 'hello, files!', 'text/plain')
  const bound = await olive.post(`${base}/files`, {
    uploadId: prepared.body.uploadId, fileId: prepared.body.s3Ref, folderId: null, fileName: 'notes.txt',
  })
  const file = bound.body.file

  t.test('preparing an upload answers a PUT url valid 30 minutes, bound to the declared Content-Type, capped at 100 MiB', async (t) => {
    t.equal(prepared.status, 200)
    t.same(Object.keys(prepared.body).sort(), ['expiresAt', 'maxBytes', 'method', 's3Ref', 'uploadId', 'url'])
    t.equal(prepared.body.method, 'PUT')
    t.equal(prepared.body.maxBytes, 104_857_600, '100 MiB without a stricter organization limit')
    const [stored] = await service.db.owner`
      select extract(epoch from expires_at - created_at)::int as lifetime, app.ms(expires_at)::float8 as expires_at
        from app.uploads where id = ${prepared.body.uploadId}`
    t.equal(stored!.lifetime, 1800, 'expires 30 minutes after preparation')
    t.equal(prepared.body.expiresAt, stored!.expires_at)
    const signed = new URL(prepared.body.url)
    t.equal(signed.searchParams.get('X-Amz-Expires'), '1800', 'the url is valid 30 minutes')
    t.match(signed.searchParams.get('X-Amz-SignedHeaders'), /content-type/, 'the declared Content-Type is bound')
    t.not(prepared.body.uploadId, prepared.body.s3Ref)
  })

  t.test('the upload url takes a plain PUT with no Authorization', async (t) => {
    t.equal(put, 200, 'a plain PUT with no Authorization')
  })

  t.test('binding answers 201 with the file and its Location; the file id is neither the uploadId nor the s3Ref', async (t) => {
    t.equal(bound.status, 201)
    t.match(file, { fileName: 'notes.txt', folderId: null, mimeType: 'text/plain', size: 13, indexing: { status: 'skipped' }, projectId: alpha })
    t.not(file.id, prepared.body.uploadId, 'the file id is the document id, not the uploadId')
    t.not(file.id, prepared.body.s3Ref, 'nor the s3Ref')
    t.equal(bound.headers.get('location'), `${base}/files/${file.id}`)
  })

  t.test('a bound file is listed and read as bound, and its read revalidates with its ETag', async (t) => {
    const listed = await olive.get(`${base}/files`)
    t.same(listed.body, { files: [file], isDone: true, continueCursor: '' })
    const read = await olive.get(`${base}/files/${file.id}`)
    t.same(read.body, { file })
    const etag = read.headers.get('etag')!
    t.ok(etag)
    t.equal((await olive.get(`${base}/files/${file.id}`, { 'if-none-match': etag })).status, 304)
  })

  t.test('a download answers the bytes as an attachment of the stored type, with nosniff', async (t) => {
    const content = await olive.get(`${base}/files/${file.id}/content`)
    t.equal(content.status, 200)
    t.equal(content.text, 'hello, files!')
    t.equal(content.headers.get('content-type'), 'text/plain')
    t.match(content.headers.get('content-disposition'), /^attachment; filename="notes\.txt"$/)
    t.equal(content.headers.get('x-content-type-options'), 'nosniff')
  })

  t.test('a deleted file is gone from reads, downloads and the list, and its object from the store', async (t) => {
    t.equal((await olive.del(`${base}/files/${file.id}`)).status, 204)
    refused(t, await olive.get(`${base}/files/${file.id}`), 404, 'FILE_NOT_FOUND', 'a deleted file')
    refused(t, await olive.get(`${base}/files/${file.id}/content`), 404, 'FILE_NOT_FOUND', 'its content')
    refused(t, await olive.del(`${base}/files/${file.id}`), 404, 'FILE_NOT_FOUND', 'a second delete')
    await eventually(() => local!.store.head(prepared.body.s3Ref), (stored) => stored === null)
    t.pass('the object is removed from the store')
    t.same((await olive.get(`${base}/files`)).body.files, [])
  })
})

t.test('a download of Résumé «final».md', async (t) => {
  const { alpha, olive } = await world(t, { store: true })
  const bound = await uploadFile(olive, alpha, 'Résumé «final».md', '# hello\n')
  t.equal(bound.status, 201)
  const path = `/api/v1/projects/${alpha}/files/${bound.body.file.id}/content`
  const first = await olive.get(path)
  const etag = first.headers.get('etag')!
  const lastModified = first.headers.get('last-modified')!

  t.test('a download names a non-ASCII file with an ASCII fallback and the exact UTF-8 name, typed by its extension', async (t) => {
    t.equal(bound.body.file.mimeType, 'text/markdown', 'mimeType from the extension')
    t.equal(first.status, 200)
    t.equal(first.headers.get('content-disposition'),
      `attachment; filename="Resume ?final?.md"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%C2%ABfinal%C2%BB.md`,
      'a non-ASCII name has an ASCII fallback and the exact UTF-8 name')
  })

  t.test('a download revalidates with its ETag or its Last-Modified, the binding time in whole seconds', async (t) => {
    t.match(etag, /^"[^"]+"$/)
    t.equal(new Date(lastModified).getTime(), Math.floor(bound.body.file.createdAt / 1000) * 1000,
      'the binding time, truncated to whole seconds')
    t.equal((await olive.get(path, { 'if-none-match': etag })).status, 304)
    t.equal((await olive.get(path, { 'if-none-match': `W/${etag}` })).status, 304, 'a weak comparison')
    t.equal((await olive.get(path, { 'if-modified-since': lastModified })).status, 304)
    t.equal((await olive.get(path, { 'if-modified-since': new Date(Date.parse(lastModified) - 1000).toUTCString() })).status, 200,
      'modified after the date sent')
  })

  t.test('when both are sent, If-None-Match decides over If-Modified-Since', async (t) => {
    const both = await olive.get(path, { 'if-none-match': '"something-else"', 'if-modified-since': lastModified })
    t.equal(both.status, 200, 'a failing If-None-Match wins over a matching If-Modified-Since')
    t.equal(both.text, '# hello\n')
    t.equal((await olive.get(path, { 'if-none-match': etag, 'if-modified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' })).status, 304,
      'a matching If-None-Match wins over a failing If-Modified-Since')
  })
})

t.test('bytes written over the upload url after binding are never served as the file', async (t) => {
  const { alpha, olive } = await world(t, { store: true })
  const prepared = await olive.post(`/api/v1/projects/${alpha}/uploads`, { fileName: 'a.txt' })
  await putBytes(prepared.body.url, 'the bound bytes')
  const bound = await olive.post(`/api/v1/projects/${alpha}/files`, { uploadId: prepared.body.uploadId, fileId: prepared.body.s3Ref, fileName: 'a.txt' })
  t.equal(bound.status, 201)
  t.equal(await putBytes(prepared.body.url, 'other bytes, written later'), 200, 'the url is still valid')
  refused(t, await olive.get(`/api/v1/projects/${alpha}/files/${bound.body.file.id}/content`), 404, 'FILE_NOT_FOUND', 'replaced bytes')
})

t.test('the file list of Alpha', async (t) => {
  const { service, alpha, beta, olive } = await world(t, { store: true })
  const base = `/api/v1/projects/${alpha}`

  t.test('the file list shows all files of the project newest first, or the unfiled ones, or one folder\'s', async (t) => {
    const folder = (await olive.post(`${base}/folders`, { name: 'Docs' })).body.folder.id
    const inFolder = await uploadFile(olive, alpha, 'in-folder.txt', 'a', { folderId: folder })
    t.equal(inFolder.status, 201)
    t.equal(inFolder.body.file.folderId, folder)
    const unfiled = await uploadFile(olive, alpha, 'unfiled.txt', 'b')
    await uploadFile(olive, beta, 'elsewhere.txt', 'c')

    const names = (res: { body: any }) => res.body.files.map((f: { fileName: string }) => f.fileName)
    t.same(names(await olive.get(`${base}/files`)), ['unfiled.txt', 'in-folder.txt'], 'all files of the project, newest first')
    t.same(names(await olive.get(`${base}/files?folderId=root`)), ['unfiled.txt'], 'root: unfiled only')
    t.same(names(await olive.get(`${base}/files?folderId=${folder}`)), ['in-folder.txt'])
    refused(t, await olive.get(`${base}/files?folderId=00000000-0000-4000-8000-000000000000`), 404, 'FOLDER_NOT_FOUND', 'unknown folder')
    refused(t, await olive.get(`${base}/files?folderId=`), 400, 'INVALID_QUERY', 'blank folderId')
    t.equal(unfiled.body.file.folderId, null)
  })

  t.test('the file list pages by keyset, newest first, at most 100 a page, with the deprecated cursor twin', async (t) => {
    // 120 more files, written directly: a page holds at most 100.
    const [project] = await service.db.owner`select organization_id, created_by from app.projects where id = ${alpha}`
    await service.db.owner`
      insert into app.documents (organization_id, project_id, file_name, mime_type, size_bytes, object_key, created_by, created_at)
      select ${project!.organization_id}, ${alpha}, 'bulk-' || n || '.txt', 'text/plain', 1, 'bulk/' || n, ${project!.created_by},
             now() - n * interval '1 second'
        from generate_series(1, 120) n`
    const first = await olive.get(`${base}/files?limit=1000`)
    t.equal(first.body.files.length, 100, 'limit is clamped at 100')
    t.equal(first.body.isDone, false)
    t.ok(first.body.continueCursor)
    t.equal(first.body.cursor, first.body.continueCursor, 'the deprecated twin while pages remain')
    const second = await olive.get(`${base}/files?limit=1000&cursor=${encodeURIComponent(first.body.continueCursor)}`)
    t.equal(second.body.files.length, 22)
    t.equal(second.body.isDone, true)
    t.equal(second.body.continueCursor, '')
    t.notOk('cursor' in second.body, 'no twin on the last page')
    const seen = new Set([...first.body.files, ...second.body.files].map((f: { id: string }) => f.id))
    t.equal(seen.size, 122, 'every file once')
    refused(t, await olive.get(`${base}/files?cursor=`), 400, 'INVALID_QUERY', 'the empty cursor re-sent')
    refused(t, await olive.get(`${base}/files?folderId=root&cursor=${encodeURIComponent(first.body.continueCursor)}`), 400,
      'INVALID_CURSOR', 'a cursor of another filter')
    refused(t, await olive.get(`/api/v1/projects/${beta}/files?cursor=${encodeURIComponent(first.body.continueCursor)}`), 400,
      'INVALID_CURSOR', 'a cursor of another project')
  })
})

t.test('FILE_NOT_FOUND alike for missing, malformed, trashed and other-project files', async (t) => {
  const { service, alpha, beta, olive, gina } = await world(t, { store: true })
  const mine = (await uploadFile(olive, alpha, 'a.txt', 'a')).body.file.id
  const other = (await uploadFile(olive, beta, 'b.txt', 'b')).body.file.id
  const trashed = (await uploadFile(olive, alpha, 'c.txt', 'c')).body.file.id
  await service.db.owner`update app.documents set trashed_at = now() where id = ${trashed}`
  const cases = {
    missing: '00000000-0000-4000-8000-000000000000', malformed: 'not-an-id', trashed, 'in another project': other,
  }
  for (const [label, id] of Object.entries(cases)) {
    for (const suffix of ['', '/content']) {
      const res = await olive.get(`/api/v1/projects/${alpha}/files/${id}${suffix}`)
      refused(t, res, 404, 'FILE_NOT_FOUND', `${label}${suffix}`)
      t.equal(res.body.error, 'File not found in this project.', 'the same message, whatever the reason')
    }
    refused(t, await olive.del(`/api/v1/projects/${alpha}/files/${id}`), 404, 'FILE_NOT_FOUND', `${label}: delete`)
    refused(t, await olive.post(`/api/v1/projects/${alpha}/files/${id}/retry-indexing`), 404, 'FILE_NOT_FOUND', `${label}: retry`)
  }
  t.equal((await olive.get(`/api/v1/projects/${alpha}/files/${mine}`)).status, 200)
  refused(t, await gina.get(`/api/v1/projects/${alpha}/files/${mine}`), 404, 'NOT_FOUND', 'another organization sees no project')
})

t.test('a file of Alpha', async (t) => {
  const { alpha, olive, eddie, max } = await world(t, { store: true })
  const file = (await uploadFile(olive, alpha, 'a.txt', 'a')).body.file
  const base = `/api/v1/projects/${alpha}`

  t.test('a reader lists and downloads files', async (t) => {
    t.equal((await max.get(`${base}/files`)).status, 200)
    t.equal((await max.get(`${base}/files/${file.id}/content`)).text, 'a')
  })

  t.test('only an editor with edit access uploads, retries indexing and deletes files', async (t) => {
    refused(t, await max.post(`${base}/uploads`, { fileName: 'x.txt' }), 403, 'ROLE_FORBIDDEN', 'a member prepares')
    refused(t, await max.post(`${base}/files/${file.id}/retry-indexing`), 403, 'ROLE_FORBIDDEN', 'a member retries indexing')
    refused(t, await max.del(`${base}/files/${file.id}`), 403, 'ROLE_FORBIDDEN', 'a member deletes')
    t.equal((await uploadFile(eddie, alpha, 'by-eddie.txt', 'e')).status, 201, 'an editor with edit access uploads')
    t.equal((await eddie.del(`${base}/files/${file.id}`)).status, 204, 'and deletes')
  })
})

t.test('project file indexing', async (t) => {
  const { service, alpha, olive } = await world(t, { store: true, worker: true })
  const base = `/api/v1/projects/${alpha}`
  const read = (id: string) => olive.get(`${base}/files/${id}`).then((r) => r.body.file)
  // Waits in SQL, so the polling spends no request budget; then reads over HTTP.
  const settled = async (id: string) => {
    await eventually(() => service.db.owner`select indexing_status from app.documents where id = ${id}`,
      (rows) => rows[0]?.indexing_status !== 'indexing')
    return read(id)
  }
  const indexRow = async (id: string) =>
    (await service.db.owner`select status, reason, content, chunk_count from app.index_files where document_id = ${id}`)[0]

  const skipped = (await uploadFile(olive, alpha, 'skipped.txt', 'plain words about lighthouses')).body.file

  t.test('a bound file is not indexed by default, and no job is queued', async (t) => {
    t.same(skipped.indexing, { status: 'skipped' })
    const [job] = await service.db.owner`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'index_file'`
    t.equal(job!.n, 0, 'no indexing job for a skipped file')
    t.equal(await indexRow(skipped.id), undefined, 'nothing in the index store')
  })

  t.test('skipRagIndexing false at binding sends the file through the indexing pipeline', async (t) => {
    const opted = await uploadFile(olive, alpha, 'opted.md', '# Harbour\nThe harbour master keeps the tide tables.', { skipRagIndexing: false })
    t.same(opted.body.file.indexing, { status: 'indexing' }, 'skipRagIndexing:false opts in')
    t.same((await settled(opted.body.file.id)).indexing, { status: 'indexed' })
    const row = await indexRow(opted.body.file.id)
    t.match(row, { status: 'completed', reason: null }, 'the index row completed')
    t.match(row!.content, /harbour master keeps the tide tables/, 'the text was extracted')
    const [chunk] = await service.db.owner`select heading, content from app.index_chunks where document_id = ${opted.body.file.id}`
    t.equal(chunk!.heading, 'Harbour', 'its chunk keeps the heading')
  })

  t.test('retry-indexing lifts the opt-out and indexes the file', async (t) => {
    const retried = await olive.post(`${base}/files/${skipped.id}/retry-indexing`)
    t.equal(retried.status, 200)
    t.same(retried.body, { status: 'indexing' })
    t.same((await settled(skipped.id)).indexing, { status: 'indexed' }, 'the file read moves to indexed')
    const [row] = await service.db.owner`select skip_rag_indexing from app.documents where id = ${skipped.id}`
    t.equal(row!.skip_rag_indexing, false)
    t.match(await indexRow(skipped.id), { status: 'completed', chunk_count: 1 })
  })

  t.test('a file a library cannot read fails with a reason', async (t) => {
    const binary = (await uploadFile(olive, alpha, 'bad.txt', Buffer.from([0xff, 0xfe, 0x00]), { skipRagIndexing: false })).body.file
    t.same((await settled(binary.id)).indexing, { status: 'failed' }, 'bytes that are not UTF-8 text fail extraction')
    const pdf = (await uploadFile(olive, alpha, 'paper.pdf', '%PDF-1.7 truncated', { skipRagIndexing: false })).body.file
    t.same((await settled(pdf.id)).indexing, { status: 'failed' }, 'a broken pdf fails')
    const row = await indexRow(pdf.id)
    t.equal(row!.status, 'failed')
    t.ok(row!.reason && row!.reason.length > 0, `with a reason: ${row!.reason}`)
    const [document] = await service.db.owner`select indexing_error from app.documents where id = ${pdf.id}`
    t.equal(document!.indexing_error, row!.reason, 'the document keeps the reason')
  })

  t.test('deleting a file removes its chunks', async (t) => {
    const doomed = (await uploadFile(olive, alpha, 'doomed.txt', 'short lived words', { skipRagIndexing: false })).body.file
    await settled(doomed.id)
    const before = await service.db.owner`select count(*)::int as n from app.index_chunks where document_id = ${doomed.id}`
    t.equal(before[0]!.n, 1, 'indexed into one chunk')
    t.equal((await olive.del(`${base}/files/${doomed.id}`)).status, 204)
    const after = await service.db.owner`select (select count(*)::int from app.index_chunks where document_id = ${doomed.id}) as chunks,
                                                (select count(*)::int from app.index_files where document_id = ${doomed.id}) as files`
    t.same(after[0], { chunks: 0, files: 0 }, 'its chunks and index row are gone')
  })

  t.test('retries racing the worker never deadlock', async (t) => {
    const raced = (await uploadFile(olive, alpha, 'raced.txt', 'racing words', { skipRagIndexing: false })).body.file
    // While the worker claims and settles revisions, retries change the document and
    // queue the next: both lock the document before its index row.
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) {
      statuses.push((await olive.post(`${base}/files/${raced.id}/retry-indexing`)).status)
      await new Promise((r) => setTimeout(r, 15))
    }
    t.same(statuses, [200, 200, 200, 200], 'every retry answered 200')
    t.same((await settled(raced.id)).indexing, { status: 'indexed' })
  })

  t.test('a retry while a revision is queued indexes once, the newest', async (t) => {
    const twice = (await uploadFile(olive, alpha, 'twice.txt', 'again and again')).body.file
    t.equal((await olive.post(`${base}/files/${twice.id}/retry-indexing`)).status, 200)
    t.equal((await olive.post(`${base}/files/${twice.id}/retry-indexing`)).status, 200)
    t.same((await settled(twice.id)).indexing, { status: 'indexed' })
    const [row] = await service.db.owner`select revision, status from app.index_files where document_id = ${twice.id}`
    t.same(row, { revision: 2, status: 'completed' }, 'the second retry made revision 2, and it completed')
  })
})

t.test('retry-indexing draws on 10 per user per minute', async (t) => {
  const { service, alpha, olive, eddie } = await world(t, { store: true })
  const file = (await uploadFile(olive, alpha, 'a.txt', 'a')).body.file
  const path = `/api/v1/projects/${alpha}/files/${file.id}/retry-indexing`
  const start = Date.now()
  await pinClock(service.db.owner, start)
  for (let i = 0; i < 10; i++) t.equal((await olive.post(path)).status, 200, `retry ${i + 1}`)
  const limited = await olive.post(path)
  refused(t, limited, 429, 'RATE_LIMITED', 'the eleventh retry in a minute')
  t.equal(limited.headers.get('retry-after'), '6', 'one retry refills every 6 seconds')
  t.equal((await eddie.post(path)).status, 200, 'another user has a budget of their own')
  await pinClock(service.db.owner, start + 6_000)
  t.equal((await olive.post(path)).status, 200)
})

t.test('the project file flow bucket, on a still clock', async (t) => {
  const { service, alpha, olive } = await world(t, { store: true })
  // A still clock: the bucket refills 4 tokens a second, which would blur the counts.
  await pinClock(service.db.owner, Date.now())

  t.test('preparing and binding each take a token of the files bucket; listing files does not', async (t) => {
    await uploadFile(olive, alpha, 'a.txt', 'a')
    const buckets = await service.db.owner`select bucket, tokens from app.rate_buckets where bucket like '%:files'`
    t.equal(buckets.length, 1, 'one files bucket for the user')
    t.equal(Math.round(buckets[0]!.tokens), 298, 'a preparation and a binding each took a token of the 300 burst')
    await olive.get(`/api/v1/projects/${alpha}/files`)
    const [after] = await service.db.owner`select tokens from app.rate_buckets where bucket like '%:files'`
    t.equal(Math.round(after!.tokens), 298, 'listing files does not draw on it')
  })

  t.test('an empty files bucket refuses preparing and binding with 429, while other requests go on', async (t) => {
    // The general budget is the narrower under the documented figures; an empty files
    // bucket still refuses the file flow alone.
    await service.db.owner`update app.rate_buckets set tokens = 0, refreshed_at = app.now() where bucket like '%:files'`
    const limited = await olive.post(`/api/v1/projects/${alpha}/uploads`, {})
    refused(t, limited, 429, 'RATE_LIMITED', 'preparing with the files bucket empty')
    t.equal(limited.headers.get('retry-after'), '1', 'it refills 4 tokens a second')
    refused(t, await olive.post(`/api/v1/projects/${alpha}/files`, {
      uploadId: '00000000-0000-4000-8000-000000000000',
      fileId: '00000000-0000-4000-8000-000000000000/00000000-0000-4000-8000-000000000000/00000000-0000-4000-8000-000000000000',
      fileName: 'a.txt',
    }), 429, 'RATE_LIMITED', 'binding too')
    t.equal((await olive.get(`/api/v1/projects/${alpha}/files`)).status, 200, 'other requests go on')
  })
})

t.test('a download without object storage answers 503 OBJECT_STORE_UNCONFIGURED', async (t) => {
  const { service, alpha, olive } = await world(t)
  const [project] = await service.db.owner`select organization_id, created_by from app.projects where id = ${alpha}`
  const [document] = await service.db.owner`
    insert into app.documents (organization_id, project_id, file_name, mime_type, size_bytes, object_key, created_by)
    values (${project!.organization_id}, ${alpha}, 'a.txt', 'text/plain', 1, 'somewhere', ${project!.created_by}) returning id`
  refused(t, await olive.get(`/api/v1/projects/${alpha}/files/${document!.id}/content`), 503, 'OBJECT_STORE_UNCONFIGURED', 'download')
  t.equal((await olive.get(`/api/v1/projects/${alpha}/files/${document!.id}`)).status, 200, 'the record itself reads')
})
