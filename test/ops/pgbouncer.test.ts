// An API and a worker process run through Debian's pgbouncer in pool_mode=transaction
// (DATABASE_POOL_MODE=transaction), with two server connections per login for eight
// clients per process, so consecutive transactions of one client really run on
// different server sessions: nothing of the request path or the worker may rest on
// session state. A pgbouncer that refuses startup options and a look into every
// server connection it holds catch a role set at connect time and named prepared
// statements.
import t, { type Test } from 'tap'
import { execFile, spawn } from 'node:child_process'
import { promisify } from 'node:util'
import { existsSync } from 'node:fs'
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import postgres from 'postgres'
import { freshDatabase, withDatabase, type TestDatabase } from '../lib/db.ts'
import { acme, person, seedFile } from '../lib/fixtures.ts'
import { callTool, mcpClient } from '../lib/mcp.ts'
import { eventually } from '../lib/wait.ts'
import { seed } from '../../server/admin/operations.ts'
import { simpleDocument } from '../lib/automations.ts'
import { entry, message, spawnMain, started } from './process.ts'
import { freePort } from '../lib/ports.ts'

// Two processes of the service and a pooler start on a machine other suites load too.
t.setTimeout(600_000)

const PGBOUNCER = '/usr/sbin/pgbouncer'
/** Server connections per database and login: fewer than any process's clients. */
const SERVER_CONNECTIONS = 2


/**
 * pgbouncer in transaction mode in front of the test cluster, on a free port; its
 * port. Trust authentication: the users are listed (pgbouncer asks) with no password,
 * and PostgreSQL trusts them. pgbouncer refuses to run as root, so as root it drops
 * to postgres, which must read its files.
 */
async function startPgbouncer(t: Test, upstream: URL): Promise<number> {
  const dir = await mkdtemp(path.join(tmpdir(), 'tale-pgbouncer-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await chmod(dir, 0o755)
  const users = path.join(dir, 'users.txt')
  await writeFile(users, '"postgres" ""\n"api_login" ""\n')
  await chmod(users, 0o644)
  const settings = path.join(dir, 'pgbouncer.ini')
  // Another process may take the free port before pgbouncer binds it: then again.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort()
    await writeFile(settings, [
      '[databases]',
      `* = host=${upstream.hostname} port=${upstream.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1', `listen_port = ${port}`, 'unix_socket_dir =',
      'auth_type = trust', `auth_file = ${users}`,
      'pool_mode = transaction', `default_pool_size = ${SERVER_CONNECTIONS}`, 'reserve_pool_size = 0',
      'max_client_conn = 200', 'admin_users = postgres',
      '',
    ].join('\n'))
    await chmod(settings, 0o644)
    const child = spawn(PGBOUNCER, [...(process.getuid?.() === 0 ? ['-u', 'postgres'] : []), settings],
      { stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    const exited = new Promise<void>((resolve) => child.once('close', () => resolve()))
    const up = new Promise<boolean>((resolve) => {
      const read = (chunk: Buffer) => {
        output += chunk.toString('utf8')
        if (/process up/.test(output)) resolve(true)
      }
      child.stdout!.on('data', read)
      child.stderr!.on('data', read)
      void exited.then(() => resolve(false))
    })
    if (await up) {
      process.once('exit', () => child.kill('SIGKILL'))
      t.teardown(async () => {
        child.kill('SIGKILL')
        await exited
      })
      return port
    }
    if (attempt >= 5 || !/Address already in use/.test(output)) throw new Error(`pgbouncer did not start:\n${output}`)
  }
}

/** The database at url, reached through the pooler on port as user. */
function through(port: number, url: string, user: string): string {
  const pooled = new URL(url)
  pooled.port = String(port)
  pooled.username = user
  return pooled.toString()
}

/**
 * The named prepared statements of every server connection the pooler holds for a
 * login: as many transactions as it may have server connections, open at once, so
 * each runs on a different one. With the backend of each, and those pgbouncer says
 * it holds for the login (its admin console's SHOW SERVERS).
 */
async function preparedOnEveryServer(t: Test, port: number, db: TestDatabase, user: string):
  Promise<{ looked: number[]; held: number[]; names: string[] }> {
  const clients = Array.from({ length: SERVER_CONNECTIONS }, () =>
    postgres(through(port, db.url, user), { max: 1, prepare: false, onnotice: () => {} }))
  t.teardown(() => Promise.all(clients.map((client) => client.end({ timeout: 5 }))))
  let release!: () => void
  const gate = new Promise<void>((resolve) => { release = resolve })
  const arrivals = clients.map(() => {
    let arrive!: (row: { pid: number; names: string[] }) => void
    return { arrived: new Promise<{ pid: number; names: string[] }>((resolve) => { arrive = resolve }), arrive }
  })
  const done = clients.map((client, index) => client.begin(async (tx) => {
    const [row] = await tx<{ pid: number; names: string[] }[]>`
      select pg_backend_pid() as pid, coalesce(array_agg(name::text order by name), '{}') as names from pg_prepared_statements`
    arrivals[index]!.arrive(row!)
    await gate
  }))
  const rows = await Promise.race([
    Promise.all(arrivals.map((a) => a.arrived)),
    Promise.all(done).then(() => { throw new Error('a transaction ended before all were open') }),
  ])
  // The admin console speaks only the simple protocol and has no pg_type to read.
  const admin = postgres(through(port, withDatabase(db.url, 'pgbouncer'), 'postgres'),
    { max: 1, fetch_types: false, prepare: false, onnotice: () => {} })
  t.teardown(() => admin.end({ timeout: 5 }))
  const servers = await admin.unsafe('show servers').simple() as unknown as { user: string; database: string; remote_pid: string }[]
  release()
  await Promise.all(done)
  return {
    looked: rows.map((r) => r.pid).sort(),
    held: servers.filter((s) => s.user === user && s.database === db.name).map((s) => Number(s.remote_pid)).sort(),
    names: rows.flatMap((r) => r.names),
  }
}

const absent = existsSync(PGBOUNCER) ? false : `${PGBOUNCER} is absent: install Debian's pgbouncer (apt-get install pgbouncer) to run this test`

t.test('an API and a worker behind pgbouncer in transaction mode', { skip: absent }, async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  const seeded = await seed(db.owner, seedFile({
    ...acme(),
    users: [
      person('olive@acme.test', [{ org: 'acme', role: 'owner' }]),
      person('dev@acme.test', [{ org: 'acme', role: 'developer' }]),
      person('max@acme.test', [{ org: 'acme', role: 'member' }]),
      person('gina@globex.test', [{ org: 'globex', role: 'owner' }]),
    ],
    teams: [],
    projects: [
      { org: 'acme', name: 'Alpha', createdBy: 'olive@acme.test', access: [{ email: 'max@acme.test', level: 'read' }] },
      { org: 'acme', name: 'Beta', createdBy: 'olive@acme.test', access: [] },
      { org: 'globex', name: 'Gamma', createdBy: 'gina@globex.test', access: [] },
    ],
  }))
  const key = (email: string) => seeded.users[email]!.keys.main!
  const [alpha, beta, gamma] = ['Alpha', 'Beta', 'Gamma'].map((name) => seeded.projects[name]!.id)

  const port = await startPgbouncer(t, new URL(db.url))
  const env = {
    DATABASE_URL: through(port, db.url, 'postgres'), DATABASE_POOL_MODE: 'transaction', PORT: '0', S3_ENDPOINT: 'none',
    DATABASE_POOL_SIZE: '8', WORKER_CONCURRENCY: '6', RATE_LIMIT_SCALE: '100',
  }
  const api = started(t, spawnMain(['api'], env))
  const worker = started(t, spawnMain(['worker'], env))
  const listening = entry(await api.line(message('listening')))!
  await worker.line(message('worker started'))
  const base = `http://127.0.0.1:${listening.port}`
  const get = async (path: string, as: string) => {
    const response = await fetch(base + path, { headers: { authorization: `Bearer ${key(as)}` } })
    return { status: response.status, body: await response.json() as any }
  }

  t.test('callers of two organizations, interleaved, each see their own rows and the projects they may', async (t) => {
    const names = (a: { status: number; body: any }) =>
      a.status === 200 ? a.body.projects.map((p: { name: string }) => p.name).sort() : { status: a.status, code: a.body?.code }
    const expected: [string, string, (answer: { status: number; body: any }) => unknown][] = [
      ['/api/v1/projects', 'olive@acme.test', names],
      ['/api/v1/projects', 'gina@globex.test', names],
      ['/api/v1/projects', 'max@acme.test', names],
      [`/api/v1/projects/${alpha}/tasks`, 'max@acme.test', (a) => a.status],
      [`/api/v1/projects/${beta}/tasks`, 'max@acme.test', (a) => a.status],
      [`/api/v1/projects/${beta}/tasks`, 'olive@acme.test', (a) => a.status],
      [`/api/v1/projects/${gamma}/tasks`, 'olive@acme.test', (a) => a.status],
      [`/api/v1/projects/${gamma}/tasks`, 'gina@globex.test', (a) => a.status],
      [`/api/v1/projects/${alpha}/tasks`, 'gina@globex.test', (a) => a.status],
    ]
    const wanted = [['Alpha', 'Beta'], ['Gamma'], ['Alpha'], 200, 404, 200, 404, 200, 404]
    // Rounds of every call at once: many more requests in flight than server connections.
    const rounds = 8
    const answers = await Promise.all(Array.from({ length: rounds }, () => expected.map(async ([path, as, read]) => read(await get(path, as)))).flat())
    const mismatches = answers.flatMap((answer, index) => {
      const [path, as] = expected[index % expected.length]!
      const want = wanted[index % expected.length]
      return JSON.stringify(answer) === JSON.stringify(want) ? [] : [`${as} ${path}: ${JSON.stringify(answer)}, not ${JSON.stringify(want)}`]
    })
    t.same(mismatches, [], `${answers.length} requests, each answered for its own caller`)
  })

  t.test('a run started over the API completes on the worker through the pooler', async (t) => {
    const mcp = await mcpClient(t, base, key('dev@acme.test'))
    const created = await callTool(mcp, 'automation_create', { document: simpleDocument('sales/greeter') })
    t.notOk(created.isError, 'created over MCP')
    t.notOk((await callTool(mcp, 'automation_deploy', { name: 'sales/greeter' })).isError, 'deployed')
    const response = await fetch(`${base}/api/v1/automations/sales__greeter/runs`, {
      method: 'POST', headers: { authorization: `Bearer ${key('dev@acme.test')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: { who: 'Ada' } }),
    })
    t.equal(response.status, 202)
    const { runId } = await response.json() as { runId: string }
    const run = await eventually(async () => (await get(`/api/v1/runs/${runId}`, 'dev@acme.test')).body,
      (r) => !['queued', 'running'].includes(r?.status))
    t.match(run, { status: 'completed', output: { greeting: 'Hello Ada' } })
  })

  t.test('the admin CLI through the pooler: commands run without prepared statements; migrating is refused', async (t) => {
    const admin = (args: string[]) => promisify(execFile)(process.execPath, ['--import=tsx', 'server/admin/cli.ts', ...args], {
      env: { ...process.env, DATABASE_URL: env.DATABASE_URL, DATABASE_POOL_MODE: 'transaction' }, encoding: 'utf8',
    })
    // Several statements on one client, whose transactions land on either server
    // connection: a named statement prepared on one would be missing on the other.
    for (let round = 0; round < 3; round++) {
      const { stdout } = await admin(['status'])
      t.match(JSON.parse(stdout), { migrations: { pending: [] } }, `status ${round + 1} answers`)
    }
    const created = JSON.parse((await admin(['user', 'create', '--email', 'new@acme.test', '--name', 'New'])).stdout)
    t.type(created.id, 'string', 'a command that writes runs too')
    const refused = await admin(['migrate']).then(() => null, (error: { code: number; stderr: string }) => error)
    t.equal(refused?.code, 1, 'migrate exits 1')
    t.match(refused?.stderr, /DATABASE_POOL_MODE=transaction: migrating needs a session of its own/, 'and says why')
  })

  t.test('no server connection of the pooler holds a named prepared statement', async (t) => {
    for (const user of ['api_login', 'postgres']) {
      const { looked, held, names } = await preparedOnEveryServer(t, port, db, user)
      t.same(looked, held, `${user}: every server connection the pooler holds was looked into`)
      t.same(names, [], `${user}: none`)
    }
  })

  t.test('both processes stop cleanly', async (t) => {
    for (const stopping of [api, worker]) {
      stopping.child.kill('SIGTERM')
      t.equal((await stopping.closed).code, 0)
    }
    t.same([...api.lines, ...worker.lines].filter((line) => entry(line)?.level === 'error'), [], 'no error was logged')
  })
})

