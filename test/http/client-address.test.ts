// The client's address behind a trusted reverse proxy (TRUSTED_PROXIES): the budgets
// keyed by address count each client apart, and X-Forwarded-For from anyone else is
// ignored, so a client cannot pick a fresh address per attempt.
import t from 'tap'
import { world } from '../lib/world.ts'
import { acme } from '../lib/fixtures.ts'
import { pinClock } from '../lib/db.ts'
import { clientAddress, resolveClientAddress, trustedProxies } from '../../server/transport/client-address.ts'
import type { IncomingMessage } from 'node:http'

const request = (peer: string, forwarded?: string) =>
  ({ socket: { remoteAddress: peer }, headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded } }) as unknown as IncomingMessage

t.test('the address is read right to left through trusted hops only', async (t) => {
  const proxies = trustedProxies('10.0.0.1, 172.30.240.0/24')
  t.equal(resolveClientAddress(request('10.0.0.1', '203.0.113.7'), proxies), '203.0.113.7', 'the hop the proxy appended')
  t.equal(resolveClientAddress(request('10.0.0.1', '198.51.100.1, 203.0.113.7'), proxies), '203.0.113.7',
    'what the client wrote itself, left of its own address, is not believed')
  t.equal(resolveClientAddress(request('10.0.0.1', '203.0.113.7, 172.30.240.5'), proxies), '203.0.113.7', 'through a second trusted hop')
  t.equal(resolveClientAddress(request('198.51.100.9', '203.0.113.7'), proxies), '198.51.100.9', 'a peer that is no trusted proxy is the client')
  t.equal(resolveClientAddress(request('::ffff:10.0.0.1', '203.0.113.7'), proxies), '203.0.113.7', 'an IPv4 proxy seen as a mapped IPv6 address')
  t.equal(resolveClientAddress(request('10.0.0.1', 'not-an-address'), proxies), '10.0.0.1', 'a hop that is no address ends the walk')
  t.equal(resolveClientAddress(request('10.0.0.1'), proxies), '10.0.0.1', 'no header: the proxy itself')
  t.equal(resolveClientAddress(request('10.0.0.1', '203.0.113.7'), null), '10.0.0.1', 'no trusted proxies: the header is ignored')
  const req = request('10.0.0.1', '203.0.113.7')
  resolveClientAddress(req, proxies)
  t.equal(clientAddress(req), '203.0.113.7', 'remembered for the request')
})

// Scale 0.05: two failed attempts spend an address's failed-authentication budget.
const guesses = async (service: Awaited<ReturnType<typeof world>>['service'], from: string) => {
  for (let i = 0; i < 2; i++) {
    t.equal((await service.request('GET', '/api/v1/projects', { key: 'tale_guess', headers: { 'x-forwarded-for': from } })).status, 401)
  }
}

t.test('behind a trusted proxy, one client spends only its own failed-authentication budget', async (t) => {
  const { service, seeded } = await world(t, { env: { RATE_LIMIT_SCALE: '0.05', TRUSTED_PROXIES: '127.0.0.1' }, projects: [], seed: acme() })
  await pinClock(service.db.owner, Date.now())
  const key = seeded.users['olive@acme.test']!.keys.main
  await guesses(service, '203.0.113.7')
  t.equal((await service.request('GET', '/api/v1/projects', { key, headers: { 'x-forwarded-for': '203.0.113.7' } })).status, 429,
    'the guesser is refused')
  t.equal((await service.request('GET', '/api/v1/projects', { key, headers: { 'x-forwarded-for': '203.0.113.8' } })).status, 200,
    'another client behind the same proxy is not')
})

t.test('without trusted proxies X-Forwarded-For changes nothing', async (t) => {
  const { service, seeded } = await world(t, { env: { RATE_LIMIT_SCALE: '0.05' }, projects: [], seed: acme() })
  await pinClock(service.db.owner, Date.now())
  await guesses(service, '203.0.113.7')
  t.equal((await service.request('GET', '/api/v1/projects', { key: seeded.users['olive@acme.test']!.keys.main,
    headers: { 'x-forwarded-for': '203.0.113.8' } })).status, 429, 'a claimed address does not buy a fresh budget')
})

t.test('TRUSTED_PROXIES must be addresses or CIDR ranges', async (t) => {
  const { loadConfig } = await import('../../server/core/config.ts')
  t.equal(loadConfig({ TRUSTED_PROXIES: '10.0.0.1, 172.30.240.0/24, ::1' }).TRUSTED_PROXIES, '10.0.0.1, 172.30.240.0/24, ::1')
  for (const bad of ['proxy.internal', '10.0.0.0/33', '10.0.0.1/8/1']) {
    t.throws(() => loadConfig({ TRUSTED_PROXIES: bad }), { message: /TRUSTED_PROXIES: must be comma-separated IP addresses/ }, `${bad} is refused`)
  }
})
