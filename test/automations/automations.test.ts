// Automation reads, deletion and project installs over REST (SPEC.md "Automations
// and triggers").
import t from 'tap'
import { callTool, deploy, simpleDocument, waitForRun } from '../lib/automations.ts'
import { world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'

t.test('sales/leads/intake, saved twice', async (t) => {
  const { max, dev } = await world(t)
  const client = await dev.mcp()
  await callTool(client, 'automation_create', { document: simpleDocument('sales/leads/intake') })
  await callTool(client, 'automation_save', { name: 'sales/leads/intake', document: simpleDocument('sales/leads/intake', {
    inputs: { type: 'object', properties: { who: { type: 'string' }, loud: { type: 'boolean' } } } }) })

  t.test('the automation list shows the newest saved version\'s inputs while nothing is deployed', async (t) => {
    const list = await max.get('/api/v1/automations')
    t.equal(list.status, 200)
    t.same(list.body.automations, [{
      name: 'sales/leads/intake', latestVersion: 2, description: 'Greets', projectIds: [], trigger: null,
      inputs: list.body.automations[0].inputs, createdAt: list.body.automations[0].createdAt, updatedAt: list.body.automations[0].updatedAt,
    }])
    t.notOk('deployedVersion' in list.body.automations[0], 'absent while nothing is deployed')
    t.ok('loud' in list.body.automations[0].inputs.properties, 'inputs: the newest saved version\'s while nothing is deployed')
  })

  t.test('once a version is deployed, the list shows deployedVersion and that version\'s inputs', async (t) => {
    await callTool(client, 'automation_deploy', { name: 'sales/leads/intake', version: 1 })
    const deployed = (await max.get('/api/v1/automations')).body.automations[0]
    t.equal(deployed.deployedVersion, 1)
    t.notOk('loud' in deployed.inputs.properties, 'inputs: the deployed version\'s')
  })

  t.test('a read answers the latest version with an ETag, or the version named deployed or by number; / is written __', async (t) => {
    const latest = await max.get('/api/v1/automations/sales__leads__intake')
    t.match(latest.body, { name: 'sales/leads/intake', version: 2, deployed: false, document: { name: 'sales/leads/intake' } })
    t.ok(latest.headers.get('etag'))
    t.match((await max.get('/api/v1/automations/sales__leads__intake?version=deployed')).body, { version: 1, deployed: true })
    t.match((await max.get('/api/v1/automations/sales__leads__intake?version=1')).body, { version: 1 })
  })

  t.test('an unknown automation or version, or a malformed version, is refused', async (t) => {
    refused(t, await max.get('/api/v1/automations/sales__leads__intake?version=9'), 404, 'AUTOMATION_VERSION_UNKNOWN', 'an unknown version')
    refused(t, await max.get('/api/v1/automations/sales__leads__intake?version=newest'), 400, 'INVALID_QUERY', 'a malformed version')
    refused(t, await max.get('/api/v1/automations/nope'), 404, 'AUTOMATION_NOT_FOUND', 'an unknown automation')
    refused(t, await max.get('/api/v1/automations/nope/versions'), 404, 'AUTOMATION_NOT_FOUND', 'versions of an unknown automation')

    await callTool(client, 'automation_create', { document: simpleDocument('ops/undeployed') })
    refused(t, await max.get('/api/v1/automations/ops__undeployed?version=deployed'), 404, 'AUTOMATION_VERSION_UNKNOWN', 'deployed with nothing deployed')
  })

  t.test('a POST to the automations collection creates and installs nothing: 405', async (t) => {
    const collection = await dev.post('/api/v1/automations', { name: 'x' })
    t.equal(collection.status, 405, 'a POST to the collection creates and installs nothing')
  })
})

t.test('ops/greeter, to install into Alpha and Beta', async (t) => {
  const { service, alpha, beta, dev, eddie, olive } = await world(t)
  await callTool(await dev.mcp(), 'automation_create', { document: simpleDocument('ops/greeter') })

  t.test('installing answers 201 with Location, and 200 with added false when already installed', async (t) => {
    const first = await dev.post(`/api/v1/projects/${alpha}/automations/ops__greeter`, {})
    t.equal(first.status, 201)
    t.same(first.body, { name: 'ops/greeter', added: true })
    t.equal(first.headers.get('location'), `/api/v1/projects/${alpha}/automations/ops__greeter`)
    const again = await dev.post(`/api/v1/projects/${alpha}/automations/ops__greeter`, {})
    t.equal(again.status, 200)
    t.same(again.body, { name: 'ops/greeter', added: false })
  })

  t.test('installing into a project the caller cannot see answers 404 NOT_FOUND', async (t) => {
    refused(t, await eddie.post(`/api/v1/projects/${beta}/automations/ops__greeter`, {}), 404, 'NOT_FOUND', 'an editor without access to the project')
    refused(t, await dev.post(`/api/v1/projects/${beta}/automations/ops__greeter`, {}), 404, 'NOT_FOUND', 'a project the developer cannot see')
  })

  t.test('the earlier route form, POST /automations/{name}/projects, installs too', async (t) => {
    const earlier = await olive.post('/api/v1/automations/ops__greeter/projects', { projectId: beta })
    t.equal(earlier.status, 201, 'the earlier variant installs too')
    t.equal((await olive.post('/api/v1/automations/ops__greeter/projects', { projectId: beta })).status, 200)
  })

  t.test('installing an unknown automation answers 404 AUTOMATION_NOT_FOUND', async (t) => {
    refused(t, await dev.post(`/api/v1/projects/${alpha}/automations/nope`, {}), 404, 'AUTOMATION_NOT_FOUND', 'an unknown automation')
  })

  t.test('installs are listed per project and as the automation\'s projectIds', async (t) => {
    const installed = await dev.get(`/api/v1/projects/${alpha}/automations`)
    t.same(installed.body.automations.map((a: { name: string }) => a.name), ['ops/greeter'])
    t.same((await olive.get('/api/v1/automations')).body.automations[0].projectIds.sort(), [alpha, beta].sort())
  })

  t.test('a project with an install refuses deletion with 409 PROJECT_HAS_BOUND_AUTOMATIONS naming them', async (t) => {
    const deleting = await olive.del(`/api/v1/projects/${alpha}`)
    refused(t, deleting, 409, 'PROJECT_HAS_BOUND_AUTOMATIONS', 'deleting a project with an install')
    t.same(deleting.body.data.automations, ['ops/greeter'])
  })

  t.test('uninstalling answers 204, then 404 AUTOMATION_NOT_INSTALLED, 403 in an archived project; without installs a project deletes', async (t) => {
    t.equal((await dev.del(`/api/v1/projects/${alpha}/automations/ops__greeter`)).status, 204)
    refused(t, await dev.del(`/api/v1/projects/${alpha}/automations/ops__greeter`), 404, 'AUTOMATION_NOT_INSTALLED', 'uninstalling twice')
    await service.db.owner`update app.projects set archived_at = now() where id = ${beta}`
    refused(t, await olive.del(`/api/v1/projects/${beta}/automations/ops__greeter`), 403, 'PROJECT_ARCHIVED', 'an archived project')
    t.equal((await olive.del(`/api/v1/projects/${alpha}`)).status, 204, 'without installs the project deletes')
  })
})

t.test('installing needs the developer capability and edit access', async (t) => {
  const { alpha, dev, max } = await world(t, { seed: {
    projects: [{ org: 'acme', name: 'Alpha', createdBy: 'olive@acme.test', access: [{ email: 'max@acme.test', level: 'edit' }, { email: 'dev@acme.test', level: 'read' }] }],
  } })
  await callTool(await dev.mcp(), 'automation_create', { document: simpleDocument('ops/greeter') })
  refused(t, await max.post(`/api/v1/projects/${alpha}/automations/ops__greeter`, {}), 403, 'ROLE_FORBIDDEN', 'a member with edit access')
  refused(t, await dev.post(`/api/v1/projects/${alpha}/automations/ops__greeter`, {}), 403, 'ROLE_FORBIDDEN', 'a developer with read access')
})

t.test('ops/gate with a run waiting for approval', async (t) => {
  const { dev, max } = await world(t, { worker: true })
  await deploy(await dev.mcp(), {
    name: 'ops/gate',
    steps: [{ slug: 'approve', type: 'approval', config: { title: 'ok?' }, next: { approved: 'end' } }, { slug: 'end', type: 'output', config: { mapping: { ok: true } } }],
  })
  const started = await dev.post('/api/v1/automations/ops__gate/runs', {})
  const waiting = await waitForRun(dev.get, started.body.runId, (r) => r.status === 'waiting')

  t.test('deleting an automation needs the developer capability', async (t) => {
    refused(t, await max.del('/api/v1/automations/ops__gate'), 403, 'ROLE_FORBIDDEN', 'a member deletes')
  })

  t.test('an automation with a live run refuses deletion with 409 AUTOMATION_HAS_ACTIVE_RUNS', async (t) => {
    refused(t, await dev.del('/api/v1/automations/ops__gate'), 409, 'AUTOMATION_HAS_ACTIVE_RUNS', 'a run is waiting')
  })

  t.test('a deleted automation is gone while its runs stay readable and listed', async (t) => {
    await dev.post(`/api/v1/runs/${started.body.runId}/approvals/${waiting.detail.slice('approval:'.length)}`, { decision: 'approved' })
    await waitForRun(dev.get, started.body.runId)
    t.equal((await dev.del('/api/v1/automations/ops__gate')).status, 204)
    refused(t, await dev.get('/api/v1/automations/ops__gate'), 404, 'AUTOMATION_NOT_FOUND', 'the automation is gone')
    const run = await dev.get(`/api/v1/runs/${started.body.runId}`)
    t.match(run.body, { status: 'completed', name: 'ops/gate', output: { ok: true } }, 'its run is still readable')
    t.same((await dev.get('/api/v1/runs')).body.runs.map((r: { runId: string }) => r.runId), [started.body.runId], 'and listed')
  })
})
