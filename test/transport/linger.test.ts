// An answer sent before its request's body has arrived, on a connection that then
// closes (server/core/http-linger.ts): the client still reads the whole answer, even
// though it goes on sending its body after the answer was written. Without the
// lingering close the server's kernel resets the connection when those bytes reach a
// closed socket, and the client loses what it had not read yet.
import t from 'tap'
import http from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { lingerOnUnreadBody } from '../../server/core/http-linger.ts'

const ANSWER = Buffer.alloc(2 * 1024 * 1024, 'a')
const BODY_BYTES = 4 * 1024 * 1024

async function serve(linger: boolean): Promise<{ port: number; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (linger) lingerOnUnreadBody(req, res)
    // Answers at once and reads no body, as a route with no body does.
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': ANSWER.length, connection: 'close' })
    res.end(ANSWER)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}

/** Sends the headers and a first piece of the body, the rest once the answer begins, and reads the answer slowly. */
function exchange(port: number): Promise<{ received: number; error?: string }> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port })
    let received = 0
    let sentRest = false
    socket.write(`GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${BODY_BYTES}\r\n\r\n`)
    socket.write(Buffer.alloc(1024, ' '))
    socket.on('data', (data) => {
      received += data.length
      if (sentRest) return
      sentRest = true
      // The client is behind: it reads nothing more until its body is out.
      socket.pause()
      socket.write(Buffer.alloc(BODY_BYTES - 1024, ' '), () => {
        setTimeout(() => socket.resume(), 200)
      })
    })
    socket.on('error', (error: NodeJS.ErrnoException) => resolve({ received, error: error.code ?? error.message }))
    socket.on('end', () => {
      socket.end()
      resolve({ received })
    })
  })
}

t.test('the answer arrives whole while the client is still sending the body it did not need', async (t) => {
  const server = await serve(true)
  t.teardown(server.close)
  for (let round = 0; round < 3; round++) {
    const outcome = await exchange(server.port)
    t.equal(outcome.error, undefined, `round ${round}: no reset`)
    t.ok(outcome.received > ANSWER.length, `round ${round}: the whole answer (${outcome.received} bytes with the head)`)
  }
})

t.test('a request without a body is left alone', async (t) => {
  const res = { once: () => t.fail('no hook for a request with no body') } as unknown as http.ServerResponse
  lingerOnUnreadBody({ headers: {} } as http.IncomingMessage, res)
  lingerOnUnreadBody({ headers: { 'content-length': '0' } } as unknown as http.IncomingMessage, res)
  t.pass()
})

t.test('without the linger the same exchange loses the answer (the case the linger exists for)', async (t) => {
  const server = await serve(false)
  t.teardown(server.close)
  const outcome = await exchange(server.port)
  t.ok(outcome.received < ANSWER.length, `the plain close reset the connection before the answer was read (${outcome.error ?? 'no error'}, ${outcome.received} bytes)`)
})
