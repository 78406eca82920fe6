// The container runs node itself (so SIGTERM reaches the service, as in
// shutdown.test.ts), its build context leaves local state out, and compose runs the
// API and the worker as separate services with health checks.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { root } from './process.ts'

const read = (file: string) => readFileSync(`${root}${file}`, 'utf8')

/** A service's block of docker-compose.yml: its lines indented under `  name:`. */
function service(compose: string, name: string): string {
  const lines = compose.split('\n')
  const start = lines.indexOf(`  ${name}:`)
  if (start === -1) return ''
  const end = lines.findIndex((line, i) => i > start && /^ {0,2}\S/.test(line))
  return lines.slice(start, end === -1 ? undefined : end).join('\n')
}

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

t.test('compose runs the API and the worker apart, each with a health check', async (t) => {
  const compose = read('docker-compose.yml')
  const api = service(compose, 'api')
  const worker = service(compose, 'worker')
  t.match(api, /command: \["api"\]/)
  t.match(worker, /command: \["worker"\]/)
  for (const [name, block] of [['api', api], ['worker', worker], ['postgres', service(compose, 'postgres')]] as const) {
    t.match(block, /\n {4}healthcheck:\n {6}test: \[/, `${name} has a health check`)
  }
  t.match(api, /\/api\/health/, 'the API is healthy when it answers and its database does')
})
