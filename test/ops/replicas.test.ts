// API_REPLICAS and WORKER_REPLICAS, the counts docker-compose.yml scales the api and
// worker services by, are 1 to 16 each (the spec); compose hands them to every process,
// so one outside that range stops start-up with a message naming it.
import t from 'tap'
import { ConfigError, loadConfig } from '../../server/core/config.ts'
import { spawnMain } from './process.ts'

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env)
    return []
  } catch (error) {
    if (error instanceof ConfigError) return error.problems
    throw error
  }
}

t.test('every count from 1 to 16 is accepted, as a number', async (t) => {
  for (let count = 1; count <= 16; count++) {
    const config = loadConfig({ API_REPLICAS: String(count), WORKER_REPLICAS: String(count) })
    t.equal(config.API_REPLICAS, count)
    t.equal(config.WORKER_REPLICAS, count)
  }
  const unset = loadConfig({})
  t.equal(unset.API_REPLICAS, undefined, 'unset outside compose')
  t.equal(unset.WORKER_REPLICAS, undefined)
})

t.test('a count outside 1 to 16, or not a whole number, is refused by name', async (t) => {
  for (const name of ['API_REPLICAS', 'WORKER_REPLICAS']) {
    for (const bad of ['0', '17', '100', '-1', '2.5', 'two', ' 2']) {
      t.same(problemsOf({ [name]: bad }), [`${name}: must be a whole number from 1 to 16`], `${name}=${JSON.stringify(bad)}`)
    }
  }
})

t.test('a misspelt replicas variable is an unknown setting', async (t) => {
  t.same(problemsOf({ API_REPLICA: '2' }), ['API_REPLICA: unknown setting'])
  t.same(problemsOf({ WORKER_REPLICA: '2' }), ['WORKER_REPLICA: unknown setting'])
  t.same(problemsOf({ API_KEY: 'the environment\'s own' }), [], 'other API_ variables are left alone')
})

t.test('a process started with a count out of range exits 1 naming it', async (t) => {
  const started = spawnMain(['api'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere', API_REPLICAS: '17', S3_ENDPOINT: 'none' })
  t.equal((await started.closed).code, 1)
  t.match(started.lines.join('\n'), /API_REPLICAS: must be a whole number from 1 to 16/)
})
