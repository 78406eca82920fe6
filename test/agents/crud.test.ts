// Project agents: create, read, list, full-configuration saves (resets, unchanged
// saves, stale copies), delete, audit, the per-project limit and racing creates.
import t from 'tap'
import { world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'
import { pinClock } from '../lib/db.ts'

const agent = (name: string, extra: Record<string, unknown> = {}) =>
  ({ name, harness: 'codex', model: 'local-echo', skills: [], connectors: ['github'], ...extra })

t.test('a create answers 201 with the agent and its Location; reads and the list show it', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/agents`
  // Skills name skills the caller can see (docs/skills.md).
  await olive.put('/api/v1/skills/triage', { name: 'Triage', content: 'Sort new tasks.', visibility: 'organization' })
  const created = await olive.post(base, agent('  Reviewer  ', {
    modelProvider: 'local', skills: ['triage'], tools: ['tasks.read'], instructions: 'Review every task.',
  }))
  t.equal(created.status, 201)
  const id = created.body.agent.id
  t.equal(created.headers.get('location'), `${base}/${id}`)
  t.match(created.body.agent, {
    id: String, projectId: alpha, name: 'Reviewer', harness: 'codex', model: 'local-echo', modelProvider: 'local',
    skills: ['triage'], connectors: ['github'], tools: ['tasks.read'], secrets: [], instructions: 'Review every task.',
    createdAt: Number, updatedAt: Number,
  }, 'the name is trimmed')
  t.equal(created.body.agent.createdAt, created.body.agent.updatedAt)
  t.same((await olive.get(`${base}/${id}`)).body, created.body, 'a read answers what the create did')

  await olive.post(base, agent('alpha bot'))
  await olive.post(base, agent('Zed'))
  const list = await olive.get(base)
  t.equal(list.status, 200)
  t.same(list.body.agents.map((a: { name: string }) => a.name), ['alpha bot', 'Reviewer', 'Zed'], 'by name, ignoring case')
  t.same(list.body.agents[1], created.body.agent)
  t.same((await olive.get(`/api/v1/projects/${alpha}/agents`)).body.agents.length, 3)
})

t.test('an agent is read only through its own project; anything else is 404', async (t) => {
  const { alpha, beta, olive, gina } = await world(t)
  const created = await olive.post(`/api/v1/projects/${alpha}/agents`, agent('Scout'))
  const id = created.body.agent.id
  refused(t, await olive.get(`/api/v1/projects/${beta}/agents/${id}`), 404, 'NOT_FOUND', 'through another project')
  refused(t, await olive.put(`/api/v1/projects/${beta}/agents/${id}`, agent('Scout')), 404, 'NOT_FOUND', 'saved through another project')
  refused(t, await olive.del(`/api/v1/projects/${beta}/agents/${id}`), 404, 'NOT_FOUND', 'deleted through another project')
  refused(t, await olive.get(`/api/v1/projects/${alpha}/agents/${crypto.randomUUID()}`), 404, 'NOT_FOUND', 'an unknown id')
  refused(t, await olive.get(`/api/v1/projects/${alpha}/agents/Scout`), 404, 'NOT_FOUND', 'a name is not an id')
  refused(t, await gina.get(`/api/v1/projects/${alpha}/agents/${id}`), 404, 'NOT_FOUND', 'another organization')
  refused(t, await gina.get(`/api/v1/projects/${alpha}/agents`), 404, 'NOT_FOUND', 'another organization\'s project')
  t.same((await olive.get(`/api/v1/projects/${beta}/agents`)).body, { agents: [] }, 'each project has its own agents')
})

t.test('a PUT saves the full configuration: optional fields omitted are reset', async (t) => {
  const { alpha, adam } = await world(t, { seed: { secrets: [{ org: 'acme', name: 'GITHUB_TOKEN', value: 'ghp-test' }] } })
  const base = `/api/v1/projects/${alpha}/agents`
  const created = await adam.post(base, agent('Builder', {
    modelProvider: 'local', tools: ['web.fetch'], secrets: ['GITHUB_TOKEN'], instructions: 'Build.',
  }))
  const saved = await adam.put(`${base}/${created.body.agent.id}`, agent('Builder', { harness: 'opencode', skills: [], connectors: [] }))
  t.equal(saved.status, 200)
  t.match(saved.body.agent, {
    id: created.body.agent.id, name: 'Builder', harness: 'opencode', modelProvider: null, skills: [], connectors: [],
    tools: [], secrets: [], instructions: null, createdAt: created.body.agent.createdAt,
  })
  t.ok(saved.body.agent.updatedAt > created.body.agent.updatedAt, 'updatedAt moves on')
  t.same((await adam.get(`${base}/${created.body.agent.id}`)).body, saved.body, 'stored as answered')
})

t.test('a PUT updates an existing agent only', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/agents`
  refused(t, await olive.put(`${base}/${crypto.randomUUID()}`, agent('Ghost')), 404, 'NOT_FOUND')
  t.same((await olive.get(base)).body, { agents: [] }, 'nothing was created')
})

t.test('a PUT naming the stored configuration writes nothing and keeps updatedAt', async (t) => {
  const { alpha, olive, service } = await world(t)
  const base = `/api/v1/projects/${alpha}/agents`
  const body = agent('Keeper', { tools: ['tasks.read', 'files.read'], instructions: 'Keep.' })
  const created = await olive.post(base, body)
  const id = created.body.agent.id
  const audits = async () => (await service.db.owner`
    select count(*)::int as n from app.audit_log where subject_id = ${id} and action = 'agent.updated'`)[0]!.n
  const [before] = await service.db.owner`select xmin::text from app.project_agents where id = ${id}`
  const same = await olive.put(`${base}/${id}`, { ...body, tools: ['files.read', 'tasks.read', 'files.read'],
    expectedUpdatedAt: created.body.agent.updatedAt })
  t.equal(same.status, 200)
  t.same(same.body, created.body, 'the same set of tools in another order is the same configuration')
  const [after] = await service.db.owner`select xmin::text from app.project_agents where id = ${id}`
  t.equal(after!.xmin, before!.xmin, 'the row was not written')
  t.equal(await audits(), 0, 'nothing audited')

  const changed = await olive.put(`${base}/${id}`, { ...body, instructions: 'Keep more.' })
  t.not(changed.body.agent.updatedAt, created.body.agent.updatedAt)
  t.equal(await audits(), 1, 'a change is audited')
})

t.test('expectedUpdatedAt older than the stored agent is 409 PROJECT_AGENT_STALE and writes nothing', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/agents`
  const created = await olive.post(base, agent('Careful'))
  const path = `${base}/${created.body.agent.id}`
  const first = await olive.put(path, agent('Careful', { instructions: 'One.', expectedUpdatedAt: created.body.agent.updatedAt }))
  t.equal(first.status, 200, 'the copy read is current')
  const stale = refused(t, await olive.put(path, agent('Careful', { instructions: 'Two.', expectedUpdatedAt: created.body.agent.updatedAt })),
    409, 'PROJECT_AGENT_STALE')
  t.equal(stale.data.updatedAt, first.body.agent.updatedAt, 'data names the current updatedAt')
  t.same((await olive.get(path)).body, first.body, 'nothing was written')
  const unchanged = refused(t, await olive.put(path, agent('Careful', { instructions: 'One.', expectedUpdatedAt: 0 })),
    409, 'PROJECT_AGENT_STALE', 'even a save that would change nothing')
  t.equal(unchanged.data.updatedAt, first.body.agent.updatedAt)
  t.equal((await olive.put(path, agent('Careful', { instructions: 'Two.', expectedUpdatedAt: stale.data.updatedAt }))).status, 200,
    'the current updatedAt saves')
  refused(t, await olive.put(path, agent('Careful', { expectedUpdatedAt: -1 })), 400, 'INVALID_BODY', 'not a timestamp')
})

t.test('every save moves updatedAt on, even within one millisecond, so a stale copy is always told', async (t) => {
  const { alpha, olive, service } = await world(t)
  await pinClock(service.db.owner, Date.UTC(2030, 0, 1))
  const base = `/api/v1/projects/${alpha}/agents`
  const created = await olive.post(base, agent('Quick'))
  const path = `${base}/${created.body.agent.id}`
  const saved = await olive.put(path, agent('Quick', { instructions: 'Fast.' }))
  t.ok(saved.body.agent.updatedAt > created.body.agent.updatedAt, 'a later updatedAt on a stopped clock')
  refused(t, await olive.put(path, agent('Quick', { instructions: 'Faster.', expectedUpdatedAt: created.body.agent.updatedAt })),
    409, 'PROJECT_AGENT_STALE')
})

t.test('a delete answers 204; the agent is gone; every write is audited', async (t) => {
  const { alpha, olive, service } = await world(t)
  const base = `/api/v1/projects/${alpha}/agents`
  const created = await olive.post(base, agent('Temp'))
  const id = created.body.agent.id
  await olive.put(`${base}/${id}`, agent('Temporary'))
  const deleted = await olive.del(`${base}/${id}`)
  t.equal(deleted.status, 204)
  t.equal(deleted.text, '')
  refused(t, await olive.get(`${base}/${id}`), 404, 'NOT_FOUND', 'read after delete')
  refused(t, await olive.del(`${base}/${id}`), 404, 'NOT_FOUND', 'deleted twice')
  const audit = await service.db.owner<{ action: string; data: Record<string, unknown> }[]>`
    select action, data from app.audit_log where subject_type = 'agent' and subject_id = ${id} order by id`
  t.match(audit, [
    { action: 'agent.created', data: { projectId: alpha, name: 'Temp' } },
    { action: 'agent.updated', data: { projectId: alpha, name: 'Temporary' } },
    { action: 'agent.deleted', data: { projectId: alpha, name: 'Temporary' } },
  ])
})

t.test('a project holds at most 50 agents: 409 PROJECT_AGENT_LIMIT_REACHED beyond, racing creates included', async (t) => {
  const { alpha, beta, olive, service } = await world(t)
  const base = `/api/v1/projects/${alpha}/agents`
  await service.db.owner`
    insert into app.project_agents (organization_id, project_id, name, harness, model)
    select p.organization_id, p.id, 'filler ' || n, 'codex', 'local-echo' from app.projects p, generate_series(1, 45) n
     where p.id = ${alpha}`
  // A first request marks the key used, so the racers below do not queue on that row.
  t.equal((await olive.get(base)).body.agents.length, 45)
  const racing = await Promise.all(Array.from({ length: 10 }, (_, i) => olive.post(base, agent(`Racer ${i}`))))
  t.same(racing.map((r) => r.status).sort(), [201, 201, 201, 201, 201, 409, 409, 409, 409, 409],
    'of ten creates racing for the last five places, five get one')
  const full = refused(t, racing.find((r) => r.status === 409)!, 409, 'PROJECT_AGENT_LIMIT_REACHED')
  t.equal(full.data.limit, 50)
  t.equal((await olive.get(base)).body.agents.length, 50)
  refused(t, await olive.post(base, agent('Fifty-one')), 409, 'PROJECT_AGENT_LIMIT_REACHED')
  t.equal((await olive.post(`/api/v1/projects/${beta}/agents`, agent('Fifty-one'))).status, 201, 'another project has room')
  const existing = (await olive.get(base)).body.agents[0]
  t.equal((await olive.put(`${base}/${existing.id}`, agent(existing.name, { instructions: 'Still saves.' }))).status, 200,
    'a full project still saves its agents')
  await olive.del(`${base}/${existing.id}`)
  t.equal((await olive.post(base, agent('Fifty-one'))).status, 201, 'a delete makes room')
})

t.test('two creates of one name race: one 201, one 409 PROJECT_AGENT_NAME_TAKEN, never a 500', async (t) => {
  const { alpha, olive, eddie } = await world(t)
  const base = `/api/v1/projects/${alpha}/agents`
  for (let round = 0; round < 5; round++) {
    const answers = await Promise.all([olive.post(base, agent(`Twin ${round}`)), eddie.post(base, agent(`TWIN ${round}`))])
    t.same(answers.map((r) => r.status).sort(), [201, 409], `round ${round}`)
    refused(t, answers.find((r) => r.status === 409)!, 409, 'PROJECT_AGENT_NAME_TAKEN', `round ${round}`)
  }
  t.equal((await olive.get(base)).body.agents.length, 5)
})
