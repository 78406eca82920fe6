// Chat sends against the service as `npm start` runs it (the API and a worker in one
// process), with the built-in `local` model (`local-echo`), so the figures are the
// service's and not a provider's:
//
// - first part: one send at a time, each on a thread of its own; from the send's 202
//   to the first text of the answer being readable through
//   GET /api/v1/threads/{id}/messages/{replyMessageId}, polled every 2 ms;
// - sends: POST /api/v1/threads/{id}/messages at 32 connections, each with its own
//   Idempotency-Key, beside a floor that sends the server's statement (app.handle
//   with thread_send and the same arguments) through the request pool with no HTTP.
//
// A thread takes one send at a time: a send while its last turn is still streaming is
// refused 409 GENERATION_IN_PROGRESS. Sends can outrun the worker, whose backlog then
// grows for the whole load, so no cycle of threads is safe; every send goes to a
// thread that has had none, from a pool made up front. Each measurement starts with
// the previous one's turns settled and after a checkpoint.
//
// The pool belongs to many members, THREADS_PER_USER threads each, handed out one
// member after the other: every message read and write filters the caller's
// threads through the row-level security policy of thread_messages, whose cost grows
// with how many threads the caller has (see BENCHMARKS.md), so one caller owning the
// whole pool would measure that alone. At any moment the 32 connections send as one
// member (two at a change-over), drawing on one member's budget rows as the other
// sections' single key does.
import autocannon from 'autocannon'
import postgres from 'postgres'
import { requestPool } from '../server/core/db/connection.ts'
import { loadConfig } from '../server/core/config.ts'
import { rateBudgets } from '../server/auth/rate-budgets.ts'
import { generateApiKey, hashApiKey } from '../server/auth/credentials.ts'
import { callOperation } from '../server/transport/operation.ts'
import { loadConcurrently, statementsPerRequest, type Figures } from './measure.ts'

/** Sends timed one at a time for the first-part latency, after a few untimed ones. */
const TIMED_SENDS = Number(process.env.BENCH_CHAT_SENDS ?? 500)
const UNTIMED_SENDS = 20
/** How long the first-part poller waits between reads of the answer. */
const POLL_MS = 2
/** Threads made per second of load: above any send rate this machine reaches. */
const THREADS_PER_SECOND = 3000
/** Threads of each member who sends. */
const THREADS_PER_USER = Number(process.env.BENCH_CHAT_THREADS_PER_USER ?? 100)
/** Nine words: the local model streams them one by one. */
const CONTENT = 'The quick brown fox jumps over the lazy dog'

export interface ChatFigures {
  firstPart: { sends: number; p50: number; p99: number; max: number; sendP50: number; polls: number }
  http: Figures
  floor: Figures
  statements: number
  /** The worker on the HTTP load's turns: answers settled complete, per second from the load's start to the last. */
  answers: { sent: number; complete: number; completePerSecond: number }
  /** Threads sent to, and the members they belong to. */
  threads: number
  users: number
  threadsPerUser: number
}

/** A thread none has sent to yet, and its owner's API key. */
interface Turn { thread: string; key: string }

/** The pool of threads, handed out once each, one member's threads after the other's. */
class ThreadPool {
  private next = 0
  constructor(private readonly turns: Turn[]) {}
  take(): Turn {
    if (this.next >= this.turns.length) throw new Error(`the bench's ${this.turns.length} threads are all used; raise THREADS_PER_SECOND`)
    return this.turns[this.next++]!
  }
  get used(): number { return this.next }
  get users(): number { return Math.ceil(this.next / THREADS_PER_USER) }
}

// Members of the bench organization with a key each (made by the operator functions
// the admin CLI's seed calls, in one statement), and THREADS_PER_USER personal threads
// of each, as POST /api/v1/threads makes them (the bench connects as a superuser).
async function makeThreads(sql: postgres.Sql, count: number): Promise<ThreadPool> {
  const users = Math.ceil(count / THREADS_PER_USER)
  const keys = Array.from({ length: users }, () => generateApiKey())
  const made = await sql<{ id: string; n: number }[]>`
    with u as (
      select n, app.operator_user_create('chat-' || n || '@bench.test', 'Chat ' || n, null, true) as id
        from generate_series(1, ${users}) n
    ), m as (
      select u.n, u.id, app.operator_member_add(app.operator_org_id('bench'), u.id, 'member', false) from u
    )
    select m.id, m.n, app.operator_key_create(m.id, 'chat', (${keys.map(hashApiKey)}::text[])[m.n], null) from m order by m.n`
  const keyOf = new Map(made.map((u) => [u.id, keys[u.n - 1]!]))
  const rows = await sql<{ id: string; owner_id: string }[]>`
    insert into app.threads (organization_id, owner_id)
    select app.operator_org_id('bench'), u.id from unnest(${made.map((u) => u.id)}::uuid[]) u(id), generate_series(1, ${THREADS_PER_USER})
    returning id, owner_id`
  await sql`analyze app.threads`
  const byOwner = new Map<string, Turn[]>()
  for (const row of rows) {
    const turns = byOwner.get(row.owner_id) ?? []
    turns.push({ thread: row.id, key: keyOf.get(row.owner_id)! })
    byOwner.set(row.owner_id, turns)
  }
  return new ThreadPool([...byOwner.values()].flat())
}

let sequence = 0
const nextKey = () => `bench-chat-${++sequence}`
const sendBody = JSON.stringify({ content: CONTENT, model: 'local-echo' })

/** Waits until no thread is streaming: every turn sent so far has settled. */
async function settled(sql: postgres.Sql): Promise<void> {
  for (let i = 0; i < 3000; i++) {
    const [live] = await sql<{ n: number }[]>`select count(*)::int as n from app.threads where generation_status = 'streaming'`
    if (live!.n === 0) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error('the worker did not settle the turns in 300 s')
}

const at = (sorted: number[], q: number) =>
  Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 10) / 10

async function firstPart(port: number, threads: ThreadPool): Promise<ChatFigures['firstPart']> {
  const latencies: number[] = []
  const sends: number[] = []
  let polls = 0
  for (let i = 0; i < UNTIMED_SENDS + TIMED_SENDS; i++) {
    const { thread: id, key } = threads.take()
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const thread = `http://127.0.0.1:${port}/api/v1/threads/${id}`
    const began = performance.now()
    const res = await fetch(`${thread}/messages`, { method: 'POST', headers: { ...headers, 'idempotency-key': nextKey() }, body: sendBody })
    const sent = await res.json() as { replyMessageId?: string }
    const accepted = performance.now()
    if (res.status !== 202 || !sent.replyMessageId) throw new Error(`send: ${res.status} ${JSON.stringify(sent)}`)
    for (;;) {
      const read = await fetch(`${thread}/messages/${sent.replyMessageId}`, { headers })
      const reply = await read.json() as { parts?: unknown[] }
      if (i >= UNTIMED_SENDS) polls++
      if (read.status !== 200) throw new Error(`read: ${read.status} ${JSON.stringify(reply)}`)
      if (reply.parts && reply.parts.length > 0) break
      await new Promise((resolve) => setTimeout(resolve, POLL_MS))
    }
    if (i < UNTIMED_SENDS) continue
    latencies.push(performance.now() - accepted)
    sends.push(accepted - began)
  }
  latencies.sort((a, b) => a - b)
  sends.sort((a, b) => a - b)
  return { sends: TIMED_SENDS, p50: at(latencies, 0.5), p99: at(latencies, 0.99), max: at(latencies, 1),
           sendP50: at(sends, 0.5), polls: polls / TIMED_SENDS }
}

async function loadHttp(port: number, threads: ThreadPool, connections: number, seconds: number): Promise<Figures> {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`, connections, duration: seconds,
    requests: [{
      method: 'POST',
      setupRequest: (request) => {
        const { thread, key } = threads.take()
        return { ...request, path: `/api/v1/threads/${thread}/messages`, body: sendBody,
          headers: { ...request.headers, authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': nextKey() } }
      },
    }],
  })
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.non2xx + result.errors }
}

// The route's statement with the route's arguments ({...body, threadId, idempotencyKey}),
// its buckets (general and start) and the request pool's size.
async function loadFloor(url: string, threads: ThreadPool, scale: number, connections: number, seconds: number): Promise<Figures> {
  const sql = requestPool(url, loadConfig({ ...process.env, DATABASE_URL: url }).DATABASE_POOL_SIZE)
  const budgets = rateBudgets(scale)
  const hashes = new Map<string, string>()
  const figures = await loadConcurrently(connections, seconds, async () => {
    const { thread, key } = threads.take()
    // The server hashes the key of every request too; here once per member.
    let keyHash = hashes.get(key)
    if (!keyHash) hashes.set(key, keyHash = hashApiKey(key))
    const auth = { keyHash, orgSlug: null, source: '127.0.0.1', buckets: [budgets.general, budgets.start],
                   authFailures: budgets.authFailures, read: false, rateScale: budgets.scale }
    const args = { content: CONTENT, model: 'local-echo', threadId: thread, idempotencyKey: nextKey() }
    return !(await callOperation(sql, auth, 'thread_send', args)).error
  })
  await sql.end()
  return figures
}

/** Answers of the sends made since `since`: how many, how many settled complete, and at what rate. */
async function answersSince(sql: postgres.Sql, since: Date): Promise<ChatFigures['answers']> {
  const [row] = await sql<{ sent: number; complete: number; span: number | null }[]>`
    select count(*)::int as sent, count(*) filter (where status = 'complete')::int as complete,
           extract(epoch from max(updated_at) filter (where status = 'complete') - ${since}::timestamptz)::float8 as span
      from app.thread_messages where role = 'assistant' and created_at >= ${since}::timestamptz`
  return { sent: row!.sent, complete: row!.complete, completePerSecond: row!.complete / Math.max(row!.span ?? 1, 0.001) }
}

export async function benchChat(url: string, port: number, scale: number, connections: number, seconds: number): Promise<ChatFigures> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const warmUp = Math.min(5, seconds)
    const count = UNTIMED_SENDS + TIMED_SENDS + 201 + THREADS_PER_SECOND * (warmUp + 2 * seconds)
    const threads = await makeThreads(sql, count)
    await sql`checkpoint`
    const first = await firstPart(port, threads)
    await loadHttp(port, threads, connections, warmUp) // warm-up: plans cached, pools filled
    await settled(sql)
    await sql`checkpoint`
    const began = new Date()
    const http = await loadHttp(port, threads, connections, seconds)
    await settled(sql)
    const answers = await answersSince(sql, began)
    await sql`checkpoint`
    const floor = await loadFloor(url, threads, scale, connections, seconds)
    await settled(sql)
    const statements = await statementsPerRequest(url, scale, 200, async (serviceUrl) => {
      const { thread, key } = threads.take()
      await fetch(`${serviceUrl}/api/v1/threads/${thread}/messages`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': nextKey() },
        body: sendBody,
      }).then((res) => res.arrayBuffer())
    })
    await settled(sql)
    return { firstPart: first, http, floor, statements, answers, threads: threads.used, users: threads.users,
             threadsPerUser: THREADS_PER_USER }
  } finally {
    await sql.end()
  }
}
