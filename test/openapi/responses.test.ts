// The shared test client checks every JSON body against the document the service
// publishes (test/lib/openapi.ts). These tests show that check refuses what the
// document does not declare, and that a run's full read is the Run schema exactly.
import t, { type Test } from 'tap'
import { startTestService } from '../lib/service.ts'
import { componentCheck, responseChecker } from '../lib/openapi.ts'
import { deploy, simpleDocument, waitForRun } from '../lib/automations.ts'
import { world } from '../lib/world.ts'

type Json = Record<string, any>

async function published(t: Test): Promise<Json> {
  const service = await startTestService(t)
  return (await service.request('GET', '/openapi.json')).body
}

const automation = {
  name: 'ops/greeter', latestVersion: 2, deployedVersion: 1, projectIds: [], description: 'Greets',
  inputs: { type: 'object' }, trigger: null, createdAt: 1_700_000_000_000, updatedAt: 1_700_000_000_000,
}
const json = 'application/json; charset=utf-8'

t.test('a body as declared passes the client\'s check', async (t) => {
  const { check } = responseChecker(await published(t))
  t.doesNotThrow(() => check('GET', '/api/v1/automations', 200, json, { automations: [automation] }))
  t.doesNotThrow(() => check('GET', '/api/v1/automations/', 200, json, { automations: [automation] }), 'one trailing slash')
})

t.test('a success body missing a declared field fails the check', async (t) => {
  const { check } = responseChecker(await published(t))
  const { createdAt: _, ...incomplete } = automation
  t.throws(() => check('GET', '/api/v1/automations', 200, json, { automations: [incomplete] }), { name: 'ResponseDrift' })
})

t.test('a success body with an undeclared field fails the check', async (t) => {
  const { check } = responseChecker(await published(t))
  t.throws(() => check('GET', '/api/v1/automations', 200, json, { automations: [{ ...automation, owner: 'x' }] }), { name: 'ResponseDrift' })
})

t.test('a run whose status is not a declared status fails the check', async (t) => {
  const { check } = responseChecker(await published(t))
  t.throws(() => check('GET', '/api/v1/runs/abc', 200, json, { status: 'sleeping' }), { name: 'ResponseDrift' })
  t.doesNotThrow(() => check('GET', '/api/v1/runs/abc', 200, json, { status: 'waiting' }), 'a declared one passes')
})

t.test('JSON on a path the document does not describe fails the check', async (t) => {
  const { check } = responseChecker(await published(t))
  t.throws(() => check('GET', '/api/v1/nowhere', 200, json, {}), /describes no such operation/)
})

t.test('an error envelope with an undeclared code fails the check', async (t) => {
  const { check } = responseChecker(await published(t))
  t.throws(() => check('GET', '/api/v1/runs/abc', 404, json, { error: 'x', code: 'RUN_MISLAID', data: {} }), { name: 'ResponseDrift' })
  t.doesNotThrow(() => check('GET', '/api/v1/runs/abc', 404, json, { error: 'x', code: 'NOT_FOUND', data: {} }))
})

t.test('a finished run\'s full read is exactly the Run schema, not only the fields form', async (t) => {
  const { service, dev } = await world(t, { worker: true })
  const isRun = componentCheck((await service.request('GET', '/openapi.json')).body, 'Run')
  await deploy(await dev.mcp(), simpleDocument('ops/greeter'))
  const completed = await dev.post('/api/v1/automations/ops__greeter/runs', { input: { who: 'Ada' } })
  const failed = await dev.post('/api/v1/automations/ops__greeter/runs', { input: { who: 42 } })
  const runs = [await waitForRun(dev.get, completed.body.runId), await waitForRun(dev.get, failed.body.runId)]
  t.same(runs.map((run) => run.status), ['completed', 'failed'])
  for (const run of runs) t.equal(isRun(run), null, `a ${run.status} run conforms to Run`)
})

t.test('list rows with every part included are run summaries', async (t) => {
  const { service, dev } = await world(t, { worker: true })
  const isSummary = componentCheck((await service.request('GET', '/openapi.json')).body, 'RunSummary')
  await deploy(await dev.mcp(), simpleDocument('ops/greeter'))
  const started = await dev.post('/api/v1/automations/ops__greeter/runs', { input: { who: 'Ada' } })
  await waitForRun(dev.get, started.body.runId)
  const listed = await dev.get('/api/v1/runs?include=output,trace,effects')
  t.equal(listed.body.runs.length, 1)
  t.equal(isSummary(listed.body.runs[0]), null)
  t.match(listed.body.runs[0], { output: { greeting: 'Hello Ada' }, trace: Array, effects: Array })
})
