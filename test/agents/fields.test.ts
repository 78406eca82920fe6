// An agent's fields: the name and its uniqueness, the harness, the model and its
// provider against the organization's catalog, skills, connectors, tool grants and
// instructions, with their limits in UTF-16 code units; every problem told at once.
import t from 'tap'
import { world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'

const agent = (name: string, extra: Record<string, unknown> = {}) =>
  ({ name, harness: 'codex', model: 'local-echo', skills: [], connectors: [], ...extra })
// One character outside the Basic Multilingual Plane: two UTF-16 code units.
const astral = '\u{1F600}'
const paths = (body: { data: { issues: { path: string }[] } }) => body.data.issues.map((i) => i.path)

t.test('the name is required, trimmed, 1 to 120 UTF-16 code units', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/agents`
  t.equal((await olive.post(base, agent(astral.repeat(60)))).status, 201, '120 units')
  t.equal((await olive.post(base, agent(` ${'n'.repeat(120)} `))).status, 201, '120 units once trimmed')
  t.match(refused(t, await olive.post(base, agent(`${astral.repeat(60)}x`)), 400, 'INVALID_BODY', '121 units').data.issues,
    [{ path: 'name', message: /120/ }])
  t.match(refused(t, await olive.post(base, agent(' \t ')), 400, 'INVALID_BODY', 'blank').data.issues, [{ path: 'name' }])
  const { name: _, ...nameless } = agent('x')
  t.match(refused(t, await olive.post(base, nameless), 400, 'INVALID_BODY', 'missing').data.issues, [{ path: 'name' }])
})

t.test('names are unique in the project ignoring case and Unicode normalization: 409 PROJECT_AGENT_NAME_TAKEN', async (t) => {
  const { alpha, beta, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/agents`
  const first = await olive.post(base, agent('Caf\u00e9 Bot'))
  const taken = refused(t, await olive.post(base, agent('  CAFE\u0301 BOT ')), 409, 'PROJECT_AGENT_NAME_TAKEN', 'by create')
  t.equal(taken.data.name, 'CAF\u00c9 BOT', 'data names the name, normalized')
  t.equal((await olive.post(`/api/v1/projects/${beta}/agents`, agent('Caf\u00e9 Bot'))).status, 201, 'another project')
  const second = await olive.post(base, agent('Other'))
  refused(t, await olive.put(`${base}/${second.body.agent.id}`, agent('caf\u00e9 bot')), 409, 'PROJECT_AGENT_NAME_TAKEN', 'by rename')
  t.equal((await olive.get(`${base}/${second.body.agent.id}`)).body.agent.name, 'Other', 'the refused rename wrote nothing')
  const recased = await olive.put(`${base}/${first.body.agent.id}`, agent('CAF\u00c9 BOT'))
  t.equal(recased.status, 200, 'an agent may change its own name\'s case')
  t.equal(recased.body.agent.name, 'CAF\u00c9 BOT')
})

t.test('the harness is one of the deployment\'s: else 400 PROJECT_AGENT_HARNESS_INVALID naming them', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/agents`
  const { harnesses } = (await olive.get('/api/v1/models')).body
  for (const harness of harnesses) t.equal((await olive.post(base, agent(harness.id, { harness: harness.id }))).status, 201, harness.id)
  for (const harness of ['cursor', 'CODEX', ' codex']) {
    const body = refused(t, await olive.post(base, agent('Bad', { harness })), 400, 'PROJECT_AGENT_HARNESS_INVALID', harness)
    t.same(body.data.harnesses, ['claude-code', 'codex', 'opencode'], 'data.harnesses: the eligible ids')
    t.same(paths(body), ['harness'])
  }
  const { harness: _, ...missing } = agent('x')
  refused(t, await olive.post(base, missing), 400, 'INVALID_BODY', 'required')
})

t.test('the model comes from the organization\'s catalog, served by the provider named', async (t) => {
  const { alpha, olive, gina, service } = await world(t, { seed: {
    providers: [
      { org: 'acme', slug: 'lab', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk' },
      { org: 'acme', slug: 'gone', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk' },
      { org: 'globex', slug: 'elsewhere', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk' },
    ],
    models: [
      { org: 'acme', id: 'lab-large', providerSlug: 'lab', contextWindow: 1000, maxOutputTokens: null, default: false },
      { org: 'acme', id: 'orphan', providerSlug: 'gone', contextWindow: 1000, maxOutputTokens: null, default: false },
      { org: 'globex', id: 'globex-only', providerSlug: 'elsewhere', contextWindow: 1000, maxOutputTokens: null, default: false },
    ],
  } })
  const base = `/api/v1/projects/${alpha}/agents`
  await service.db.owner`delete from app.model_providers where slug = 'gone'`

  t.equal((await olive.post(base, agent('A', { model: 'lab-large' }))).status, 201, 'a configured model, its provider implied')
  t.equal((await olive.post(base, agent('B', { model: 'lab-large', modelProvider: 'lab' }))).status, 201, 'and named')
  t.equal((await olive.post(base, agent('C', { modelProvider: 'local' }))).status, 201, 'the local model by the local provider')
  for (const [model, label] of [['gpt-unknown', 'a model of no catalog'], ['orphan', 'a model whose provider is gone'],
    ['globex-only', 'another organization\'s model'], ['LOCAL-ECHO', 'ids are exact']]) {
    const body = refused(t, await olive.post(base, agent('Bad', { model })), 400, 'PROJECT_AGENT_MODEL_INVALID', label)
    t.same(paths(body), ['model'])
  }
  const { model: _, ...missing } = agent('x')
  refused(t, await olive.post(base, missing), 400, 'INVALID_BODY', 'the model is required')

  for (const provider of ['nowhere', 'gone', 'elsewhere']) {
    const body = refused(t, await olive.post(base, agent('Bad', { modelProvider: provider })), 400, 'PROJECT_AGENT_PROVIDER_UNKNOWN',
      `${provider}: not a provider of the organization`)
    t.same(paths(body), ['modelProvider'])
  }
  const unserved = refused(t, await olive.post(base, agent('Bad', { modelProvider: 'lab' })), 400, 'PROJECT_AGENT_MODEL_INVALID',
    'a provider that does not serve the model')
  t.same(paths(unserved), ['modelProvider'])
  t.same(unserved.data.modelProviders, ['local'], 'data names who serves it')
  t.equal((await gina.post(`/api/v1/projects/${alpha}/agents`, agent('Theirs'))).status, 404)
})

t.test('a model several providers serve needs modelProvider', async (t) => {
  const { alpha, adam } = await world(t, { seed: {
    providers: [
      { org: 'acme', slug: 'east', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk' },
      { org: 'acme', slug: 'west', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk' },
    ],
    models: [
      { org: 'acme', id: 'shared-large', providerSlug: 'east', contextWindow: 1000, maxOutputTokens: null, default: false },
      { org: 'acme', id: 'shared-large', providerSlug: 'west', contextWindow: 1000, maxOutputTokens: null, default: false },
    ],
  } })
  const base = `/api/v1/projects/${alpha}/agents`
  const ambiguous = refused(t, await adam.post(base, agent('Either', { model: 'shared-large' })), 400, 'PROJECT_AGENT_MODEL_INVALID')
  t.match(ambiguous.data.issues, [{ path: 'modelProvider', message: /several providers/ }])
  t.same(ambiguous.data.modelProviders, ['east', 'west'])
  const chosen = await adam.post(base, agent('West', { model: 'shared-large', modelProvider: 'west' }))
  t.equal(chosen.status, 201)
  t.equal(chosen.body.agent.modelProvider, 'west')
})

t.test('skills and connectors: required lists of up to 25 non-blank names, kept in the order sent', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/agents`
  const names = Array.from({ length: 25 }, (_, i) => `name-${i}`)
  // Skills name skills the caller can see (docs/skills.md).
  for (const slug of ['zeta', ...names.slice(1)]) {
    await olive.put(`/api/v1/skills/${slug}`, { name: slug, content: 'Do it.', visibility: 'organization' })
  }
  const full = await olive.post(base, agent('Full', { skills: [' zeta ', ...names.slice(1)], connectors: names }))
  t.equal(full.status, 201, '25 of each')
  t.equal(full.body.agent.skills[0], 'zeta', 'trimmed, in the order sent')
  t.same(full.body.agent.connectors, names)
  for (const field of ['skills', 'connectors']) {
    t.match(refused(t, await olive.post(base, agent('Bad', { [field]: [...names, 'one-more'] })), 400, 'INVALID_BODY',
      `${field}: 26`).data.issues, [{ path: field, message: /25/ }])
    t.same(paths(refused(t, await olive.post(base, agent('Bad', { [field]: ['ok', '  '] })), 400, 'INVALID_BODY',
      `${field}: a blank name`)), [`${field}.1`])
    t.same(paths(refused(t, await olive.post(base, agent('Bad', { [field]: ['x'.repeat(201)] })), 400, 'INVALID_BODY',
      `${field}: a name of 201 units`)), [`${field}.0`])
    t.same(paths(refused(t, await olive.post(base, agent('Bad', { [field]: 'one' })), 400, 'INVALID_BODY',
      `${field}: not a list`)), [field])
    const { [field as 'skills']: _, ...missing } = agent('Bad')
    t.same(paths(refused(t, await olive.post(base, missing), 400, 'INVALID_BODY', `${field}: required`)), [field])
  }
})

t.test('tools are known grants, listed by GET /models: else 400 PROJECT_AGENT_TOOL_UNKNOWN naming them', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/agents`
  const { tools } = (await olive.get('/api/v1/models')).body
  t.ok(tools.length >= 5, 'GET /models lists the tool grants')
  for (const tool of tools) t.match(tool, { id: /^[a-z]+\.[a-z]+$/, description: /\w/ })
  const ids = tools.map((tool: { id: string }) => tool.id)
  const every = await olive.post(base, agent('Everything', { tools: [...ids].reverse() }))
  t.equal(every.status, 201, 'every listed grant is accepted')
  t.same(every.body.agent.tools, [...ids].sort(), 'a set: sorted')
  const twice = await olive.post(base, agent('Twice', { tools: ['web.fetch', 'tasks.read', 'web.fetch'] }))
  t.same(twice.body.agent.tools, ['tasks.read', 'web.fetch'], 'each grant once')

  const body = refused(t, await olive.post(base, agent('Bad', { tools: ['tasks.read', 'shell.exec', 'TASKS.READ', 'shell.exec'] })),
    400, 'PROJECT_AGENT_TOOL_UNKNOWN')
  t.same(body.data.tools.sort(), ['TASKS.READ', 'shell.exec'], 'data.tools: the unknown names')
  t.same(paths(body), ['tools.1', 'tools.2', 'tools.3'])
  t.match(refused(t, await olive.post(base, agent('Bad', { tools: Array.from({ length: 26 }, () => 'tasks.read') })), 400,
    'INVALID_BODY', 'more than 25').data.issues, [{ path: 'tools', message: /25/ }])
})

t.test('instructions: up to 20,000 UTF-16 code units', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/agents`
  const long = await olive.post(base, agent('Long', { instructions: astral.repeat(10_000) }))
  t.equal(long.status, 201)
  t.equal(long.body.agent.instructions, astral.repeat(10_000), 'stored whole')
  t.match(refused(t, await olive.post(base, agent('Longer', { instructions: `${astral.repeat(10_000)}x` })), 400, 'INVALID_BODY')
    .data.issues, [{ path: 'instructions', message: /20000/ }])
  t.equal((await olive.post(base, agent('None', { instructions: null }))).body.agent.instructions, null, 'null is none')
})

t.test('every problem of a body is reported at once, each with its path', async (t) => {
  const { alpha, olive } = await world(t)
  const base = `/api/v1/projects/${alpha}/agents`
  const shape = refused(t, await olive.post(base, {
    name: ' ', harness: 'codex', skills: ['', 'ok'], connectors: 'x', tools: [1], instructions: 5, projectId: alpha,
  }), 400, 'INVALID_BODY')
  t.same(paths(shape).sort(), ['connectors', 'instructions', 'model', 'name', 'projectId', 'skills.0', 'tools.0'])

  const catalog = refused(t, await olive.post(base, agent('Bad', {
    harness: 'cursor', model: 'gpt-unknown', modelProvider: 'nowhere', tools: ['shell.exec'], secrets: ['NO_SUCH'],
  })), 400, 'PROJECT_AGENT_HARNESS_INVALID', 'catalog problems: the first one codes the refusal')
  t.same(paths(catalog), ['harness', 'model', 'modelProvider', 'tools.0', 'secrets.0'])
  t.match(catalog.data, { harnesses: Array, tools: ['shell.exec'], secrets: ['NO_SUCH'] })
  const later = refused(t, await olive.post(base, agent('Bad', { tools: ['shell.exec', 'rm.rf'] })), 400, 'PROJECT_AGENT_TOOL_UNKNOWN')
  t.same(paths(later), ['tools.0', 'tools.1'], 'problems that share a code come together')
})

t.test('a run finds its agent by id or by name ignoring case, in its own project only; requests cannot call it', async (t) => {
  const { alpha, beta, olive, seeded, service } = await world(t)
  const created = await olive.post(`/api/v1/projects/${alpha}/agents`, agent('Caf\u00e9 Runner'))
  const id = created.body.agent.id
  const org = seeded.organizations.acme!.id
  const find = async (project: string, ref: string) => (await service.db.owner<{ id: string | null }[]>`
    select (app.agent_for_run(${org}, ${project}, ${ref})).id`)[0]!.id
  t.equal(await find(alpha, id), id, 'by id')
  t.equal(await find(alpha, ' cafe\u0301 RUNNER '), id, 'by name, ignoring case and normalization')
  t.equal(await find(beta, id), null, 'not in another project')
  t.equal(await find(alpha, 'nobody'), null, 'a null row when absent')
  const other = await olive.post(`/api/v1/projects/${alpha}/agents`, agent(id))
  t.equal(await find(alpha, id), id, 'an id outranks another agent named like it')
  t.equal(await find(alpha, id.toUpperCase()), id)
  t.not(other.body.agent.id, id)
  const [granted] = await service.db.owner`
    select has_function_privilege('api', 'app.agent_for_run(uuid, uuid, text)', 'execute') as callable`
  t.equal(granted!.callable, false)
})
