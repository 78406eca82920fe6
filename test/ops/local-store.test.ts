// The local object store of `npm start` keeps its port across restarts: a presigned
// upload URL names the port, so one prepared before a restart works after it.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import net from 'node:net'
import { loadConfig } from '../../server/core/config.ts'
import { resolveObjectStore } from '../../server/core/storage/resolve.ts'

const config = loadConfig({ S3_ENDPOINT: '' })

t.test('an upload URL prepared before a restart still works after it', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'tale-s3-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const dataDir = path.join(dir, 's3')

  const first = await resolveObjectStore(config, dataDir)
  const url = await first.store!.presignPut('org/prepared', { contentType: 'text/plain', contentLength: 5, expiresInSeconds: 600 })
  await first.stop()

  const second = await resolveObjectStore(config, dataDir)
  t.teardown(() => second.stop())
  t.equal(second.description, first.description, 'the store came back at the same address')
  const put = await fetch(url, { method: 'PUT', body: 'hello', headers: { 'content-type': 'text/plain' } })
  t.equal(put.status, 200, 'the URL prepared before the restart is accepted')
  t.match(await second.store!.head('org/prepared'), { size: 5 })
})

t.test('a second process on the same directory uses the running store', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'tale-s3-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const dataDir = path.join(dir, 's3')
  const first = await resolveObjectStore(config, dataDir)
  t.teardown(() => first.stop())
  const second = await resolveObjectStore(config, dataDir)
  t.equal(second.description, first.description)
  await second.stop()
  await t.resolves(first.store!.ping(), 'stopping the second leaves the first serving')
})

t.test('a saved port taken by something else moves the store to a new one', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'tale-s3-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const dataDir = path.join(dir, 's3')
  const first = await resolveObjectStore(config, dataDir)
  await first.stop()
  const port = Number(new URL(first.description.split(' ')[1]!).port)
  const squatter = net.createServer((socket) => socket.destroy())
  await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => squatter.close(() => resolve())))
  const second = await resolveObjectStore(config, dataDir)
  t.teardown(() => second.stop())
  t.not(second.description, first.description)
  await t.resolves(second.store!.ping())
})
