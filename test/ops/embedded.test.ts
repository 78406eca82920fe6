// The embedded PostgreSQL of `npm start` is found by every other process of the
// service through its data directory, whatever port it was started on.
import t from 'tap'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import postgres from 'postgres'
import { runningClusterPort } from '../../server/core/db/embedded.ts'
import { databaseUrl } from '../lib/db.ts'
import { message, root, spawnMain, spawnProcess, tsxLoader } from './process.ts'
import { freePort } from '../lib/ports.ts'

t.test('a running cluster\'s port is read from its data directory', async (t) => {
  const sql = postgres(databaseUrl(), { max: 1, onnotice: () => {} })
  t.teardown(() => sql.end())
  const [cluster] = await sql<{ directory: string; port: number }[]>`
    select current_setting('data_directory') as directory, current_setting('port')::int as port`
  const { directory, port } = cluster!
  t.equal(runningClusterPort(directory), port, 'the port the server listens on')

  const dir = await mkdtemp(path.join(tmpdir(), 'tale-pid-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  t.equal(runningClusterPort(dir), null, 'no postmaster.pid: nothing runs there')
  // A file a crashed server left behind names a process that no longer exists.
  await writeFile(path.join(dir, 'postmaster.pid'), `2147483646\n${dir}\n1700000000\n54999\n/tmp\nlocalhost\n`)
  t.equal(runningClusterPort(dir), null, 'a stale postmaster.pid: nothing runs there')
})


t.test('admin works beside npm start on a non-default embedded port', async (t) => {
  // PostgreSQL runs as its own system user when started by root: the directory must be reachable.
  const cwd = await mkdtemp(path.join(tmpdir(), 'tale-embedded-'))
  await chmod(cwd, 0o755)
  await mkdir(path.join(cwd, '.data'), { mode: 0o755 })
  t.teardown(() => rm(cwd, { recursive: true, force: true }))
  const port = await freePort()

  const service = spawnMain(['api'], { DATABASE_URL: '', EMBEDDED_PG_PORT: String(port), PORT: '0', S3_ENDPOINT: 'none' }, cwd)
  t.teardown(() => { service.child.kill('SIGKILL') })
  const listening = JSON.parse(await service.line(message('listening')))
  t.equal(runningClusterPort(path.join(cwd, '.data/postgres')), port, 'the cluster runs on the configured port')

  // The admin CLI with the default EMBEDDED_PG_PORT, as an operator would run it.
  const admin = spawnProcess(process.execPath, ['--import', tsxLoader, `${root}server/admin/cli.ts`, 'key', 'create', '--email', 'owner@demo.test', '--name', 'cli'],
    { env: { DATABASE_URL: '', EMBEDDED_PG_PORT: '' }, cwd })
  const { code } = await admin.closed
  t.equal(code, 0, `admin succeeded: ${admin.lines.join('\n')}`)
  const { key } = JSON.parse(admin.out.join('\n'))
  const me = await fetch(`http://127.0.0.1:${listening.port}/api/v1/me`, { headers: { authorization: `Bearer ${key}` } })
  t.equal(me.status, 200, 'the key admin created lives in the database the service uses')

  service.child.kill('SIGTERM')
  t.equal((await service.closed).code, 0)
  t.equal(runningClusterPort(path.join(cwd, '.data/postgres')), null, 'the cluster stopped with the service')
})
