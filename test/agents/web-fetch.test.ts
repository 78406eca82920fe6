// An agent's web.fetch (server/core/agents/web-fetch.ts) keeps connection pools of its
// own: a keep-alive socket another part of the process opened to an internal host
// never carries a fetch past the address guard.
import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { fetchPublicPage } from '../../server/core/agents/web-fetch.ts'

const server = http.createServer((_req, res) => { res.writeHead(200, { 'content-type': 'text/plain' }); res.end('internal secret') })
server.keepAliveTimeout = 30_000
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
const port = (server.address() as AddressInfo).port

t.test('a socket kept alive by the global agent is not reused past the guard', async (t) => {
  // Another part of the process talks to the internal host by name and keeps the socket.
  await new Promise<void>((resolve, reject) => {
    http.get(`http://localhost:${port}/`, { agent: http.globalAgent }, (res) => { res.resume(); res.on('end', resolve) }).on('error', reject)
  })
  t.ok(Object.keys(http.globalAgent.freeSockets).some((name) => name.includes(`localhost:${port}`)), 'the global agent holds a free socket')
  const answer = await fetchPublicPage(`http://localhost:${port}/`, 1024, AbortSignal.timeout(5_000))
  t.match(answer, { error: /is not a public address/ }, 'the fetch makes its own connection, which the guard refuses')
})
