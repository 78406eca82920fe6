// The service as separate processes over one fresh database, for the fault tests:
// API and worker processes started as an operator starts them, each killed when the
// test ends, whatever happened.
import http from 'node:http'
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

export interface Answer {
  status: number
  headers: http.IncomingHttpHeaders
  body: any
}

/** One request over the agent's kept-alive connections; the answer read whole, its JSON parsed. */
export function call(agent: http.Agent, base: string, method: string, path: string,
  options: { key?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Answer> {
  const { hostname, port } = new URL(base)
  const payload = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body))
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: hostname, port: Number(port), method, path, agent,
      headers: {
        ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
        ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
        ...options.headers,
      },
    }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        let body: unknown
        try {
          body = text ? JSON.parse(text) : undefined
        } catch {
          body = text
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(payload)
  })
}

/** Runs count jobs, at most `concurrency` at once, in order of their index; their results by index. */
export async function pooled<T>(count: number, concurrency: number, job: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count)
  let next = 0
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count) {
      const index = next++
      results[index] = await job(index)
    }
  }))
  return results
}

/** Kept-alive agents, destroyed when the test ends. */
export function agents(t: Test, count: number, maxSockets: number): http.Agent[] {
  const made = Array.from({ length: count }, () => new http.Agent({ keepAlive: true, maxSockets }))
  t.teardown(() => { for (const agent of made) agent.destroy() })
  return made
}
