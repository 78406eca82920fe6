// Who reads and who writes a project's agents: project read access to read; the
// Editor role, edit access and an active project to write; 404 for an invisible project.
import t from 'tap'
import { project, world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'

const agent = (name: string) => ({ name, harness: 'claude-code', model: 'local-echo', skills: [], connectors: [] })

t.test('project readers read agents; writes need the Editor role and edit access', async (t) => {
  const { projects, olive, dev, eddie, max } = await world(t, { projects: [
    project('Alpha', { access: [{ email: 'max@acme.test', level: 'read' }, { email: 'dev@acme.test', level: 'edit' },
      { email: 'eddie@acme.test', level: 'edit' }] }),
    project('Gamma', { access: [{ email: 'eddie@acme.test', level: 'read' }] }),
  ] })
  const alpha = `/api/v1/projects/${projects.Alpha}/agents`
  const created = await olive.post(alpha, agent('Shared'))
  const path = `${alpha}/${created.body.agent.id}`

  t.equal((await max.get(alpha)).body.agents.length, 1, 'a member with read access lists them')
  t.same((await max.get(path)).body, created.body, 'and reads one')
  refused(t, await max.post(alpha, agent('Mine')), 403, 'ROLE_FORBIDDEN', 'the member role creates none')
  refused(t, await max.put(path, agent('Mine')), 403, 'ROLE_FORBIDDEN', 'the member role saves none')
  refused(t, await max.del(path), 403, 'ROLE_FORBIDDEN', 'the member role deletes none')

  t.equal((await eddie.post(alpha, agent('By editor'))).status, 201, 'an editor with edit access creates')
  t.equal((await dev.put(path, agent('Renamed by developer'))).status, 200, 'a developer with edit access saves')

  const gamma = `/api/v1/projects/${projects.Gamma}/agents`
  const inGamma = await olive.post(gamma, agent('Gamma agent'))
  t.equal((await eddie.get(gamma)).body.agents.length, 1, 'read access reads')
  refused(t, await eddie.post(gamma, agent('Nope')), 403, 'ROLE_FORBIDDEN', 'an editor with read access creates none')
  refused(t, await eddie.put(`${gamma}/${inGamma.body.agent.id}`, agent('Nope')), 403, 'ROLE_FORBIDDEN',
    'an editor with read access saves none')
  refused(t, await eddie.del(`${gamma}/${inGamma.body.agent.id}`), 403, 'ROLE_FORBIDDEN', 'an editor with read access deletes none')

  t.equal((await dev.del(path)).status, 204, 'a developer with edit access deletes')
})

t.test('an invisible project answers 404 before any capability is checked', async (t) => {
  const { beta, olive, eddie, max } = await world(t)
  const base = `/api/v1/projects/${beta}/agents`
  const created = await olive.post(base, agent('Hidden'))
  const path = `${base}/${created.body.agent.id}`
  for (const [who, client] of [['an editor', eddie], ['a member', max]] as const) {
    refused(t, await client.get(base), 404, 'NOT_FOUND', `${who} lists`)
    refused(t, await client.get(path), 404, 'NOT_FOUND', `${who} reads`)
    refused(t, await client.post(base, agent('Mine')), 404, 'NOT_FOUND', `${who} creates`)
    refused(t, await client.put(path, agent('Mine')), 404, 'NOT_FOUND', `${who} saves`)
    refused(t, await client.del(path), 404, 'NOT_FOUND', `${who} deletes`)
  }
})

t.test('an archived project\'s agents are read, never written: 403 PROJECT_ARCHIVED', async (t) => {
  const { alpha, olive, eddie } = await world(t)
  const base = `/api/v1/projects/${alpha}/agents`
  const created = await olive.post(base, agent('Frozen'))
  const path = `${base}/${created.body.agent.id}`
  t.equal((await olive.patch(`/api/v1/projects/${alpha}`, { archived: true })).status, 200)
  for (const [who, client] of [['the owner', olive], ['an editor', eddie]] as const) {
    refused(t, await client.post(base, agent('New')), 403, 'PROJECT_ARCHIVED', `${who} creates`)
    refused(t, await client.put(path, agent('Changed')), 403, 'PROJECT_ARCHIVED', `${who} saves`)
    refused(t, await client.del(path), 403, 'PROJECT_ARCHIVED', `${who} deletes`)
  }
  t.same((await eddie.get(path)).body, created.body, 'still read')
  t.equal((await olive.get(base)).body.agents.length, 1)
})

t.test('a project\'s agents go with it', async (t) => {
  const { alpha, olive, service } = await world(t)
  await olive.post(`/api/v1/projects/${alpha}/agents`, agent('Goner'))
  t.equal((await olive.del(`/api/v1/projects/${alpha}`, {})).status, 204)
  const [left] = await service.db.owner`select count(*)::int as n from app.project_agents where project_id = ${alpha}`
  t.equal(left!.n, 0)
})
