// Backups as docs/operations.md describes them: pg_dump --format=custom of a live
// database while writes run against it, pg_restore into a fresh database of the same
// cluster (the roles are the cluster's), and the API started on the copy reads back
// what was written before the dump began. The dump is one snapshot: a write begun
// after it is absent, and the writes it holds are the first ones, with no gap.
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import postgres from 'postgres'
import t from 'tap'
import { ownerPool } from '../../server/core/db/connection.ts'
import { seed } from '../../server/admin/operations.ts'
import { acme, seedFile } from '../lib/fixtures.ts'
import { databaseUrl, freshDatabase, withDatabase } from '../lib/db.ts'
import { entry, message, spawnMain } from '../ops/process.ts'

const DEADLINE_MS = 150_000

/** Runs a client program to its end; killed if the test ends first. */
function runProgram(command: string, args: string[]): { done: Promise<{ code: number | null; stderr: string }>; pid: () => number | undefined } {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8') })
  const done = new Promise<{ code: number | null; stderr: string }>((resolve) => {
    child.once('error', (error) => resolve({ code: -1, stderr: error.message }))
    child.once('close', (code) => resolve({ code, stderr }))
  })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  return { done, pid: () => child.pid }
}

/** Polls until check answers true, failing after a generous deadline. */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

const source = await freshDatabase()
t.teardown(() => source.drop())
const maintenance = postgres(withDatabase(databaseUrl(), 'postgres'), { max: 1, onnotice: () => {} })
const restoredName = `tale_restore_${Math.random().toString(16).slice(2, 10)}`
const folder = await mkdtemp(path.join(tmpdir(), 'tale-backup-'))
t.teardown(async () => {
  await maintenance.unsafe(`drop database if exists "${restoredName}" with (force)`)
  await maintenance.end()
  await rm(folder, { recursive: true, force: true })
})

// Before the dump: acme's projects, read back through the API on the copy.
const seeded = await seed(source.owner, seedFile({
  ...acme(), projects: [{ org: 'acme', name: 'Alpha', createdBy: 'olive@acme.test', access: [] }],
}))
const acmeId = seeded.organizations.acme!.id
const globexId = seeded.organizations.globex!.id
for (const name of ['Before 1', 'Before 2', 'Before 3']) {
  await source.owner`insert into app.projects (organization_id, name, created_by)
                     values (${acmeId}, ${name}, ${seeded.users['olive@acme.test']!.id})`
}

// The writes: globex projects numbered in commit order, one transaction each, from
// before the dump starts until it has finished.
const writer = ownerPool(source.url, 1)
t.teardown(() => writer.end({ timeout: 5 }))
let written = 0
let writing = true
const writes = (async () => {
  while (writing) {
    const number = written + 1
    await writer`insert into app.projects (organization_id, name) values (${globexId}, ${`w-${String(number).padStart(6, '0')}`})`
    written = number
  }
})()
await until('the first writes', async () => written >= 3)

// pg_dump takes its snapshot, then locks every table it dumps. A table held here
// keeps it waiting after the snapshot, so writes are certain to commit while the dump
// is under way; none of them may be in it.
const locker = ownerPool(source.url, 1)
t.teardown(() => locker.end({ timeout: 5 }))
const lock = await locker.reserve()
await lock`begin`
await lock`lock table app.worker_heartbeats in access exclusive mode`

const committedBeforeDump = written
const file = path.join(folder, 'tale.dump')
const dump = runProgram('pg_dump', ['--format=custom', `--file=${file}`, `--dbname=${source.url}`])
await until('pg_dump waiting for its table lock', async () => {
  const [waiting] = await maintenance`
    select count(*)::int as n from pg_stat_activity
     where datname = ${source.name} and application_name = 'pg_dump' and wait_event_type = 'Lock'`
  return waiting!.n > 0
})
const startedAfterSnapshot = written + 1
await until('writes during the dump', async () => written >= startedAfterSnapshot + 3)
await lock`commit`
lock.release()
const dumped = await dump.done
writing = false
await writes

t.test('pg_dump of the live database succeeds while writes run', async (t) => {
  t.equal(dumped.code, 0, dumped.stderr)
  t.ok(written > startedAfterSnapshot, `writes committed while the dump ran (${written - startedAfterSnapshot + 1} of them)`)
})

t.test('pg_restore into a fresh database of the same cluster', async (t) => {
  await maintenance.unsafe(`create database "${restoredName}"`)
  const restore = runProgram('pg_restore', ['--exit-on-error', `--dbname=${withDatabase(databaseUrl(), restoredName)}`, file])
  const restored = await restore.done
  t.equal(restored.code, 0, restored.stderr)
})

t.test('the copy holds one snapshot: every write before the dump, none begun after it, no gap', async (t) => {
  const copy = ownerPool(withDatabase(databaseUrl(), restoredName), 1)
  t.teardown(() => copy.end({ timeout: 5 }))
  const names = (await copy<{ name: string }[]>`
    select name from app.projects where organization_id = ${globexId} order by name`).map((r) => r.name)
  const numbers = names.map((name) => Number(name.slice(2)))
  t.same(numbers, numbers.map((_, i) => i + 1), 'the writes in the copy are the first ones, with no gap')
  t.ok(numbers.length >= committedBeforeDump, `every write committed before the dump is there (${numbers.length} of ${committedBeforeDump})`)
  t.ok(numbers.length < startedAfterSnapshot, 'no write begun after the dump took its snapshot is there')
})

t.test('the API started on the copy finds nothing to migrate and serves what was written', async (t) => {
  const api = spawnMain(['api'], { DATABASE_URL: withDatabase(databaseUrl(), restoredName), PORT: '0', S3_ENDPOINT: 'none' })
  t.teardown(() => { if (api.child.exitCode === null) api.child.kill('SIGKILL') })
  const migrated = entry(await api.line(message('database migrated')))!
  t.equal(migrated.applied, 0, 'the copy carries its migration records')
  const listening = entry(await api.line(message('listening')))!
  const response = await fetch(`http://127.0.0.1:${listening.port}/api/v1/projects?limit=100`, {
    headers: { authorization: `Bearer ${seeded.users['olive@acme.test']!.keys.main}`, 'x-organization-slug': 'acme' },
  })
  t.equal(response.status, 200, 'the key written before the dump authenticates on the copy')
  const body = await response.json() as { projects: { name: string }[] }
  t.same(body.projects.map((p) => p.name).sort(), ['Alpha', 'Before 1', 'Before 2', 'Before 3'])
  api.child.kill('SIGTERM')
  t.equal((await api.closed).code, 0, 'the API stops cleanly')
})
