// The service under test as its own processes, started as `server/main.ts` starts in
// deployment, and stopped as an orchestrator stops them (SIGTERM).
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'

export interface ServiceOptions {
  port: number
  /** RATE_LIMIT_SCALE: high enough that the benchmark measures the service, not its limits. */
  rateScale: number
  /** Added to the environment. */
  env?: Record<string, string>
  /** Pipe stderr for the caller to read, instead of inheriting it. */
  log?: boolean
}

/** The service as `npm start` runs it, or one of its parts (`api`, `worker`). */
export function spawnService(url: string, mode: 'all' | 'api' | 'worker', options: ServiceOptions): ChildProcess {
  // Node's own options for the service (a CPU profile, say), which NODE_OPTIONS may not
  // carry; separated by spaces, so a path among them holds none.
  const nodeArgs = (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean)
  return spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'server/main.ts', mode], {
    env: { ...process.env, DATABASE_URL: url, PORT: String(options.port), RATE_LIMIT_SCALE: String(options.rateScale),
           LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn', ...options.env },
    stdio: ['ignore', 'pipe', options.log ? 'pipe' : 'inherit'],
  })
}

export async function stopService(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGTERM')
  await once(child, 'exit')
}

/** A service that serves HTTP (`all` or `api`), once /api/health answers. */
export async function startServer(url: string, mode: 'all' | 'api', options: ServiceOptions): Promise<ChildProcess> {
  const child = spawnService(url, mode, options)
  // A minute: on a machine shared with other loads, start-up (tsx compiling the
  // sources, the migrations' advisory lock) has taken more than 20 s.
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode} before answering`)
    try {
      if ((await fetch(`http://127.0.0.1:${options.port}/api/health`)).ok) return child
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 200))
  }
  child.kill()
  throw new Error('the service did not start')
}
