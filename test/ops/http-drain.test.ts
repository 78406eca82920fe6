// The drain every HTTP server of the service closes through (server/core/http-drain.ts):
// it stops listening, answers what it accepted with Connection: close, closes idle
// kept-alive connections, and cuts only what outlives the grace.
import t, { type Test } from 'tap'
import http from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { drainer, type DrainOptions } from '../../server/core/http-drain.ts'

/** Well past any test's life: a drain that waits for it never resolves within the suite. */
const NEVER = 3_600_000

interface Exchange {
  socket: net.Socket
  /** Every byte the server sent so far. */
  received: () => string
  /** Resolves once the server has sent this many complete responses. */
  responses: (count: number) => Promise<string[]>
  /** Resolves when the server ended or reset the connection: 'end' or the error code. */
  ended: Promise<string>
}

function connect(port: number): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port })
    let data = ''
    const waiting: (() => void)[] = []
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1')
      for (const wake of waiting.splice(0)) wake()
    })
    const ended = new Promise<string>((done) => {
      socket.on('end', () => done('end'))
      socket.on('error', (error: NodeJS.ErrnoException) => done(error.code ?? 'error'))
      socket.on('close', () => done('close'))
    })
    const split = () => data.split(/(?=HTTP\/1\.1 )/).filter((part) => /\r\n\r\n[\s\S]*$/.test(part) && complete(part))
    const responses = async (count: number) => {
      while (split().length < count) {
        await Promise.race([new Promise<void>((wake) => waiting.push(wake)), ended])
        if (socket.destroyed && split().length < count) throw new Error(`the connection closed after ${split().length} responses: ${data}`)
      }
      return split()
    }
    socket.once('connect', () => resolve({ socket, received: () => data, responses, ended }))
    socket.once('error', reject)
  })
}

/** A response whose body has arrived whole (every test response sends Content-Length). */
function complete(response: string): boolean {
  const at = response.indexOf('\r\n\r\n')
  const length = Number(/content-length: (\d+)/i.exec(response.slice(0, at))?.[1] ?? NaN)
  return at !== -1 && response.length - at - 4 >= length
}

const request = (path: string) => `GET ${path} HTTP/1.1\r\nHost: test\r\n\r\n`

/** A server whose /slow requests wait until released, and a drain of it. */
async function server(t: Test, options: DrainOptions = {}) {
  const held: (() => void)[] = []
  let arrived: () => void = () => {}
  const server = http.createServer((req, res) => {
    const answer = () => {
      res.setHeader('content-length', 2)
      res.end('ok')
    }
    if (req.url === '/slow') {
      held.push(answer)
      arrived()
    } else answer()
  })
  const drain = drainer(server, options)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.closeAllConnections(); server.close() })
  const port = (server.address() as AddressInfo).port
  const nextSlow = () => new Promise<void>((resolve) => { arrived = resolve })
  const refused = () => new Promise<boolean>((resolve) => {
    const probe = net.connect({ host: '127.0.0.1', port })
    probe.once('connect', () => { probe.destroy(); resolve(false) })
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'))
  })
  return { server, drain, port, held, nextSlow, refused }
}

t.test('a request in flight is answered after the server stopped listening, with Connection: close', async (t) => {
  const s = await server(t, { idleMs: NEVER })
  const client = await connect(s.port)
  const slow = s.nextSlow()
  client.socket.write(request('/slow'))
  await slow

  const drained = s.drain(NEVER)
  t.ok(await s.refused(), 'new connections are refused once the drain began')
  s.held.shift()!()
  const [answer] = await client.responses(1)
  t.match(answer, /^HTTP\/1\.1 200/, 'the accepted request is answered')
  t.match(answer, /connection: close/i, 'and told the connection closes')
  t.equal(await client.ended, 'end', 'the server closes the connection after it, cleanly')
  await drained
  t.pass('the drain ends once its last connection has closed, without waiting for the grace')
})

t.test('a request sent on a kept-alive connection during the drain is answered, then the connection closes', async (t) => {
  const s = await server(t, { idleMs: NEVER })
  const client = await connect(s.port)
  client.socket.write(request('/fast'))
  const [first] = await client.responses(1)
  t.notMatch(first, /connection: close/i, 'kept alive before the drain')

  const drained = s.drain(NEVER)
  t.ok(await s.refused(), 'the listener is gone')
  client.socket.write(request('/fast'))
  const [, second] = await client.responses(2)
  t.match(second, /^HTTP\/1\.1 200/)
  t.match(second, /connection: close/i)
  t.equal(await client.ended, 'end')
  await drained
})

t.test('an idle kept-alive connection is closed by the drain, not held until the grace', async (t) => {
  const s = await server(t, { idleMs: 0 })
  const client = await connect(s.port)
  client.socket.write(request('/fast'))
  await client.responses(1)
  const drained = s.drain(NEVER)
  t.equal(await client.ended, 'end', 'the server ends the idle connection')
  client.socket.end()
  await drained
  t.pass('and the drain completes')
})

t.test('a request still running when the grace runs out is cut, and the drain ends', async (t) => {
  const s = await server(t, { idleMs: NEVER })
  const client = await connect(s.port)
  const slow = s.nextSlow()
  client.socket.write(request('/slow'))
  await slow
  await s.drain(50)
  t.ok(['end', 'close', 'ECONNRESET'].includes(await client.ended), 'the connection was cut')
  t.equal(client.received(), '', 'with nothing answered')
})

t.test('draining twice is one drain', async (t) => {
  const s = await server(t)
  t.equal(s.drain(), s.drain())
  await s.drain()
})
