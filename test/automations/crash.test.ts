// A worker killed mid-run: the run still completes, and every step it had committed
// ran exactly once (only the step in flight runs again).
import t from 'tap'
import http from 'node:http'
import { spawn } from 'node:child_process'
import type { AddressInfo } from 'node:net'
import { deploy, waitForRun } from '../lib/automations.ts'
import { world } from '../lib/world.ts'
import { startWorker } from '../../jobs/worker.ts'
import { Logger } from 'graphile-worker'

t.test('a run survives its worker being killed mid-step', async (t) => {
  const hits = new Map<string, number>()
  let firstHang: (() => void) | null = null
  const hungUp = new Promise<void>((resolve) => { firstHang = resolve })
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/'
    hits.set(path, (hits.get(path) ?? 0) + 1)
    // The first call of the second step never answers: its worker dies meanwhile.
    if (path === '/second' && hits.get(path) === 1) {
      firstHang?.()
      return
    }
    res.setHeader('content-type', 'application/json')
    res.end('{"ok": true}')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  const { service, dev } = await world(t)
  await deploy(await dev.mcp(), {
    name: 'ops/durable',
    steps: [
      { slug: 'first', type: 'http', config: { method: 'POST', url: `${base}/first` }, next: { success: 'second' } },
      { slug: 'second', type: 'http', config: { method: 'POST', url: `${base}/second` }, next: { success: 'third' } },
      { slug: 'third', type: 'http', config: { method: 'POST', url: `${base}/third` }, next: { success: 'end' } },
      { slug: 'end', type: 'output', config: { mapping: { done: true } } },
    ],
  })

  // A worker in a process of its own, as `npm run worker` runs it.
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts', 'worker'], {
    env: { ...process.env, DATABASE_URL: service.db.url, S3_ENDPOINT: 'none', LOG_LEVEL: 'silent' },
    stdio: 'ignore',
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  t.teardown(() => { child.kill('SIGKILL') })

  const started = await dev.post('/api/v1/automations/ops__durable/runs', {})
  await hungUp
  child.kill('SIGKILL')
  await exited
  const orphaned = (await dev.get(`/api/v1/runs/${started.body.runId}`)).body
  t.equal(orphaned.status, 'running', 'the run was left running by the dead worker')
  t.same(orphaned.trace.map((e: { slug: string }) => e.slug), ['first'], 'with its first step committed')

  // What the recover_runs task does every minute, here without waiting for staleness.
  const worker = await startWorker(service.db.url, { objectStore: null, crontab: false, logger: new Logger(() => () => {}) })
  t.teardown(() => worker.stop())
  const [recovered] = await service.db.owner`select app.worker_recover_runs('0 seconds') as n`
  t.equal(recovered!.n, 1, 'the orphaned run is queued again')

  const run = await waitForRun(dev.get, started.body.runId)
  t.match(run, { status: 'completed', output: { done: true } })
  t.same(run.trace.map((e: { slug: string }) => e.slug), ['first', 'second', 'third', 'end'])
  t.equal(hits.get('/first'), 1, 'the committed step ran once')
  t.equal(hits.get('/second'), 2, 'the step in flight ran again')
  t.equal(hits.get('/third'), 1)
})
