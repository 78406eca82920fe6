// Start-up failures an operator meets in the first hour end the process with one
// clear line and exit status 1; a process that starts logs only JSON lines.
import t from 'tap'
import net from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import { freshDatabase } from '../lib/db.ts'
import { entry, message, spawnMain } from './process.ts'

const unreachable = 'postgres://postgres@127.0.0.1:1/nowhere'

t.test('an unreachable database: one line naming it, exit 1', async (t) => {
  for (const mode of ['all', 'api', 'worker']) {
    const started = spawnMain([mode], { DATABASE_URL: unreachable, PORT: '0', S3_ENDPOINT: 'none' })
    const { code } = await started.closed
    t.equal(code, 1, `${mode}: exit status 1`)
    t.equal(started.lines.length, 1, `${mode}: one line`)
    t.match(entry(started.lines[0]!), { level: 'error', message: /^start-up failed: cannot use the database at 127\.0\.0\.1:1\/nowhere: .*ECONNREFUSED.*\(check DATABASE_URL\)$/ })
  }
})

t.test('a port in use: one line naming it, exit 1, before the database is asked', async (t) => {
  const holder = net.createServer()
  await new Promise<void>((resolve) => holder.listen(0, '0.0.0.0', resolve))
  t.teardown(() => new Promise<void>((resolve) => holder.close(() => resolve())))
  const port = (holder.address() as AddressInfo).port
  // The database is unreachable too: the port is checked first, so it is the one named.
  const started = spawnMain([], { DATABASE_URL: unreachable, PORT: String(port), S3_ENDPOINT: 'none' })
  const { code } = await started.closed
  t.equal(code, 1)
  t.equal(started.lines.length, 1)
  t.match(entry(started.lines[0]!), { level: 'error', message: `start-up failed: port ${port} is already in use (set PORT to a free port)` })

  const workerOnly = spawnMain(['worker'], { DATABASE_URL: unreachable, PORT: String(port), S3_ENDPOINT: 'none' })
  await workerOnly.closed
  t.match(workerOnly.lines.join('\n'), /cannot use the database/, 'a worker-only process does not need the port')
})

t.test('malformed configuration and an unknown mode: exit 1 with the reason', async (t) => {
  const config = spawnMain([], { DATABASE_URL: 'mysql://nope', PORT: 'eighty' })
  t.equal((await config.closed).code, 1)
  t.match(config.lines.join('\n'), /DATABASE_URL: must be a postgres:\/\/ URL[\s\S]*PORT: must be a port number/)
  const mode = spawnMain(['everything'], {})
  t.equal((await mode.closed).code, 1)
  t.same(mode.lines, ['unknown mode "everything": expected one of all, api, worker, indexing, crawler'])
})

t.test('every line a started process writes to stderr is JSON, the worker\'s and the object store client\'s included', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  // The default object store: a local one under .data/ of the working directory.
  const cwd = await mkdtemp(path.join(tmpdir(), 'tale-ops-'))
  t.teardown(() => rm(cwd, { recursive: true, force: true }))
  const started = spawnMain([], { DATABASE_URL: db.url, PORT: '0', S3_ENDPOINT: '' }, cwd)
  t.teardown(() => { started.child.kill('SIGKILL') })
  const listening = entry(await started.line(message('listening')))!
  await started.line(message(/^Worker connected/))

  const response = await fetch(`http://127.0.0.1:${listening.port}/api/v1/projects/abc/files?limit=5`, {
    headers: { 'x-organization-slug': 'acme', 'x-request-id': 'probe-1' },
  })
  t.equal(response.status, 401)
  const request = entry(await started.line(message('request')))!
  t.match(request, { level: 'info', method: 'GET', route: '/api/v1/projects/:id/files', status: 401, requestId: 'probe-1', organization: 'acme' })
  t.type(request.durationMs, 'number')

  started.child.kill('SIGTERM')
  t.equal((await started.closed).code, 0)
  const raw = started.lines.filter((line) => entry(line) === null)
  t.same(raw, [], 'no line is anything but JSON')
  t.ok(started.lines.some((line) => entry(line)?.component === 'worker'), 'graphile-worker speaks through the same logger')
  if (Number(process.versions.node.split('.')[0]) < 22) {
    t.ok(started.lines.some((line) => entry(line)?.level === 'warn' && /NodeVersionSupportWarning/.test(entry(line)!.message)),
      'the AWS SDK\'s warning is a JSON line')
  }
})
