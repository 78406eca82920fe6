// The object store module against a real S3-protocol server on loopback.
import t from 'tap'
import { createObjectStore, ObjectChanged } from '../../server/core/storage/object-store.ts'
import { localStore } from '../lib/object-store.ts'
import { loadConfig, objectStoreSettings } from '../../server/core/config.ts'

t.test('a presigned PUT from a plain HTTP client, then head, get and delete', async (t) => {
  const { store } = await localStore(t)
  await store.ping()

  const url = await store.presignPut('org/project/upload-1', { contentType: 'text/plain', expiresInSeconds: 1800 })
  const signed = new URL(url)
  t.equal(signed.searchParams.get('X-Amz-Expires'), '1800', 'valid for 30 minutes')
  t.match(signed.searchParams.get('X-Amz-SignedHeaders'), /content-type/, 'the declared Content-Type is part of the signature')
  t.same([...signed.searchParams.keys()].filter((name) => /checksum/i.test(name)), [],
    'no checksum is signed in: stores that verify one would refuse the client\'s bytes')

  const put = await fetch(url, { method: 'PUT', body: 'hello, store', headers: { 'content-type': 'text/plain' } })
  t.equal(put.status, 200, 'the bytes are stored with no Authorization header')

  const head = await store.head('org/project/upload-1')
  t.match(head, { size: 12, contentType: 'text/plain' })
  t.ok(head?.etag)

  const { body, object } = (await store.get('org/project/upload-1', { ifMatch: head!.etag! }))!
  const chunks: Buffer[] = []
  for await (const chunk of body) chunks.push(chunk as Buffer)
  t.equal(Buffer.concat(chunks).toString(), 'hello, store')
  t.equal(object.size, 12)
  t.equal(await store.get('org/project/absent'), null, 'an absent object reads as null')
  await t.rejects(store.get('org/project/upload-1', { ifMatch: '"0123456789abcdef0123456789abcdef"' }), ObjectChanged,
    'bytes other than the expected ones are refused')

  const bare = await store.presignPut('org/project/upload-2', { expiresInSeconds: 60 })
  t.notMatch(new URL(bare).searchParams.get('X-Amz-SignedHeaders'), /content-type/, 'no type declared, none bound')
  t.equal((await fetch(bare, { method: 'PUT', body: Buffer.from([1, 2, 3]) })).status, 200)

  t.same(await store.deleteMany(['org/project/upload-1', 'org/project/upload-2', 'org/project/never-there']), [],
    'deleted, and an absent key counts as deleted')
  t.equal(await store.head('org/project/upload-1'), null, 'nothing is stored any more')
})

t.test('a stopped store is reported, never mistaken for a missing object', async (t) => {
  const { local } = await localStore(t)
  const store = createObjectStore(local.settings)
  await store.ping()
  await local.close()
  // The same client, whose kept-alive connection the stopped store has cut.
  await t.rejects(store.ping(), { name: 'ObjectStoreUnavailable' })
  await t.rejects(store.head('org/project/anything'), { name: 'ObjectStoreUnavailable' }, 'head does not answer "absent"')
  await t.rejects(store.get('org/project/anything'), { name: 'ObjectStoreUnavailable' })
  t.same(await store.deleteMany(['a', 'b']), ['a', 'b'], 'every key it could not delete is reported')
})

t.test('presigned URLs name the address clients reach the store at', async (t) => {
  const { local } = await localStore(t)
  const port = new URL(local.settings.endpoint).port
  // localhost and 127.0.0.1 are the same store under two names, as a compose network's
  // internal and published addresses are.
  const store = createObjectStore({ ...local.settings, publicEndpoint: `http://localhost:${port}` })
  const url = new URL(await store.presignPut('org/project/public', { expiresInSeconds: 60 }))
  t.equal(url.host, `localhost:${port}`)
  t.equal((await fetch(url, { method: 'PUT', body: 'via the public name' })).status, 200, 'signed for that host')
  t.equal((await store.head('org/project/public'))?.size, 19, 'and read back through the service\'s own address')
})

t.test('object store settings from the environment', async (t) => {
  const base = { DATABASE_URL: 'postgres://x@127.0.0.1/x' }
  t.equal(objectStoreSettings(loadConfig(base)), null, 'none configured')
  t.equal(objectStoreSettings(loadConfig({ ...base, S3_ENDPOINT: 'none' })), null, 'opted out')
  t.throws(() => loadConfig({ ...base, S3_ENDPOINT: 'http://minio:9000' }), /S3_BUCKET: required/)
  t.throws(() => loadConfig({ ...base, S3_ENDPOINT: 'minio' }), /S3_ENDPOINT/)
  t.match(objectStoreSettings(loadConfig({
    ...base, S3_ENDPOINT: 'http://minio:9000', S3_PUBLIC_ENDPOINT: 'http://localhost:9000', S3_BUCKET: 'tale',
    S3_ACCESS_KEY_ID: 'id', S3_SECRET_ACCESS_KEY: 'secret', S3_FORCE_PATH_STYLE: 'false',
  })), {
    endpoint: 'http://minio:9000', publicEndpoint: 'http://localhost:9000', bucket: 'tale', region: 'us-east-1',
    forcePathStyle: false, accessKeyId: 'id', secretAccessKey: 'secret',
  })
})
