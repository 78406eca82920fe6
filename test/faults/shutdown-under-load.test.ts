// SIGTERM to an API process under load drops no request it accepted: every request
// the server took (it logs a line for each) is answered whole, over kept-alive
// connections, reads and writes alike, and an upload still arriving when the signal
// comes is read to its end and answered. Only requests the server never took (new
// connections once it stopped listening) may fail, and only as connection failures.
import t from 'tap'
import http from 'node:http'
import net from 'node:net'
import { acme } from '../lib/fixtures.ts'
import { entry, message } from '../ops/process.ts'
import { seededDatabase, spawnApi } from './spawned-service.ts'

/** Concurrent kept-alive clients. */
const CLIENTS = 50
/** Requests answered before the signal is sent, so it lands in steady load. */
const WARM_UP = 300

interface Outcome {
  id: string
  method: string
  sentBeforeStop: boolean
  /** Set when the whole response arrived. */
  status?: number
  body?: any
  answeredAfterStop?: boolean
  /** Set when the request failed without a whole response: the error's code. */
  error?: string
}

t.test('SIGTERM under load answers every request the API accepted', async (t) => {
  const { db, seeded } = await seededDatabase(t, acme())
  const key = seeded.users['olive@acme.test']!.keys.main!
  // Budgets far above the load: a 429 here would only hide what is being tested.
  const api = await spawnApi(t, db, { RATE_LIMIT_SCALE: '1000' })

  let stopSent = false
  let serial = 0
  const outcomes: Outcome[] = []

  function send(agent: http.Agent, method: string, path: string, body?: unknown): Promise<Outcome> {
    const id = `load-${++serial}`
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
    const outcome: Outcome = { id, method, sentBeforeStop: !stopSent }
    return new Promise((resolve) => {
      const req = http.request({
        host: '127.0.0.1', port: api.port, method, path, agent,
        headers: {
          authorization: `Bearer ${key}`, 'x-request-id': id,
          ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
        },
      }, (res) => {
        const chunks: Buffer[] = []
        let ended = false
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => {
          ended = true
          outcome.status = res.statusCode
          outcome.answeredAfterStop = stopSent
          const text = Buffer.concat(chunks).toString('utf8')
          try {
            outcome.body = text ? JSON.parse(text) : undefined
          } catch {
            outcome.error = 'unparsable body'
          }
          resolve(outcome)
        })
        // A response cut short: its connection closed before the body's end.
        res.on('close', () => {
          if (ended) return
          outcome.status = res.statusCode
          outcome.error = 'response cut'
          resolve(outcome)
        })
        res.on('error', () => {})
      })
      req.on('error', (error: NodeJS.ErrnoException) => {
        outcome.error = error.code ?? error.message
        resolve(outcome)
      })
      req.end(payload)
    })
  }

  // Each client: one kept-alive connection, one request at a time, reads and writes
  // in turn, until a request of its fails (the server stopped taking connections).
  const agents: http.Agent[] = []
  t.teardown(() => { for (const agent of agents) agent.destroy() })
  const client = async (n: number) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    agents.push(agent)
    for (let i = n; ; i++) {
      const kind = i % 3
      const outcome = kind === 0 ? await send(agent, 'GET', '/api/v1/me')
        : kind === 1 ? await send(agent, 'GET', '/api/v1/projects?limit=5')
          : await send(agent, 'POST', '/api/v1/projects', { name: `load ${serial}` })
      outcomes.push(outcome)
      if (outcome.error !== undefined) return
    }
  }

  // The upload: a request already accepted on a kept-alive connection, its body half
  // sent when the signal comes.
  const upload = await rawConnection(api.port)
  upload.socket.write(`GET /api/v1/me HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\n\r\n`)
  t.match(await upload.response(), /^HTTP\/1\.1 200/, 'the upload connection was accepted and served')
  const uploadBody = Buffer.from(JSON.stringify({ name: 'slow upload' }) + ' '.repeat(512 * 1024))
  upload.socket.write(`POST /api/v1/projects HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\n`
    + `X-Request-Id: slow-upload\r\nContent-Type: application/json\r\nContent-Length: ${uploadBody.length}\r\n\r\n`)
  const half = Math.floor(uploadBody.length / 2)
  upload.socket.write(uploadBody.subarray(0, half))

  const clients = Array.from({ length: CLIENTS }, (_, n) => client(n))
  while (outcomes.filter((o) => o.status !== undefined).length < WARM_UP && outcomes.every((o) => o.error === undefined)) {
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  t.same(outcomes.filter((o) => o.error !== undefined), [], 'nothing failed before the signal')

  stopSent = true
  api.process.child.kill('SIGTERM')
  // The rest of the upload goes only once the server has stopped listening: it is
  // still read and answered.
  while (!(await refused(api.port))) await new Promise((resolve) => setTimeout(resolve, 20))
  upload.socket.write(uploadBody.subarray(half))
  const uploaded = await upload.response()
  t.match(uploaded, /^HTTP\/1\.1 201/, 'the upload in flight is answered after the listener closed')
  t.match(uploaded, /\r\nconnection: close\r\n/i, 'and told its connection closes')

  await Promise.all(clients)
  const end = await api.process.closed
  t.equal(end.code, 0, 'the process exits cleanly')
  t.ok(api.process.lines.some(message('stopped')), 'after saying it stopped')

  // What the server says it took: one line per request, aborted when it was cut.
  const logged = new Map<string, Record<string, any>>()
  for (const line of api.process.lines) {
    const parsed = entry(line)
    if (parsed?.message === 'request' && typeof parsed.requestId === 'string') logged.set(parsed.requestId, parsed)
  }
  const cut = [...logged.values()].filter((line) => line.aborted)
  t.same(cut, [], 'the server cut no request it took')
  t.equal(logged.get('slow-upload')?.status, 201)

  const answered = outcomes.filter((o) => o.error === undefined)
  const failed = outcomes.filter((o) => o.error !== undefined)
  t.same(answered.filter((o) => o.status! >= 500), [], 'no 5xx')
  t.same(answered.filter((o) => logged.get(o.id)?.status !== o.status), [],
    'every answer the clients read is one the server logged')
  t.same(failed.filter((o) => logged.has(o.id)), [], 'every request that failed is one the server never took')
  t.same(failed.filter((o) => !['ECONNREFUSED', 'ECONNRESET', 'EPIPE'].includes(o.error!)), [],
    'and it failed as a connection the server refused or closed unused')
  t.equal(answered.length, outcomes.filter((o) => logged.has(o.id)).length, 'every request the server took was answered')
  t.comment(`${answered.length} answered (${answered.filter((o) => o.sentBeforeStop && o.answeredAfterStop).length} in flight at the signal), `
    + `${failed.length} refused after the listener closed`)

  // Writes: exactly the projects whose creation was answered 201 exist.
  const created = answered.filter((o) => o.method === 'POST' && o.status === 201).map((o) => o.body.project.id as string)
  const rows = await db.owner<{ id: string }[]>`select id from app.projects where name like 'load %'`
  t.same(rows.map((r) => r.id).sort(), created.sort(), 'every project written was answered, and every answer was written')
})

/** Whether a new connection to the port is refused (the server stopped listening). */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.connect({ host: '127.0.0.1', port })
    probe.once('connect', () => { probe.destroy(); resolve(false) })
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'))
  })
}

/** A raw connection whose responses (each with Content-Length) are read one at a time. */
function rawConnection(port: number): Promise<{ socket: net.Socket; response: () => Promise<string> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port })
    let data = Buffer.alloc(0)
    let wake: () => void = () => {}
    let closed = false
    socket.on('data', (chunk: Buffer) => { data = Buffer.concat([data, chunk]); wake() })
    socket.on('close', () => { closed = true; wake() })
    socket.on('error', () => {})
    const response = async (): Promise<string> => {
      for (;;) {
        const head = data.indexOf('\r\n\r\n')
        if (head !== -1) {
          const length = Number(/content-length: *(\d+)/i.exec(data.subarray(0, head).toString('latin1'))?.[1] ?? 0)
          if (data.length >= head + 4 + length) {
            const whole = data.subarray(0, head + 4 + length).toString('utf8')
            data = data.subarray(head + 4 + length)
            return whole
          }
        }
        if (closed) throw new Error(`the connection closed before a whole response: ${data.toString('latin1').slice(0, 500)}`)
        await new Promise<void>((resolve) => { wake = resolve })
      }
    }
    socket.once('connect', () => resolve({ socket, response }))
    socket.once('error', reject)
  })
}
