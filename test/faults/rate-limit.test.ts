// The rate budgets hold against ten times their size, sent at once from 50
// connections spread over two API processes: the buckets live in PostgreSQL, so both
// processes draw on one budget, and no more requests are served than it holds. Every
// refusal is the documented 429 (RATE_LIMITED, the error envelope, Retry-After), and a
// refused write has no effect.
import t from 'tap'
import { acme, person } from '../lib/fixtures.ts'
import { pinClock } from '../lib/db.ts'
import { limit } from '../../server/core/limits.ts'
import { agents, call, pooled, seededDatabase, spawnApi, type Answer } from './spawned-service.ts'

/** Budgets at a quarter of their size keep ten times a budget a few hundred requests. */
const SCALE = 0.25
const CONNECTIONS = 50

/** A 429 as the spec has it: RATE_LIMITED in the error envelope, with its request id and Retry-After in whole seconds. */
function wellFormedRefusal(answer: Answer): boolean {
  return answer.status === 429 && answer.body?.code === 'RATE_LIMITED' && typeof answer.body.error === 'string'
    && typeof answer.body.requestId === 'string' && /^[1-9]\d*$/.test(String(answer.headers['retry-after']))
}

t.test('two API processes hold one budget against ten times its size', async (t) => {
  const { db, seeded } = await seededDatabase(t, {
    ...acme(), users: [person('olive@acme.test', [{ org: 'acme', role: 'owner' }], ['one', 'two']),
      person('adam@acme.test', [{ org: 'acme', role: 'admin' }])], teams: [],
  })
  const keys = seeded.users['olive@acme.test']!.keys
  // A user whose own budgets are untouched.
  const adam = seeded.users['adam@acme.test']!.keys.main!
  const env = { RATE_LIMIT_SCALE: String(SCALE) }
  const apis = await Promise.all([spawnApi(t, db, env), spawnApi(t, db, env)])
  // A pinned clock refills nothing: the window lasts as long as the test.
  await pinClock(db.owner, Date.now())
  const connections = agents(t, 2, CONNECTIONS / 2)

  t.test('the general budget of one user, drawn through both keys on both processes', async (t) => {
    const budget = limit('rate.general.burst') * SCALE
    // Reads and project creates in turn, each key on each process.
    const answers = await pooled(10 * budget, CONNECTIONS, (i) => {
      const side = i % 2
      const key = (i >> 1) % 2 === 0 ? keys.one! : keys.two!
      return i % 3 === 0
        ? call(connections[side]!, apis[side]!.url, 'POST', '/api/v1/projects', { key, body: { name: `burst ${i}` } })
        : call(connections[side]!, apis[side]!.url, 'GET', '/api/v1/me', { key })
    })
    const served = answers.filter((a) => a.status < 300)
    t.equal(served.length, budget, `exactly the budget (${budget}) is served out of ${answers.length}, whichever process and key`)
    t.same(answers.filter((a) => a.status >= 500), [], 'no 5xx')
    t.same(answers.filter((a) => a.status >= 300 && !wellFormedRefusal(a)), [],
      'every other answer is 429 RATE_LIMITED with the envelope and Retry-After')
    const created = served.filter((a) => a.status === 201).length
    const [row] = await db.owner<{ n: number }[]>`select count(*)::int as n from app.projects where name like 'burst %'`
    t.equal(row!.n, created, 'only the served creates wrote a project')
    t.ok(served.some((a) => a.status === 201) && answers.some((a) => a.status === 429 && a.body?.code === 'RATE_LIMITED'),
      'both reads and writes met the limit')
  })

  t.test('the failed-authentication budget of one address, then even a valid key is refused', async (t) => {
    const budget = limit('rate.authFailures.burst') * SCALE
    const answers = await pooled(10 * budget, CONNECTIONS, (i) =>
      call(connections[i % 2]!, apis[i % 2]!.url, 'GET', '/api/v1/me', { key: `tale_wrong_${i}` }))
    t.equal(answers.filter((a) => a.status === 401).length, budget, `exactly the budget (${budget}) of failures is answered 401`)
    t.same(answers.filter((a) => a.status !== 401 && !wellFormedRefusal(a)), [], 'the rest 429 RATE_LIMITED, well formed')
    for (const api of apis) {
      const valid = await call(connections[0]!, api.url, 'GET', '/api/v1/me', { key: adam })
      t.ok(wellFormedRefusal(valid), 'a valid key from the spent address is refused on either process')
    }
  })
})
