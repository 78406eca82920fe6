// The container and the compose stack, read as Docker reads them (Docker itself does
// not run here): the image runs node itself (so SIGTERM reaches the service, as in
// shutdown.test.ts); compose runs PostgreSQL, PgBouncer, MinIO, a one-shot migration,
// API replicas behind a proxy, worker replicas and the internal services, every image
// pinned and every long-running service health-checked.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { spawnSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { parse } from 'yaml'
import { root } from './process.ts'
import { loadConfig } from '../../server/core/config.ts'
import { allRoutes } from '../../server/service.ts'
import { createApp, MAX_HEADER_BYTES } from '../../server/app.ts'
import { createLogger } from '../../server/core/log.ts'
import { DEFAULT_BODY_LIMIT } from '../../server/transport/json-body.ts'

const read = (file: string) => readFileSync(`${root}${file}`, 'utf8')

// ---- docker-compose.yml as compose sees it --------------------------------------

interface Healthcheck { test?: string[] }
interface DependsOn { condition: string }
interface Service {
  image?: string
  build?: string | { context: string; dockerfile?: string }
  command?: string[] | string
  entrypoint?: string[]
  environment?: Record<string, string>
  depends_on?: Record<string, DependsOn>
  deploy?: { replicas?: number | string }
  healthcheck?: Healthcheck
  ports?: string[]
  volumes?: string[]
  restart?: string
  shm_size?: string
  networks?: string[] | Record<string, { ipv4_address?: string } | null>
}

/** The file as written: ${...} expressions still in place, anchors and merge keys resolved. */
const raw = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service> }

/** Compose's interpolation of one string: ${NAME}, ${NAME:-default}, ${NAME-default} and $$. */
function interpolate(text: string, env: Record<string, string>): string {
  return text.replace(/\$\$|\$\{([A-Z_][A-Z0-9_]*)(?:(:-|-)([^}]*))?\}/g, (whole, name: string, operator: string | undefined, fallback: string) => {
    if (whole === '$$') return '$'
    const value = env[name]
    if (operator === ':-') return value ? value : fallback
    if (operator === '-') return value ?? fallback
    return value ?? ''
  })
}

/** The stack as compose would run it with these variables (none: every default). */
function composed(env: Record<string, string> = {}): Record<string, Service> {
  const walk = (value: unknown): unknown =>
    typeof value === 'string' ? interpolate(value, env)
      : Array.isArray(value) ? value.map(walk)
        : value !== null && typeof value === 'object' ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]))
          : value
  return walk(raw.services) as Record<string, Service>
}

const services = composed()
const APP_SERVICES = ['api', 'worker', 'indexing', 'crawler'] as const
const ONE_SHOTS = ['migrate', 'minio-setup'] as const

/** A third-party image by a version it cannot move from: no latest, no bare major (or major-variant) tag. */
function pinned(image: string): boolean {
  const tag = /^[\w./-]+:([\w.-]+)$/.exec(image)?.[1]
  if (!tag || tag === 'latest') return false
  // At least major.minor (postgres:15.10-bookworm, nginx:1.28.0-alpine), or MinIO's dated release tags.
  return /^\d+\.\d+/.test(tag) || /^RELEASE\.\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}Z$/.test(tag)
}

/** The base images a Dockerfile is built FROM. */
const fromImages = (dockerfile: string) => [...read(dockerfile).matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]!)

const dockerfileOf = (service: Service) =>
  typeof service.build === 'string' ? 'Dockerfile' : service.build?.dockerfile ?? 'Dockerfile'

t.test('the image runs the composition root under node, not npm', async (t) => {
  const dockerfile = read('Dockerfile')
  const instruction = (name: string) => [...dockerfile.matchAll(new RegExp(`^${name}\\s+(\\[.*\\])\\s*$`, 'gm'))].map((m) => JSON.parse(m[1]!) as string[]).at(-1)
  const argv = [...(instruction('ENTRYPOINT') ?? []), ...(instruction('CMD') ?? [])]
  t.same(argv, ['node', '--import', 'tsx', 'server/main.ts', 'all'])
  t.notMatch(dockerfile, /^(CMD|ENTRYPOINT)\s+.*npm/m, 'no npm between the container and the service')
})

t.test('the build context leaves node_modules and .data out', async (t) => {
  const ignored = read('.dockerignore').split('\n').map((line) => line.trim())
  t.ok(ignored.includes('node_modules'))
  t.ok(ignored.includes('.data'))
})

t.test('the stack has every service, the app services in their modes of the one image', async (t) => {
  t.same(Object.keys(services).sort(),
    ['api', 'crawler', 'indexing', 'migrate', 'minio', 'minio-setup', 'pgbouncer', 'postgres', 'proxy', 'worker'])
  for (const mode of APP_SERVICES) {
    t.same(services[mode]!.command, [mode], `${mode} runs mode ${mode}`)
    t.equal(services[mode]!.build, '.', `${mode} is the service's image`)
  }
})

t.test('a tag pins an image only with its version beyond the major', async (t) => {
  for (const image of ['postgres:15.10-bookworm', 'nginx:1.28.0-alpine', 'debian:12.8-slim', 'minio/minio:RELEASE.2024-11-07T00-52-20Z']) {
    t.ok(pinned(image), `${image} is pinned`)
  }
  for (const image of ['minio/minio:latest', 'minio/minio', 'postgres:15-bookworm', 'node:20-bookworm-slim', 'nginx:stable-alpine', 'debian:bookworm-slim']) {
    t.notOk(pinned(image), `${image} is not`)
  }
})

t.test('every image the stack runs or builds from is pinned', async (t) => {
  for (const [name, service] of Object.entries(services)) {
    t.ok(service.image !== undefined || service.build !== undefined, `${name} names an image or a build`)
    if (service.image !== undefined) t.ok(pinned(service.image), `${name}: ${service.image} is pinned`)
    if (service.build !== undefined) {
      const bases = fromImages(dockerfileOf(service))
      t.ok(bases.length > 0, `${name}: ${dockerfileOf(service)} names its base`)
      for (const base of bases) t.ok(pinned(base), `${name}: ${dockerfileOf(service)} builds from ${base}, pinned`)
    }
  }
})

t.test('every long-running service has a health check and restarts; one-shots do neither', async (t) => {
  for (const [name, service] of Object.entries(services)) {
    if ((ONE_SHOTS as readonly string[]).includes(name)) {
      t.equal(service.healthcheck, undefined, `${name} runs once: no health check`)
      t.ok(service.restart === undefined || service.restart === 'no', `${name} runs once: not restarted`)
      continue
    }
    const test = service.healthcheck?.test
    t.ok(Array.isArray(test) && test.length > 1 && ['CMD', 'CMD-SHELL'].includes(test[0]!), `${name} has a health check`)
    t.equal(service.restart, 'unless-stopped', `${name} comes back after a crash`)
  }
  t.match(services.api!.healthcheck!.test!.join(' '), /\/api\/health/, 'the API is healthy when it answers and its database does')
  t.same(services.postgres!.healthcheck!.test!.slice(0, 2), ['CMD', 'pg_isready'])
  t.same(services.pgbouncer!.healthcheck!.test, ['CMD', 'pg_isready', '-h', '127.0.0.1', '-p', '6432'])
  t.match(services.proxy!.healthcheck!.test!.join(' '), /http:\/\/127\.0\.0\.1:3000\/health$/, 'the proxy checks its own /health')
})

t.test('the one-shot migrate service runs the admin CLI\'s migrate, and every app service waits for it', async (t) => {
  const migrate = services.migrate!
  t.equal(migrate.build, '.', 'migrate is the service\'s image')
  t.same([...migrate.entrypoint!, ...(migrate.command as string[])], ['node', '--import', 'tsx', 'server/admin/cli.ts', 'migrate'])
  t.same(migrate.depends_on, { postgres: { condition: 'service_healthy' } }, 'it starts once PostgreSQL answers')
  for (const name of APP_SERVICES) {
    const after = services[name]!.depends_on ?? {}
    t.same(after.migrate, { condition: 'service_completed_successfully' }, `${name} starts once migrations succeeded`)
    t.same(after.pgbouncer, { condition: 'service_healthy' }, `${name} starts once PgBouncer answers`)
    t.same(after['minio-setup'], { condition: 'service_completed_successfully' }, `${name} starts once the bucket exists`)
    t.notOk('postgres' in after, `${name} does not reach PostgreSQL directly`)
  }
  t.same(services.proxy!.depends_on, { api: { condition: 'service_healthy' } })
})

t.test('the app services reach the database through PgBouncer in transaction mode; migrate goes straight to PostgreSQL', async (t) => {
  const postgres = services.postgres!.environment!
  const pgbouncer = services.pgbouncer!.environment!
  const owner = `postgres://${postgres.POSTGRES_USER}:${postgres.POSTGRES_PASSWORD}`
  const request = `postgres://api_login:${postgres.REQUEST_LOGIN_PASSWORD}`
  for (const name of APP_SERVICES) {
    const env = services[name]!.environment!
    t.equal(env.DATABASE_URL, `${owner}@pgbouncer:6432/${postgres.POSTGRES_DB}`, `${name}: the owner through PgBouncer`)
    t.equal(env.DATABASE_REQUEST_URL, `${request}@pgbouncer:6432/${postgres.POSTGRES_DB}`, `${name}: requests through PgBouncer`)
    t.equal(env.DATABASE_POOL_MODE, 'transaction', `${name} expects transaction pooling`)
  }
  const migrate = services.migrate!.environment!
  t.equal(migrate.DATABASE_URL, `${owner}@postgres:5432/${postgres.POSTGRES_DB}`, 'migrate: the owner, directly')
  t.not(migrate.DATABASE_POOL_MODE, 'transaction', 'migrate holds a session')
  // PgBouncer logs in with the same passwords the database was given.
  t.equal(pgbouncer.POSTGRES_USER, postgres.POSTGRES_USER)
  t.equal(pgbouncer.POSTGRES_PASSWORD, postgres.POSTGRES_PASSWORD)
  t.equal(pgbouncer.REQUEST_LOGIN_PASSWORD, postgres.REQUEST_LOGIN_PASSWORD)
  // One variable changes a password everywhere it is used.
  const changed = composed({ POSTGRES_PASSWORD: 'owner-secret', REQUEST_LOGIN_PASSWORD: 'request-secret' })
  t.equal(changed.postgres!.environment!.POSTGRES_PASSWORD, 'owner-secret')
  t.equal(changed.pgbouncer!.environment!.POSTGRES_PASSWORD, 'owner-secret')
  t.match(changed.migrate!.environment!.DATABASE_URL, /^postgres:\/\/tale:owner-secret@/)
  for (const name of APP_SERVICES) {
    t.match(changed[name]!.environment!.DATABASE_URL, /^postgres:\/\/tale:owner-secret@pgbouncer:/)
    t.match(changed[name]!.environment!.DATABASE_REQUEST_URL, /^postgres:\/\/api_login:request-secret@pgbouncer:/)
  }
  t.equal(changed.pgbouncer!.environment!.REQUEST_LOGIN_PASSWORD, 'request-secret')
})

t.test('PgBouncer pools by transaction, for the compose PostgreSQL, with the auth file its entrypoint writes', async (t) => {
  const ini = read('docker/pgbouncer/pgbouncer.ini')
  const setting = (name: string) => new RegExp(`^${name}\\s*=\\s*(.*?)\\s*$`, 'm').exec(ini)?.[1]
  t.equal(setting('pool_mode'), 'transaction')
  t.equal(setting('listen_port'), '6432')
  t.equal(setting('auth_type'), 'scram-sha-256')
  t.match(setting('\\*'), /host=postgres port=5432/, 'every database is the compose PostgreSQL\'s')
  const authFile = setting('auth_file')!
  t.ok(authFile, 'names its auth file')
  const entrypoint = read('docker/pgbouncer/entrypoint.sh')
  t.match(entrypoint, new RegExp(`auth_file=${authFile.replace(/[./]/g, '\\$&')}\\n`), 'the entrypoint writes that file')
  t.match(entrypoint, /exec pgbouncer \/etc\/pgbouncer\/pgbouncer\.ini/, 'and runs PgBouncer as the container\'s process')
  t.match(read('docker/pgbouncer.Dockerfile'), /apt-get install[^\n]*\bpgbouncer\b/, 'Debian\'s package')
})

t.test('the PgBouncer entrypoint writes each login\'s password, quotes and all, then hands over to PgBouncer', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'tale-pgbouncer-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  // The script as shipped, but writing into the scratch directory, and a stand-in
  // pgbouncer on the PATH that says what it was started with.
  const authFile = path.join(dir, 'userlist.txt')
  const script = read('docker/pgbouncer/entrypoint.sh').replace(/^auth_file=.*$/m, `auth_file=${authFile}`)
  await writeFile(path.join(dir, 'entrypoint.sh'), script)
  await writeFile(path.join(dir, 'pgbouncer'), '#!/bin/sh\necho "pgbouncer $*"\n', { mode: 0o755 })
  const env = { PATH: `${dir}:${process.env.PATH}`, POSTGRES_USER: 'tale', POSTGRES_PASSWORD: 'say "hi" $HOME \\ ok', REQUEST_LOGIN_PASSWORD: 'req' }
  const run = (vars: Record<string, string>) => spawnSync('sh', [path.join(dir, 'entrypoint.sh')], { env: vars, encoding: 'utf8' })
  const started = run(env)
  t.equal(started.status, 0, started.stderr)
  t.equal(started.stdout, 'pgbouncer /etc/pgbouncer/pgbouncer.ini\n', 'PgBouncer runs with the configuration file')
  t.equal(await readFile(authFile, 'utf8'), '"tale" "say ""hi"" $HOME \\ ok"\n"api_login" "req"\n')
  t.equal((await stat(authFile)).mode & 0o777, 0o600, 'only its owner reads the passwords')
  const missing = run({ PATH: env.PATH, POSTGRES_USER: 'tale', POSTGRES_PASSWORD: 'x' })
  t.not(missing.status, 0, 'a missing password stops the container')
  t.match(missing.stderr, /REQUEST_LOGIN_PASSWORD/)
})

t.test('PostgreSQL preloads pg_cron and has pgvector and rum', async (t) => {
  const dockerfile = read('docker/postgres.Dockerfile')
  for (const extension of ['cron', 'pgvector', 'rum']) t.match(dockerfile, new RegExp(`postgresql-15-${extension}\\b`))
  t.match(dockerfile, /shared_preload_libraries=pg_cron/)
  t.match(dockerfile, new RegExp(`cron\\.database_name=${services.postgres!.environment!.POSTGRES_DB}"`))
  // The stack's command replaces the image's: it must keep the preload and the database.
  const command = services.postgres!.command as string[]
  const settings = (of: string[]) => of.flatMap((word, i) => (of[i - 1] === '-c' ? [word] : []))
  t.equal(command[0], 'postgres', 'the stack runs postgres')
  for (const setting of settings(JSON.parse(/^CMD\s+(\[.*\])$/m.exec(dockerfile)![1]!) as string[])) {
    t.ok(settings(command).includes(setting), `the stack keeps the image's ${setting}`)
  }
  t.ok(settings(command).includes('shared_buffers=512MB'), 'shared buffers of 512 MB by default')
  t.ok(settings(composed({ POSTGRES_SHARED_BUFFERS: '4GB' }).postgres!.command as string[]).includes('shared_buffers=4GB'),
    'POSTGRES_SHARED_BUFFERS sizes them')
  t.equal(services.postgres!.shm_size, '256mb', 'room in /dev/shm for parallel queries')
})

t.test('MinIO\'s bucket is the one the service uses, made with the credentials the service uses', async (t) => {
  const minio = services.minio!.environment!
  const env = services.api!.environment!
  t.same(services['minio-setup']!.command, ['mb', '--ignore-existing', `store/${env.S3_BUCKET}`])
  t.equal(services['minio-setup']!.environment!.MC_HOST_store, `http://${minio.MINIO_ROOT_USER}:${minio.MINIO_ROOT_PASSWORD}@minio:9000`)
  t.equal(env.S3_ENDPOINT, 'http://minio:9000')
  t.equal(env.S3_ACCESS_KEY_ID, minio.MINIO_ROOT_USER)
  t.equal(env.S3_SECRET_ACCESS_KEY, minio.MINIO_ROOT_PASSWORD)
  t.same(services['minio-setup']!.depends_on, { minio: { condition: 'service_healthy' } })
})

t.test('API_REPLICAS and WORKER_REPLICAS scale the api and the worker, from 1 to 16, and reach their processes', async (t) => {
  for (const [service, variable] of [['api', 'API_REPLICAS'], ['worker', 'WORKER_REPLICAS']] as const) {
    const expression = String(raw.services[service]!.deploy?.replicas)
    const [, name, fallback] = /^\$\{([A-Z_]+):-(\d+)\}$/.exec(expression) ?? []
    t.equal(name, variable, `${service} replicas are ${variable}`)
    t.ok(Number(fallback) >= 1 && Number(fallback) <= 16, `${variable} defaults to ${fallback}, within 1 to 16`)
    t.equal(Number(composed({ [variable]: '7' })[service]!.deploy!.replicas), 7, `${variable}=7 runs 7`)
    for (const app of APP_SERVICES) {
      t.equal(raw.services[app]!.environment![variable], expression, `${app} is told ${variable} as compose counts it`)
    }
  }
  // The processes check what they are handed: the defaults pass, a count out of range stops them.
  const env = services.api!.environment!
  const config = loadConfig({ API_REPLICAS: env.API_REPLICAS!, WORKER_REPLICAS: env.WORKER_REPLICAS! })
  t.equal(config.API_REPLICAS, Number(env.API_REPLICAS))
  t.throws(() => loadConfig({ API_REPLICAS: composed({ API_REPLICAS: '17' }).api!.environment!.API_REPLICAS! }), /API_REPLICAS: must be a whole number from 1 to 16/)
})

t.test('the API forwards metrics to the internal services by their compose names', async (t) => {
  const env = services.api!.environment!
  t.equal(env.INDEXING_URL, `http://indexing:${services.indexing!.environment!.INDEXING_PORT}`)
  t.equal(env.CRAWLER_URL, `http://crawler:${services.crawler!.environment!.CRAWLER_PORT}`)
})

// ---- docker/proxy/nginx.conf --------------------------------------------------

interface Directive { name: string; args: string[]; block?: Directive[] }

/** nginx's configuration syntax: directives ending in `;` or holding a `{ }` block, quotes, # comments. */
function parseNginx(text: string): Directive[] {
  const tokens: string[] = []
  for (const [, single, double, mark, word] of text.matchAll(/#[^\n]*|'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|([{};])|([^\s{};'"#]+)/g)) {
    const token = single ?? double ?? mark ?? word
    if (token !== undefined) tokens.push(token)
  }
  let at = 0
  const block = (): Directive[] => {
    const directives: Directive[] = []
    while (at < tokens.length && tokens[at] !== '}') {
      const name = tokens[at++]!
      const args: string[] = []
      while (at < tokens.length && tokens[at] !== ';' && tokens[at] !== '{') args.push(tokens[at++]!)
      if (tokens[at++] === '{') {
        directives.push({ name, args, block: block() })
        at++
      } else directives.push({ name, args })
    }
    return directives
  }
  return block()
}

const only = (directives: Directive[], name: string, args?: string[]) => {
  const found = directives.filter((d) => d.name === name && (!args || JSON.stringify(d.args) === JSON.stringify(args)))
  if (found.length !== 1) throw new Error(`expected one ${name} ${args?.join(' ') ?? ''}, found ${found.length}`)
  return found[0]!
}

const nginx = parseNginx(read('docker/proxy/nginx.conf'))
const http = only(nginx, 'http').block!
const server = only(http, 'server').block!
const rootLocation = only(server, 'location', ['/']).block!
/** A directive's arguments where the API's requests meet it: the location, else the server, else http. */
const effective = (name: string) => [rootLocation, server, http].map((scope) => scope.find((d) => d.name === name)).find(Boolean)?.args

/** nginx sizes (36m) in bytes and times (900s, 1h) in milliseconds. */
const bytes = (size: string) => Number(/^(\d+)/.exec(size)![1]) * ({ k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[size.slice(-1).toLowerCase()] ?? 1)
const milliseconds = (time: string) => {
  const [, count, unit] = /^(\d+)(ms|s|m|h|d)?$/.exec(time)!
  return Number(count) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[unit ?? 's']!
}

const routes = allRoutes(null as never, loadConfig({ DATABASE_URL: 'postgres://unused', PORT: '0' }), null)

t.test('the nginx parser reads directives, blocks, quotes and comments', async (t) => {
  t.same(parseNginx(`a 1 "x y"; # note ; {\nb { c 'd;}'; }`), [
    { name: 'a', args: ['1', 'x y'] },
    { name: 'b', args: [], block: [{ name: 'c', args: ['d;}'] }] },
  ])
  t.equal(bytes('36m'), 36 * 1024 * 1024)
  t.equal(milliseconds('900'), 900_000)
  t.equal(milliseconds('1h'), 3_600_000)
})

t.test('the proxy publishes port 3000 for the API replicas, which publish none of their own', async (t) => {
  t.same(services.proxy!.ports, ['3000:3000'])
  t.ok(services.proxy!.volumes!.includes('./docker/proxy/nginx.conf:/etc/nginx/nginx.conf:ro'), 'it runs docker/proxy/nginx.conf')
  t.equal(services.api!.ports, undefined, 'replicas cannot share a host port')
  t.same(only(server, 'listen').args, ['3000'])
})

t.test('the API trusts X-Forwarded-For from the proxy\'s fixed address only, which the proxy appends to', async (t) => {
  const edge = services.proxy!.networks as Record<string, { ipv4_address?: string }>
  const networks = Object.keys(edge)
  t.equal(networks.length, 1, 'the proxy is on one network')
  const address = edge[networks[0]!]!.ipv4_address
  t.ok(address, 'at a fixed address')
  t.equal(services.api!.environment!.TRUSTED_PROXIES, address, 'the API trusts that address and nothing else')
  t.ok((services.api!.networks as string[]).includes(networks[0]!), 'the replicas are on the proxy\'s network')
  for (const [name, service] of Object.entries(services)) {
    if (name === 'api' || name === 'proxy') continue
    const on = Array.isArray(service.networks) ? service.networks : Object.keys(service.networks ?? {})
    t.notOk(on.includes(networks[0]!), `${name} is not on it, so it cannot pose as the proxy`)
  }
  const forwarded = [...rootLocation, ...server, ...http].filter((d) => d.name === 'proxy_set_header' && d.args[0] === 'X-Forwarded-For')
  t.same(forwarded.map((d) => d.args), [['X-Forwarded-For', '$proxy_add_x_forwarded_for']],
    'the proxy appends the peer it saw, so the rightmost entry is the client')
})

t.test('the proxy balances over every api replica, re-reading Docker\'s DNS', async (t) => {
  t.same(effective('resolver')?.[0], '127.0.0.11', 'Docker\'s embedded DNS')
  const proxyPass = only(rootLocation, 'proxy_pass').args[0]!
  const upstreamName = /^http:\/\/([\w-]+)$/.exec(proxyPass)?.[1]
  t.ok(upstreamName, `proxy_pass ${proxyPass} names an upstream`)
  const upstream = only(http, 'upstream', [upstreamName!]).block!
  t.same(only(upstream, 'server').args, [`api:${services.api!.environment!.PORT}`, 'resolve'], 'every address of the api service, re-resolved')
  t.ok(upstream.some((d) => d.name === 'zone'), 'a re-resolved upstream needs a shared zone')
})

t.test('the proxy drops an idle connection to a replica before the API would close it', async (t) => {
  const upstream = only(http, 'upstream', ['api']).block!
  t.ok(upstream.some((d) => d.name === 'keepalive'), 'connections to the replicas are reused')
  const api = createApp({ config: loadConfig({ DATABASE_URL: 'postgres://unused', PORT: '0' }), requests: null as never, routes: [], log: createLogger('silent') })
  const proxyIdle = milliseconds(only(upstream, 'keepalive_timeout').args[0]!)
  t.ok(proxyIdle < api.keepAliveTimeout, `the proxy lets go after ${proxyIdle} ms, the API after ${api.keepAliveTimeout} ms`)
})

t.test('the proxy answers /health itself, as the API\'s /health does', async (t) => {
  const health = only(server, 'location', ['=', '/health']).block!
  const [status, body] = only(health, 'return').args
  t.equal(status, '200')
  const api = routes.find((route) => route.method === 'GET' && route.path === '/health') as unknown as { handle: () => Promise<{ body: unknown }> }
  t.same(JSON.parse(body!.replace(/\\n$/, '')), (await api.handle()).body)
  t.notOk(health.some((d) => d.name === 'proxy_pass'), 'no replica is asked')
})

t.test('the proxy streams responses and passes the API\'s largest body and its time limits', async (t) => {
  t.same(effective('proxy_buffering'), ['off'], 'server-sent events are not held back')
  t.same(effective('proxy_http_version'), ['1.1'])
  const largest = Math.max(...routes.filter((route) => route.method !== 'GET').map((route) => route.bodyLimit ?? DEFAULT_BODY_LIMIT))
  const allowed = bytes(effective('client_max_body_size')![0]!)
  t.ok(allowed >= largest, `client_max_body_size (${allowed}) lets the largest body (${largest}) through`)
  t.ok(allowed < largest + 1024 * 1024, 'and is no larger than the API would take, to the MiB')
  // One header line as long as the API takes fits a buffer.
  const [, headerBuffer] = effective('large_client_header_buffers')!
  t.ok(bytes(headerBuffer!) >= MAX_HEADER_BYTES, `a header line of ${MAX_HEADER_BYTES} bytes reaches the API`)
  const requestTimeout = loadConfig({}).REQUEST_TIMEOUT_MS
  for (const name of ['client_header_timeout', 'client_body_timeout', 'send_timeout', 'proxy_send_timeout', 'proxy_read_timeout']) {
    const value = effective(name)?.[0]
    t.ok(value !== undefined && milliseconds(value) >= requestTimeout, `${name} (${value ?? 'nginx\'s default'}) gives a request the API's ${requestTimeout} ms`)
  }
})
