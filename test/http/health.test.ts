import t from 'tap'
import { startTestService } from '../lib/service.ts'

t.test('health and status endpoints are keyless and carry no version header', async (t) => {
  const service = await startTestService(t)
  for (const path of ['/health', '/api/health', '/status', '/status.json']) {
    const res = await service.request('GET', path)
    t.equal(res.status, 200, path)
    t.equal(res.headers.get('x-service-api-version'), null, `${path} has no version header`)
    t.ok(res.headers.get('x-request-id'), `${path} has a request id`)
  }
  const status = await service.request('GET', '/status.json')
  t.equal(status.body.components.database, 'up')
})

t.test('/api/health answers 503 when the database does not answer', async (t) => {
  const service = await startTestService(t)
  await service.db.cutOff()
  const res = await service.request('GET', '/api/health')
  t.equal(res.status, 503)
  t.equal((await service.request('GET', '/health')).status, 200, 'the proxy itself still runs')
})
