// SIGTERM to the process `npm start` runs stops the service promptly: it says it is
// shutting down, and a job still running is released for another worker rather than
// holding its lock until the process is killed.
import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { automationWorld, deploy, waitForRun } from '../lib/automations.ts'
import { startWorker } from '../../jobs/worker.ts'
import { Logger } from 'graphile-worker'
import { message, spawnProcess } from './process.ts'

t.test('SIGTERM to npm start stops the service and releases its running job', async (t) => {
  let calls = 0
  let hang: (() => void) | null = null
  const hung = new Promise<void>((resolve) => { hang = resolve })
  // The step's first call never answers: its job is running when the signal comes.
  const target = http.createServer((_req, res) => {
    calls++
    if (calls === 1) return hang?.()
    res.setHeader('content-type', 'application/json')
    res.end('{"ok": true}')
  })
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { target.closeAllConnections(); target.close(() => resolve()) }))
  const base = `http://127.0.0.1:${(target.address() as AddressInfo).port}`

  const { service, dev } = await automationWorld(t, { worker: false })
  await deploy(await dev.mcp(), {
    name: 'ops/slow',
    steps: [
      { slug: 'call', type: 'http', config: { method: 'POST', url: `${base}/slow` }, next: { success: 'end' } },
      { slug: 'end', type: 'output', config: { mapping: { done: true } } },
    ],
  })

  const npm = spawnProcess('npm', ['start', '--silent'], { env: { DATABASE_URL: service.db.url, PORT: '0', S3_ENDPOINT: 'none' } })
  t.teardown(() => { npm.child.kill('SIGKILL') })
  await npm.line(message('listening'))

  const started = await dev.post('/api/v1/automations/ops__slow/runs', {})
  t.equal(started.status, 202, 'the run is accepted')
  await hung

  npm.child.kill('SIGTERM')
  const end = await npm.closed
  t.equal(end.code, 0, 'npm start exits cleanly, with every process under it')
  t.ok(npm.lines.some(message('shutting down')), 'the service says it is shutting down')
  t.ok(npm.lines.some(message('stopped')), 'and that it has stopped')

  const [job] = await service.db.owner`
    select locked_by, attempts, last_error from graphile_worker._private_jobs j
      join graphile_worker._private_tasks k on k.id = j.task_id where k.identifier = 'run_automation'`
  t.equal(job?.locked_by, null, 'the running job was released, not left locked by the stopped worker')

  // Another worker picks it up and the run completes.
  const worker = await startWorker(service.db.url, { objectStore: null, crontab: false, logger: new Logger(() => () => {}) })
  t.teardown(() => worker.stop())
  const run = await waitForRun(dev.get, started.body.runId)
  t.match(run, { status: 'completed', output: { done: true } })
})

t.test('SIGTERM stops a worker-only process too', async (t) => {
  const { service } = await automationWorld(t, { worker: false })
  const npm = spawnProcess('npm', ['run', '--silent', 'worker'], { env: { DATABASE_URL: service.db.url, S3_ENDPOINT: 'none' } })
  t.teardown(() => { npm.child.kill('SIGKILL') })
  await npm.line(message('worker started'))
  t.notOk(npm.lines.some(message('listening')), 'a worker-only process serves no HTTP')
  npm.child.kill('SIGTERM')
  t.equal((await npm.closed).code, 0)
  t.ok(npm.lines.some(message('shutting down')))
})
