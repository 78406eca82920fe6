// Secret grants: names of the organization's secrets, never values; only owners and
// admins change them, so an editor's full save sends the stored grants back.
import t from 'tap'
import { world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'

const agent = (name: string, extra: Record<string, unknown> = {}) =>
  ({ name, harness: 'codex', model: 'local-echo', skills: [], connectors: [], ...extra })
const secrets = [
  { org: 'acme', name: 'GITHUB_TOKEN', value: 'ghp-value-never-shown' },
  { org: 'acme', name: 'JIRA_TOKEN', value: 'jira-value-never-shown' },
  { org: 'globex', name: 'GLOBEX_TOKEN', value: 'globex-value' },
]

t.test('secrets name organization secrets; an unknown name is 400 PROJECT_AGENT_SECRET_UNKNOWN', async (t) => {
  const { alpha, olive } = await world(t, { seed: { secrets } })
  const base = `/api/v1/projects/${alpha}/agents`
  const created = await olive.post(base, agent('Granted', { secrets: ['JIRA_TOKEN', 'GITHUB_TOKEN', 'JIRA_TOKEN'] }))
  t.equal(created.status, 201)
  t.same(created.body.agent.secrets, ['GITHUB_TOKEN', 'JIRA_TOKEN'], 'a set of names: each once, sorted')
  t.notMatch(created.text, /never-shown/, 'no value is ever answered')
  t.notMatch((await olive.get(base)).text, /never-shown/)

  const body = refused(t, await olive.post(base, agent('Bad', { secrets: ['GITHUB_TOKEN', 'GLOBEX_TOKEN', 'github_token'] })),
    400, 'PROJECT_AGENT_SECRET_UNKNOWN')
  t.same(body.data.secrets.sort(), ['GLOBEX_TOKEN', 'github_token'], 'data.secrets: the unknown names (another organization\'s too)')
  t.same(body.data.issues.map((i: { path: string }) => i.path), ['secrets.1', 'secrets.2'])
  t.match(refused(t, await olive.post(base, agent('Bad', { secrets: Array.from({ length: 26 }, () => 'GITHUB_TOKEN') })), 400,
    'INVALID_BODY', 'more than 25').data.issues, [{ path: 'secrets', message: /25/ }])
})

t.test('owners and admins grant secrets; editors and developers are 403 ROLE_FORBIDDEN', async (t) => {
  const { alpha, olive, adam, dev, eddie } = await world(t, { seed: { secrets } })
  const base = `/api/v1/projects/${alpha}/agents`
  t.equal((await olive.post(base, agent('By owner', { secrets: ['GITHUB_TOKEN'] }))).status, 201)
  t.equal((await adam.post(base, agent('By admin', { secrets: ['GITHUB_TOKEN'] }))).status, 201)
  refused(t, await eddie.post(base, agent('By editor', { secrets: ['GITHUB_TOKEN'] })), 403, 'ROLE_FORBIDDEN', 'an editor\'s create')
  refused(t, await dev.post(base, agent('By developer', { secrets: ['GITHUB_TOKEN'] })), 403, 'ROLE_FORBIDDEN', 'a developer\'s create')
  t.equal((await eddie.post(base, agent('By editor', { secrets: [] }))).status, 201, 'an editor\'s create without secrets')
  t.same((await olive.get(base)).body.agents.map((a: { name: string }) => a.name), ['By admin', 'By editor', 'By owner'])
})

t.test('an editor\'s full save keeps the stored grants; any other set is 403 ROLE_FORBIDDEN and writes nothing', async (t) => {
  const { alpha, adam, eddie } = await world(t, { seed: { secrets } })
  const base = `/api/v1/projects/${alpha}/agents`
  const created = await adam.post(base, agent('Guarded', { secrets: ['GITHUB_TOKEN', 'JIRA_TOKEN'] }))
  const path = `${base}/${created.body.agent.id}`

  const kept = await eddie.put(path, agent('Guarded', { instructions: 'Edited.', secrets: ['JIRA_TOKEN', 'GITHUB_TOKEN'] }))
  t.equal(kept.status, 200, 'the stored set, in any order')
  t.equal(kept.body.agent.instructions, 'Edited.')
  t.same(kept.body.agent.secrets, ['GITHUB_TOKEN', 'JIRA_TOKEN'])

  for (const [label, change] of [
    ['omitted, which resets them', {}],
    ['one fewer', { secrets: ['GITHUB_TOKEN'] }],
    ['one more', { secrets: ['GITHUB_TOKEN', 'JIRA_TOKEN', 'GITHUB_TOKEN', 'NOT_A_SECRET'] }],
  ] as const) {
    const body = refused(t, await eddie.put(path, agent('Guarded', { instructions: 'Changed.', ...change })), 403, 'ROLE_FORBIDDEN', label)
    t.same(body.data.secrets, ['GITHUB_TOKEN', 'JIRA_TOKEN'], `${label}: data names the stored grants`)
  }
  t.same((await eddie.get(path)).body, kept.body, 'nothing was written')

  const cleared = await adam.put(path, agent('Guarded'))
  t.same(cleared.body.agent.secrets, [], 'an admin\'s save without secrets clears them')
  t.equal((await eddie.put(path, agent('Guarded', { instructions: 'Plain.' }))).status, 200,
    'an editor saves an agent without grants, sending none')
})

t.test('a change of grants is audited with the names before and after', async (t) => {
  const { alpha, olive, service } = await world(t, { seed: { secrets } })
  const base = `/api/v1/projects/${alpha}/agents`
  const created = await olive.post(base, agent('Audited', { secrets: ['GITHUB_TOKEN'] }))
  await olive.put(`${base}/${created.body.agent.id}`, agent('Audited', { secrets: ['JIRA_TOKEN'] }))
  const audit = await service.db.owner<{ action: string; data: Record<string, unknown> }[]>`
    select action, data from app.audit_log where subject_id = ${created.body.agent.id} order by id`
  t.match(audit, [
    { action: 'agent.created', data: { secrets: ['GITHUB_TOKEN'] } },
    { action: 'agent.updated', data: { secrets: ['JIRA_TOKEN'], previousSecrets: ['GITHUB_TOKEN'] } },
  ])
  t.notMatch(JSON.stringify(audit), /never-shown/)
})
