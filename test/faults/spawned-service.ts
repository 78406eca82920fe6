// The service as separate processes over one fresh database, for the fault tests:
// API and worker processes started as an operator starts them, each killed when the
// test ends, whatever happened.
import type { Test } from 'tap'
import { freshDatabase, type TestDatabase } from '../lib/db.ts'
import { seedFile } from '../lib/fixtures.ts'
import { seed, type SeedFile, type SeedResult } from '../../server/admin/operations.ts'
import { entry, message, spawnMain, type Spawned } from '../ops/process.ts'

/** A fresh database with the seed applied, dropped when the test ends (after the processes on it are gone). */
export async function seededDatabase(t: Test, file: Partial<SeedFile>): Promise<{ db: TestDatabase; seeded: SeedResult }> {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  return { db, seeded: await seed(db.owner, seedFile(file)) }
}

export interface SpawnedApi {
  process: Spawned
  port: number
  url: string
}

/** Ends a process at the test's end: SIGKILL unless it already exited, then waits for it. */
function killedAtEnd(t: Test, spawned: Spawned): void {
  t.teardown(async () => {
    if (spawned.child.exitCode === null && spawned.child.signalCode === null) spawned.child.kill('SIGKILL')
    await spawned.closed
  })
}

/** `server/main.ts api` on a free port of its own choosing; resolves once it listens. */
export async function spawnApi(t: Test, db: TestDatabase, env: Record<string, string> = {}): Promise<SpawnedApi> {
  const spawned = spawnMain(['api'], { DATABASE_URL: db.url, PORT: '0', S3_ENDPOINT: 'none', ...env })
  killedAtEnd(t, spawned)
  const listening = entry(await spawned.line(message('listening')))!
  const port = Number(listening.port)
  return { process: spawned, port, url: `http://127.0.0.1:${port}` }
}

/** `server/main.ts worker`; resolves once it runs. */
export async function spawnWorker(t: Test, db: TestDatabase, env: Record<string, string> = {}): Promise<Spawned> {
  const spawned = spawnMain(['worker'], { DATABASE_URL: db.url, S3_ENDPOINT: 'none', ...env })
  killedAtEnd(t, spawned)
  await spawned.line(message('worker started'))
  return spawned
}
