// Project folders (SPEC.md "Folder, file, upload" and the Folders endpoints).
import t, { type Test } from 'tap'
import { project, world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'

// Eddie, an editor, only reads Alpha: his folder writes there are refused.
const folderWorld = (t: Test) => world(t, { projects: [
  project('Alpha', { access: [{ email: 'max@acme.test', level: 'read' }, { email: 'eddie@acme.test', level: 'read' }] }),
  project('Beta'),
] })

t.test('folders of Alpha', async (t) => {
  const { alpha, olive } = await folderWorld(t)
  const base = `/api/v1/projects/${alpha}/folders`
  const created = await olive.post(base, { name: '  Re\u0301sume\u0301s ' })
  const parent = created.body.folder.id

  t.test('creating a folder answers 201 with Location, its name trimmed and NFC-normalized, at the root', async (t) => {
    t.equal(created.status, 201)
    t.equal(created.body.created, true)
    t.equal(created.body.folder.name, 'R\u00e9sum\u00e9s', 'trimmed and NFC-normalized')
    t.equal(created.body.folder.parentId, null)
    t.equal(created.headers.get('location'), `${base}/${created.body.folder.id}`)
  })

  t.test('creating a folder of an existing name, case-insensitively, under the same parent answers 200 with the stored folder', async (t) => {
    const again = await olive.post(base, { name: 'RÉSUMÉS' })
    t.equal(again.status, 200, 'the same name, case-insensitively, under the same parent')
    t.equal(again.body.created, false)
    t.same(again.body.folder, created.body.folder, 'answers with the stored folder')
    t.equal(again.headers.get('location'), null, 'nothing created, no Location')
  })

  t.test('the same name under another parent is another folder, and a list shows one level at a time', async (t) => {
    const child = await olive.post(base, { name: 'Résumés', parentId: parent })
    t.equal(child.status, 201, 'the same name under another parent is another folder')
    t.equal(child.body.folder.parentId, parent)
    await olive.post(base, { name: 'Archive' })

    const root = await olive.get(base)
    t.equal(root.status, 200)
    t.same(root.body.folders.map((f: { name: string }) => f.name), ['Archive', 'Résumés'], 'the root level only')
    const level = await olive.get(`${base}?parentId=${parent}`)
    t.same(level.body.folders.map((f: { id: string }) => f.id), [child.body.folder.id])
  })

  t.test('a folder reads as created, with an ETag', async (t) => {
    const read = await olive.get(`${base}/${parent}`)
    t.same(read.body, { folder: created.body.folder })
    t.ok(read.headers.get('etag'))
  })
})

t.test('folder bodies', async (t) => {
  const { alpha, olive } = await folderWorld(t)
  const base = `/api/v1/projects/${alpha}/folders`

  t.test('a folder name that is a path, has a control character, is a dot name, blank or over 128 characters is refused', async (t) => {
    for (const name of ['a/b', 'a\\b', 'tab\there', 'bell\u0007', '.', '..', ' .. ', '', '   ', 'x'.repeat(129)]) {
      refused(t, await olive.post(base, { name }), 400, 'FOLDER_NAME_INVALID', JSON.stringify(name))
    }
    t.equal((await olive.post(base, { name: 'x'.repeat(128) })).status, 201, '128 characters are allowed')
    t.equal((await olive.post(base, { name: 'a.b' })).status, 201, 'dots inside a name are fine')
  })

  t.test('parentId null names the root; a blank parentId, a body projectId or no name is refused as INVALID_BODY', async (t) => {
    refused(t, await olive.post(base, { name: 'x', parentId: '' }), 400, 'INVALID_BODY', 'blank parentId')
    const explicitRoot = await olive.post(base, { name: 'At the root', parentId: null })
    t.equal(explicitRoot.status, 201, 'parentId null names the root')
    t.equal(explicitRoot.body.folder.parentId, null)
    refused(t, await olive.post(base, { name: 'x', parentId: '   ' }), 400, 'INVALID_BODY', 'whitespace parentId')
    refused(t, await olive.post(base, { name: 'x', projectId: alpha }), 400, 'INVALID_BODY', 'a body projectId')
    refused(t, await olive.post(base, {}), 400, 'INVALID_BODY', 'no name')
  })
})

t.test('depth: a child under a folder 20 levels deep is refused', async (t) => {
  const { alpha, olive } = await folderWorld(t)
  const base = `/api/v1/projects/${alpha}/folders`
  let parentId: string | undefined
  for (let level = 1; level <= 20; level++) {
    const res = await olive.post(base, { name: `level ${level}`, ...(parentId ? { parentId } : {}) })
    t.equal(res.status, 201, `level ${level}`)
    parentId = res.body.folder.id
  }
  refused(t, await olive.post(base, { name: 'level 21', parentId }), 400, 'FOLDER_DEPTH_EXCEEDED', 'level 21')
})

t.test('folders belong to their project', async (t) => {
  const { alpha, beta, olive } = await folderWorld(t)
  const inBeta = (await olive.post(`/api/v1/projects/${beta}/folders`, { name: 'Beta docs' })).body.folder.id
  const base = `/api/v1/projects/${alpha}/folders`
  refused(t, await olive.get(`${base}/${inBeta}`), 404, 'FOLDER_NOT_FOUND', 'another project\'s folder')
  refused(t, await olive.get(`${base}?parentId=${inBeta}`), 404, 'FOLDER_NOT_FOUND', 'listing under another project\'s folder')
  refused(t, await olive.post(base, { name: 'x', parentId: inBeta }), 404, 'FOLDER_NOT_FOUND', 'creating under it')
  refused(t, await olive.del(`${base}/${inBeta}`), 404, 'FOLDER_NOT_FOUND', 'deleting it')
  refused(t, await olive.get(`${base}/not-a-folder`), 404, 'FOLDER_NOT_FOUND', 'an id that cannot be a folder')
  refused(t, await olive.get(`${base}?bogus=1`), 400, 'INVALID_QUERY', 'unknown query parameter')
})

t.test('folder access', async (t) => {
  const { service, alpha, beta, olive, max } = await folderWorld(t)
  const base = `/api/v1/projects/${alpha}/folders`
  const docs = (await olive.post(base, { name: 'Docs' })).body.folder.id

  t.test('a reader lists and reads folders but cannot create or delete them', async (t) => {
    t.equal((await max.get(base)).status, 200, 'a reader lists')
    t.equal((await max.get(`${base}/${docs}`)).status, 200, 'and reads')
    refused(t, await max.post(base, { name: 'Mine' }), 403, 'ROLE_FORBIDDEN', 'a reader creating')
    refused(t, await max.del(`${base}/${docs}`), 403, 'ROLE_FORBIDDEN', 'a reader deleting')
  })

  t.test('the folders of a project the caller cannot see answer 404 NOT_FOUND', async (t) => {
    refused(t, await max.get(`/api/v1/projects/${beta}/folders`), 404, 'NOT_FOUND', 'a project the caller cannot see')
    refused(t, await max.post(`/api/v1/projects/${beta}/folders`, { name: 'x' }), 404, 'NOT_FOUND', 'creating in it')
  })

  t.test('the folders of an archived project are read-only', async (t) => {
    await service.db.owner`update app.projects set archived_at = now() where id = ${alpha}`
    refused(t, await olive.post(base, { name: 'Late' }), 403, 'PROJECT_ARCHIVED', 'creating in an archived project')
    refused(t, await olive.del(`${base}/${docs}`), 403, 'PROJECT_ARCHIVED', 'deleting in an archived project')
    t.equal((await olive.get(base)).status, 200, 'an archived project is still readable')
  })
})

t.test('a folder tree Top > Mid > Low beside Keep', async (t) => {
  const { alpha, olive, eddie, service } = await folderWorld(t)
  const base = `/api/v1/projects/${alpha}/folders`
  const top = (await olive.post(base, { name: 'Top' })).body.folder.id
  const mid = (await olive.post(base, { name: 'Mid', parentId: top })).body.folder.id
  const low = (await olive.post(base, { name: 'Low', parentId: mid })).body.folder.id
  const keep = (await olive.post(base, { name: 'Keep' })).body.folder.id
  refused(t, await eddie.del(`${base}/${top}`), 403, 'ROLE_FORBIDDEN', 'an editor with read access only')

  t.test('deleting a folder needs edit access to the project', async (t) => {
  })

  t.test('deleting a folder removes everything beneath it, keeps its siblings, and is audited', async (t) => {
    const res = await olive.del(`${base}/${top}`)
    t.equal(res.status, 204)
    for (const id of [top, mid, low]) refused(t, await olive.get(`${base}/${id}`), 404, 'FOLDER_NOT_FOUND', `gone: ${id}`)
    t.equal((await olive.get(`${base}/${keep}`)).status, 200, 'siblings stay')
    refused(t, await olive.del(`${base}/${top}`), 404, 'FOLDER_NOT_FOUND', 'deleting twice')
    const [audit] = await service.db.owner`select count(*)::int as n from app.audit_log where action = 'folder.deleted'`
    t.equal(audit!.n, 1, 'the deletion is audited')
  })
})
