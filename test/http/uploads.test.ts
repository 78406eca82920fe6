// Upload preparation and binding: the Upload state table, organization policy,
// expiry and the object store's faults (SPEC.md "Upload", "Uploads and files").
import t from 'tap'
import { putBytes, uploadFile } from '../lib/files.ts'
import { world } from '../lib/world.ts'
import { eventually } from '../lib/wait.ts'
import { pinClock } from '../lib/db.ts'
import { startLocalS3 } from '../../server/core/storage/local-s3.ts'
import { refused } from '../lib/assert.ts'

const count = async (sql: any, table: string) => (await sql.unsafe(`select count(*)::int as n from ${table}`))[0].n as number

t.test('bind before the bytes arrive: 404 BLOB_NOT_FOUND, and the uploadId stays usable', async (t) => {
  const { service, alpha, olive } = await world(t, { store: true })
  const prepared = await olive.post(`/api/v1/projects/${alpha}/uploads`, {})
  t.equal(prepared.status, 200, 'every declaration is optional')
  const bind = { uploadId: prepared.body.uploadId, fileId: prepared.body.s3Ref, fileName: 'late.txt' }
  const early = await olive.post(`/api/v1/projects/${alpha}/files`, bind)
  refused(t, early, 404, 'BLOB_NOT_FOUND', 'no bytes yet')
  t.equal(early.body.data.reason, 'pending')
  t.equal(await count(service.db.owner, 'app.documents'), 0, 'no file was created')

  await putBytes(prepared.body.url, 'arrived')
  const bound = await olive.post(`/api/v1/projects/${alpha}/files`, bind)
  t.equal(bound.status, 201, 'the same uploadId binds once the bytes are there')
  t.equal(bound.body.file.size, 7, 'the size is what the store holds')

  const again = await olive.post(`/api/v1/projects/${alpha}/files`, { ...bind, fileName: 'twice.txt' })
  refused(t, again, 404, 'BLOB_NOT_FOUND', 'an uploadId is single use')
  t.equal(again.body.data.reason, 'bound')
  t.equal(await count(service.db.owner, 'app.documents'), 1)
})

t.test('binding an upload of 13 bytes under a policy of 10 bytes, txt and md', async (t) => {
  const { service, alpha, beta, olive, eddie } = await world(t, {
    store: true,
    seed: { organizations: [
      { slug: 'acme', name: 'Acme', skillSharingPolicy: null, uploadPolicy: { maxBytes: 10, extensions: ['txt', 'md'] } },
      { slug: 'globex', name: 'Globex', skillSharingPolicy: null },
    ] },
  })
  const base = `/api/v1/projects/${alpha}`
  const prepared = await olive.post(`${base}/uploads`, {})
  await putBytes(prepared.body.url, '0123456789ABC')
  const bind = (body: Record<string, unknown>) =>
    olive.post(`${base}/files`, { uploadId: prepared.body.uploadId, fileId: prepared.body.s3Ref, fileName: 'a.txt', ...body })

  t.test('an upload binds only with its uploadId, in its project, by the person who prepared it: else 404 BLOB_NOT_FOUND', async (t) => {
    refused(t, await bind({ uploadId: '00000000-0000-4000-8000-000000000000' }), 404, 'BLOB_NOT_FOUND', 'unknown uploadId')
    refused(t, await olive.post(`/api/v1/projects/${beta}/files`, { uploadId: prepared.body.uploadId, fileId: prepared.body.s3Ref, fileName: 'a.txt' }),
      404, 'BLOB_NOT_FOUND', 'an upload of another project')
    refused(t, await eddie.post(`${base}/files`, { uploadId: prepared.body.uploadId, fileId: prepared.body.s3Ref, fileName: 'a.txt' }),
      404, 'BLOB_NOT_FOUND', 'an upload prepared by someone else')
  })

  t.test('a fileId that is not the upload\'s s3Ref is refused as INVALID_BODY on fileId', async (t) => {
    const other = await olive.post(`${base}/uploads`, {})
    const mismatch = await bind({ fileId: other.body.s3Ref })
    refused(t, mismatch, 400, 'INVALID_BODY', 'fileId of another upload')
    t.equal(mismatch.body.data.issues[0].path, 'fileId')
    refused(t, await bind({ fileId: 'not/a/ref' }), 400, 'INVALID_BODY', 'fileId that is no s3Ref')
  })

  t.test('a blank folderId is refused as INVALID_BODY, an unknown one as 404 FOLDER_NOT_FOUND', async (t) => {
    refused(t, await bind({ folderId: '' }), 400, 'INVALID_BODY', 'blank folderId')
    refused(t, await bind({ folderId: '00000000-0000-4000-8000-000000000000' }), 404, 'FOLDER_NOT_FOUND', 'unknown folder')
  })

  t.test('a file name without a supported extension answers 400 UNSUPPORTED_FILE_TYPE listing the supported types', async (t) => {
    refused(t, await bind({ fileName: 'tool.exe' }), 400, 'UNSUPPORTED_FILE_TYPE', 'an unsupported extension')
    const bare = await bind({ fileName: 'README' })
    refused(t, bare, 400, 'UNSUPPORTED_FILE_TYPE', 'no extension')
    t.equal(bare.body.data.supported.length, 21, 'the supported types are listed')
  })

  t.test('a supported type the organization\'s upload policy does not admit answers 400 UPLOAD_POLICY_REJECTED', async (t) => {
    const policy = await bind({ fileName: 'slides.pdf' })
    refused(t, policy, 400, 'UPLOAD_POLICY_REJECTED', 'a supported type the organization does not admit')
    t.same(policy.body.data.allowed, ['md', 'txt'])
  })

  t.test('bytes over the organization\'s size limit answer 400 FILE_TOO_LARGE, the limit announced at preparation', async (t) => {
    t.equal(prepared.body.maxBytes, 10, 'the stricter organization limit')
    const large = await bind({})
    refused(t, large, 400, 'FILE_TOO_LARGE', '13 bytes over a 10-byte limit')
    t.equal(large.body.data.limitBytes, 10)
  })

  t.test('a path or blank file name, a non-boolean skipRagIndexing or an unknown key is refused as INVALID_BODY', async (t) => {
    refused(t, await bind({ fileName: 'a/b.txt' }), 400, 'INVALID_BODY', 'a path as file name')
    refused(t, await bind({ fileName: '   ' }), 400, 'INVALID_BODY', 'a blank file name')
    refused(t, await bind({ skipRagIndexing: 'no' }), 400, 'INVALID_BODY', 'a non-boolean skipRagIndexing')
    refused(t, await bind({ projectId: alpha }), 400, 'INVALID_BODY', 'an unknown key')
  })

  t.test('a refused binding creates no file and leaves the upload to bind once it passes, its name trimmed', async (t) => {
    t.equal(await count(service.db.owner, 'app.documents'), 0, 'no refusal created a file')
    const [upload] = await service.db.owner`select bound_at from app.uploads where id = ${prepared.body.uploadId}`
    t.equal(upload!.bound_at, null, 'nor consumed the upload')
    await putBytes(prepared.body.url, 'small')
    const bound = await bind({ fileName: ' Notes.MD ' })
    t.equal(bound.status, 201, 'the same upload binds once it passes')
    t.equal(bound.body.file.fileName, 'Notes.MD', 'the name is trimmed')
    t.equal(bound.body.file.mimeType, 'text/markdown', 'the extension matches whatever its case')
  })
})

t.test('preparing under a policy of 1000 bytes and txt', async (t) => {
  const { service, alpha, olive } = await world(t, {
    store: true,
    seed: { organizations: [
      { slug: 'acme', name: 'Acme', skillSharingPolicy: null, uploadPolicy: { maxBytes: 1000, extensions: ['txt'] } },
      { slug: 'globex', name: 'Globex', skillSharingPolicy: null },
    ] },
  })
  const prepare = (body: unknown) => olive.post(`/api/v1/projects/${alpha}/uploads`, body)

  t.test('a declared size or type the limits refuse is refused at preparation, and nothing is prepared', async (t) => {
    const large = await prepare({ fileName: 'a.txt', size: 1001 })
    refused(t, large, 400, 'FILE_TOO_LARGE', 'a declared size over the limit')
    t.equal(large.body.data.limitBytes, 1000)
    refused(t, await prepare({ fileName: 'a.exe' }), 400, 'UNSUPPORTED_FILE_TYPE', 'a declared unsupported type')
    refused(t, await prepare({ fileName: 'a.png' }), 400, 'UPLOAD_POLICY_REJECTED', 'a declared type outside the policy')
    refused(t, await prepare({ contentType: 'not a type' }), 400, 'INVALID_BODY', 'a malformed content type')
    refused(t, await prepare({ size: -1 }), 400, 'INVALID_BODY', 'a negative size')
    refused(t, await prepare({ size: 1.5 }), 400, 'INVALID_BODY', 'a fractional size')
    refused(t, await prepare({ s3Ref: 'x' }), 400, 'INVALID_BODY', 'an unknown key')
    t.equal(await count(service.db.owner, 'app.uploads'), 0, 'no refusal prepared an upload')
  })

  t.test('a declared Content-Type is signed into the url; without one none is', async (t) => {
    const typed = await prepare({ fileName: 'a.txt', contentType: 'text/plain; charset=utf-8', size: 5 })
    t.equal(typed.status, 200)
    // s3rver does not check signed headers; the signature is what makes S3 and MinIO refuse another type.
    t.match(new URL(typed.body.url).searchParams.get('X-Amz-SignedHeaders'), /content-type/, 'the declared type is signed')
    const untyped = await prepare({})
    t.notMatch(new URL(untyped.body.url).searchParams.get('X-Amz-SignedHeaders'), /content-type/, 'nothing declared, nothing bound')
  })

  t.test('preparing in an unknown project answers 404, in an archived one 403 PROJECT_ARCHIVED', async (t) => {
    refused(t, await olive.post('/api/v1/projects/00000000-0000-4000-8000-000000000000/uploads', {}), 404, 'NOT_FOUND', 'an unknown project')
    await service.db.owner`update app.projects set archived_at = now() where id = ${alpha}`
    refused(t, await prepare({}), 403, 'PROJECT_ARCHIVED', 'an archived project')
  })
})

t.test('an upload left unbound, one bound, on a pinned clock', async (t) => {
  const { service, local, alpha, olive } = await world(t, { store: true, worker: true })
  const start = Date.now()
  await pinClock(service.db.owner, start)
  const prepare = () => olive.post(`/api/v1/projects/${alpha}/uploads`, { fileName: 'a.txt' })
  const lapsing = await prepare()
  await putBytes(lapsing.body.url, 'never bound')
  const boundLater = await prepare()
  await putBytes(boundLater.body.url, 'bound')
  const kept = await olive.post(`/api/v1/projects/${alpha}/files`,
    { uploadId: boundLater.body.uploadId, fileId: boundLater.body.s3Ref, fileName: 'kept.txt' })
  t.equal(kept.status, 201)

  t.test('binding an upload 30 minutes after preparation answers 404 BLOB_NOT_FOUND, reason expired', async (t) => {
    await pinClock(service.db.owner, start + 30 * 60_000)
    const expired = await olive.post(`/api/v1/projects/${alpha}/files`,
      { uploadId: lapsing.body.uploadId, fileId: lapsing.body.s3Ref, fileName: 'a.txt' })
    refused(t, expired, 404, 'BLOB_NOT_FOUND', 'binding at the deadline')
    t.equal(expired.body.data.reason, 'expired')
  })

  t.test('a sweep within 24 hours of the deadline leaves the unbound blob and its record', async (t) => {
    // Not yet eligible: the blob stays until 24 hours after the deadline.
    await pinClock(service.db.owner, start + 30 * 60_000 + 23 * 3_600_000)
    t.equal((await prepare()).status, 200)
    await service.db.owner`select graphile_worker.add_job('sweep_expired_uploads', '{}'::json)`
    await eventually(() => service.db.owner`select 1 from graphile_worker.jobs where task_identifier = 'sweep_expired_uploads'`,
      (rows) => rows.length === 0)
    t.ok(await local!.store.head(lapsing.body.s3Ref), 'a sweep before the 24 hours leaves the unbound blob')
    t.equal((await service.db.owner`select 1 from app.uploads where id = ${lapsing.body.uploadId}`).length, 1, 'and its record')
  })

  t.test('a preparation after the 24 hours sweeps the lapsed blob and every upload record, while a bound file keeps its object', async (t) => {
    await pinClock(service.db.owner, start + 30 * 60_000 + 24 * 3_600_000 + 1000)
    t.equal((await prepare()).status, 200, 'a later preparation in the organization')
    await eventually(() => local!.store.head(lapsing.body.s3Ref), (stored) => stored === null)
    t.pass('removes the lapsed blob')
    await eventually(() => service.db.owner`select 1 from app.uploads where id = ${lapsing.body.uploadId}`, (rows) => rows.length === 0)
    t.pass('and its record')
    const file = await olive.get(`/api/v1/projects/${alpha}/files/${kept.body.file.id}/content`)
    t.equal(file.text, 'bound', 'a bound file keeps its object')
    t.equal((await service.db.owner`select 1 from app.uploads where id = ${boundLater.body.uploadId}`).length, 0,
      'the bound upload\'s record is swept too')
  })
})

t.test('a deployment without object storage answers 503 OBJECT_STORE_UNCONFIGURED', async (t) => {
  const { service, alpha, olive } = await world(t)
  refused(t, await olive.post(`/api/v1/projects/${alpha}/uploads`, { fileName: 'a.txt' }), 503, 'OBJECT_STORE_UNCONFIGURED', 'prepare')
  refused(t, await olive.post(`/api/v1/projects/${alpha}/files`, {
    uploadId: '00000000-0000-4000-8000-000000000000',
    fileId: '00000000-0000-4000-8000-000000000000/00000000-0000-4000-8000-000000000000/00000000-0000-4000-8000-000000000000',
    fileName: 'a.txt',
  }), 503, 'OBJECT_STORE_UNCONFIGURED', 'bind')
  const anonymous = await service.request('POST', `/api/v1/projects/${alpha}/uploads`, { body: {} })
  refused(t, anonymous, 401, 'UNAUTHORIZED', 'authentication comes first')
  t.equal((await olive.get(`/api/v1/projects/${alpha}/files`)).status, 200, 'listing needs no store')
  t.equal(await count(service.db.owner, 'app.uploads'), 0)
})

t.test('a stopped store: 503 with nothing lost or half-bound, then the same upload binds', async (t) => {
  const { service, local, alpha, olive } = await world(t, { store: true })
  const existing = await uploadFile(olive, alpha, 'existing.txt', 'kept safe')
  const prepared = await olive.post(`/api/v1/projects/${alpha}/uploads`, { fileName: 'b.txt' })
  await putBytes(prepared.body.url, 'pending bytes')
  const port = Number(new URL(local!.local.settings.endpoint).port)
  await local!.local.close()

  const prepare = await olive.post(`/api/v1/projects/${alpha}/uploads`, { fileName: 'c.txt' })
  refused(t, prepare, 503, 'OBJECT_STORE_UNAVAILABLE', 'prepare')
  t.match(prepare.body.error, /object store cannot be reached/)
  const bind = { uploadId: prepared.body.uploadId, fileId: prepared.body.s3Ref, fileName: 'b.txt' }
  refused(t, await olive.post(`/api/v1/projects/${alpha}/files`, bind), 503, 'OBJECT_STORE_UNAVAILABLE', 'bind')
  refused(t, await olive.get(`/api/v1/projects/${alpha}/files/${existing.body.file.id}/content`), 503, 'OBJECT_STORE_UNAVAILABLE', 'download')
  t.equal(await count(service.db.owner, 'app.uploads'), 2, 'no upload was prepared')
  t.equal(await count(service.db.owner, 'app.documents'), 1, 'no file was bound')
  const [upload] = await service.db.owner`select bound_at from app.uploads where id = ${prepared.body.uploadId}`
  t.equal(upload!.bound_at, null, 'the upload is still unbound')
  const listed = await olive.get(`/api/v1/projects/${alpha}/files`)
  t.same(listed.body.files.map((f: { id: string }) => f.id), [existing.body.file.id], 'the stored file is still listed')

  // The store comes back on the same address with the same directory.
  const restarted = await startLocalS3({ directory: local!.directory, port })
  t.teardown(() => restarted.close())
  const bound = await olive.post(`/api/v1/projects/${alpha}/files`, bind)
  t.equal(bound.status, 201, 'the same uploadId binds')
  t.equal((await olive.get(`/api/v1/projects/${alpha}/files/${existing.body.file.id}/content`)).text, 'kept safe')
})

t.test('a folder tree with files, and a file outside', async (t) => {
  const { service, local, alpha, olive } = await world(t, { store: true, worker: true })
  const base = `/api/v1/projects/${alpha}`
  const top = (await olive.post(`${base}/folders`, { name: 'Top' })).body.folder.id
  const inner = (await olive.post(`${base}/folders`, { name: 'Inner', parentId: top })).body.folder.id
  const empty = (await olive.post(`${base}/folders`, { name: 'Empty' })).body.folder.id
  const a = (await uploadFile(olive, alpha, 'a.txt', 'a', { folderId: top })).body.file
  const b = (await uploadFile(olive, alpha, 'b.txt', 'b', { folderId: inner })).body.file
  const outside = (await uploadFile(olive, alpha, 'c.txt', 'c')).body.file
  const keys = (await service.db.owner`select object_key from app.documents where id in (${a.id}, ${b.id}) order by file_name`)
    .map((r) => r.object_key as string)
  const port = Number(new URL(local!.local.settings.endpoint).port)

  t.test('with the store down, a folder delete with files beneath answers 503 PURGE_INCOMPLETE and removes nothing', async (t) => {
    await local!.local.close()
    const refusedDelete = await olive.del(`${base}/folders/${top}`)
    refused(t, refusedDelete, 503, 'PURGE_INCOMPLETE', 'the store is down')
    t.equal((await olive.get(`${base}/folders/${top}`)).status, 200, 'the folder remains')
    t.equal((await olive.get(`${base}/folders/${inner}`)).status, 200, 'and its subfolder')
    t.same((await olive.get(`${base}/files`)).body.files.map((f: { id: string }) => f.id).sort(), [a.id, b.id, outside.id].sort(),
      'and every file')
    t.equal((await olive.del(`${base}/folders/${empty}`)).status, 204, 'a folder without files needs no store')
  })

  t.test('a folder delete removes every file beneath and their objects, leaving files elsewhere', async (t) => {
    const restarted = await startLocalS3({ directory: local!.directory, port })
    t.teardown(() => restarted.close())
    t.equal((await olive.del(`${base}/folders/${top}`)).status, 204)
    refused(t, await olive.get(`${base}/files/${a.id}`), 404, 'FILE_NOT_FOUND', 'a file in the folder')
    refused(t, await olive.get(`${base}/files/${b.id}`), 404, 'FILE_NOT_FOUND', 'a file in a subfolder')
    refused(t, await olive.get(`${base}/folders/${inner}`), 404, 'FOLDER_NOT_FOUND', 'the subfolder')
    for (const key of keys) {
      await eventually(() => local!.store.head(key), (stored) => stored === null)
    }
    t.pass('their objects are removed')
    t.equal((await olive.get(`${base}/files/${outside.id}/content`)).text, 'c', 'a file elsewhere is untouched')
  })
})

t.test('a preparation queues a sweep only when something is due', async (t) => {
  const { service, alpha, olive } = await world(t, { store: true })
  const start = Date.now()
  await pinClock(service.db.owner, start)
  await olive.post(`/api/v1/projects/${alpha}/uploads`, {})
  const sweeps = async () => (await service.db.owner`
    select count(*)::int as n from graphile_worker.jobs where task_identifier = 'sweep_expired_uploads'`)[0]!.n as number
  await pinClock(service.db.owner, start + 30 * 60_000 + 24 * 3_600_000 - 1000)
  await olive.post(`/api/v1/projects/${alpha}/uploads`, {})
  t.equal(await sweeps(), 0, 'nothing lapsed yet: no sweep')
  await pinClock(service.db.owner, start + 30 * 60_000 + 24 * 3_600_000 + 1000)
  await olive.post(`/api/v1/projects/${alpha}/uploads`, {})
  await olive.post(`/api/v1/projects/${alpha}/uploads`, {})
  t.equal(await sweeps(), 1, 'one sweep for the organization, however many preparations ask')
})

t.test('the hourly sweep clears every organization', async (t) => {
  const { service, local, alpha, olive, gina } = await world(t, { store: true, worker: true })
  const globexProject = await gina.post('/api/v1/projects', { name: 'G' })
  const start = Date.now()
  await pinClock(service.db.owner, start)
  const mine = await olive.post(`/api/v1/projects/${alpha}/uploads`, {})
  const theirs = await gina.post(`/api/v1/projects/${globexProject.body.project.id}/uploads`, {})
  for (const upload of [mine, theirs]) await putBytes(upload.body.url, 'lapsing')
  await pinClock(service.db.owner, start + 30 * 60_000 + 24 * 3_600_000 + 1000)
  await service.db.owner`select graphile_worker.add_job('sweep_expired_uploads', '{}'::json)`
  for (const upload of [mine, theirs]) await eventually(() => local!.store.head(upload.body.s3Ref), (stored) => stored === null)
  t.equal(await count(service.db.owner, 'app.uploads'), 0, 'both organizations\' lapsed uploads are gone')
})

t.test('declared sizes', async (t) => {
  const { alpha, olive } = await world(t, { store: true })

  t.test('by default a declared size over 100 MiB is refused with 400 FILE_TOO_LARGE', async (t) => {
    const over = await olive.post(`/api/v1/projects/${alpha}/uploads`, { fileName: 'big.pdf', size: 104_857_601 })
    refused(t, over, 400, 'FILE_TOO_LARGE', 'one byte over 100 MiB')
    t.equal(over.body.data.limitBytes, 104_857_600)
  })

  t.test('a declared size is signed into the url; without one none is', async (t) => {
    const sized = await olive.post(`/api/v1/projects/${alpha}/uploads`, { fileName: 'a.txt', size: 5 })
    // s3rver does not verify signatures; S3 and MinIO refuse a PUT whose length differs
    // from the signed one.
    t.match(new URL(sized.body.url).searchParams.get('X-Amz-SignedHeaders'), /content-length/, 'the size is signed')
    t.equal(await putBytes(sized.body.url, 'hello'), 200, 'the declared size is accepted')
    const unsized = await olive.post(`/api/v1/projects/${alpha}/uploads`, { fileName: 'a.txt' })
    t.notMatch(new URL(unsized.body.url).searchParams.get('X-Amz-SignedHeaders'), /content-length/, 'no size, none signed')
  })
})

t.test('a project delete with files and unbound uploads', async (t) => {
  const { service, local, alpha, beta, olive, eddie } = await world(t, { store: true, worker: true })
  const start = Date.now()
  await pinClock(service.db.owner, start)
  const kept = (await uploadFile(olive, alpha, 'a.txt', 'a')).body.file
  const [document] = await service.db.owner`select object_key from app.documents where id = ${kept.id}`
  const fileKey = document!.object_key as string

  t.test('a cascading project delete removes the unbound upload blobs of every user and puts its files into retention', async (t) => {
    const pending = await olive.post(`/api/v1/projects/${alpha}/uploads`, {})
    const othersPending = await eddie.post(`/api/v1/projects/${alpha}/uploads`, {})
    for (const upload of [pending, othersPending]) await putBytes(upload.body.url, 'unbound')

    t.equal((await olive.del(`/api/v1/projects/${alpha}`)).status, 204)
    for (const upload of [pending, othersPending]) await eventually(() => local!.store.head(upload.body.s3Ref), (stored) => stored === null)
    t.pass('the unbound blobs of every user are removed')
    t.equal(await count(service.db.owner, 'app.uploads'), 0)
    const [retained] = await service.db.owner`select project_id, trashed_at from app.documents where id = ${kept.id}`
    t.equal(retained!.project_id, null, 'the file left the project')
    t.ok(retained!.trashed_at, 'into retention')
    t.ok(await local!.store.head(fileKey), 'its object is kept while retained')
  })

  t.test('retained files and their objects are purged after retention', async (t) => {
    await pinClock(service.db.owner, start + 31 * 24 * 3_600_000)
    await service.db.owner`select graphile_worker.add_job('purge_retained_documents', '{}'::json)`
    await eventually(() => local!.store.head(fileKey), (stored) => stored === null)
    t.equal(await count(service.db.owner, 'app.documents'), 0, 'after retention the file and its object are gone')
  })

  t.test('a detaching project delete releases its files, with their objects, into the organization', async (t) => {
    const released = (await uploadFile(olive, beta, 'b.txt', 'b')).body.file
    const detached = await olive.del(`/api/v1/projects/${beta}`, { mode: 'detach' })
    t.equal(detached.status, 204, 'a detaching delete with files')
    const [row] = await service.db.owner`select project_id, trashed_at, object_key from app.documents where id = ${released.id}`
    t.same([row!.project_id, row!.trashed_at], [null, null], 'the file is released into the organization')
    t.ok(await local!.store.head(row!.object_key), 'with its object')
  })
})
