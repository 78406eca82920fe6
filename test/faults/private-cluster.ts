// A PostgreSQL 15 cluster of a test's own (the shared one must never be restarted):
// initdb under a temporary directory, on a free port, stopped and started at will,
// stopped and removed when the test ends. PostgreSQL refuses to run as root, so as
// root the cluster runs as the postgres user.
import { execFile } from 'node:child_process'
import { chown, mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { freePort } from '../lib/ports.ts'

const run = promisify(execFile)
const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin'

export interface PrivateCluster {
  url: string
  port: number
  /** Fast shutdown: sessions are ended, the server stops; resolves once it is down. */
  stop: () => Promise<void>
  /** Starts it again on the same port; resolves once it accepts connections. */
  start: () => Promise<void>
  /** Stops it whatever its state and removes its files. */
  destroy: () => Promise<void>
}


export async function privateCluster(): Promise<PrivateCluster> {
  const asRoot = process.getuid?.() === 0
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tale-fault-pg-'))
  const data = path.join(dir, 'data')
  const pg = (binary: string, args: string[]) => asRoot
    ? run('runuser', ['-u', 'postgres', '--', path.join(BIN, binary), ...args], { cwd: dir })
    : run(path.join(BIN, binary), args, { cwd: dir })
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres'])
    const { stdout: group } = await run('id', ['-g', 'postgres'])
    await chown(dir, Number(stdout.trim()), Number(group.trim()))
  }
  const port = await freePort()
  await pg('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'])
  const start = async () => {
    await pg('pg_ctl', ['-D', data, '-l', path.join(dir, 'server.log'), '-w', '-t', '120', '-o',
      `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c fsync=off -c max_connections=200`, 'start'])
  }
  await start()
  let destroyed = false
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop: async () => { await pg('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '120', 'stop']) },
    destroy: async () => {
      if (destroyed) return
      destroyed = true
      await pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', '-t', '60', 'stop']).catch(() => {})
      await rm(dir, { recursive: true, force: true })
    },
  }
}
