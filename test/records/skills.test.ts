// Skills over real HTTP (docs/skills.md): saves that create or replace, personal
// skills their owner's alone, sharing with the organization under the skillPublish
// capability (policy roles, live, expired and revoked grants), the 4 MiB body, and
// agents naming skills they cannot see.
import t from 'tap'
import { world, type Client } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'

const MAX_BODY = 4 * 1024 * 1024
const skill = (name: string, extra: Record<string, unknown> = {}) => ({ name, content: `# ${name}\n\nDo the thing.`, ...extra })
const shared = (name: string, extra: Record<string, unknown> = {}) => skill(name, { visibility: 'organization', ...extra })
const slugs = async (caller: Client) =>
  (await caller.get('/api/v1/skills')).body.skills.map((s: { slug: string; visibility: string }) => `${s.slug}:${s.visibility}`)
const canPublish = async (caller: Client) => (await caller.get('/api/v1/me')).body.capabilities.skillPublish as boolean

t.test('a personal skill: created 201 with its Location, replaced 200, read, listed without content, deleted', async (t) => {
  const { max } = await world(t)
  const created = await max.put('/api/v1/skills/triage', skill('  Triage  ', { description: 'How to sort', content: '# Triage\n\nDo the thing.' }))
  t.equal(created.status, 201)
  t.equal(created.headers.get('location'), '/api/v1/skills/triage')
  t.match(created.body, { created: true, skill: {
    slug: 'triage', visibility: 'personal', name: 'Triage', description: 'How to sort', content: '# Triage\n\nDo the thing.',
    size: Buffer.byteLength('# Triage\n\nDo the thing.'), createdBy: String, createdAt: Number, updatedAt: Number,
  } }, 'the name is trimmed; personal is the default')

  const replaced = await max.put('/api/v1/skills/triage', skill('Triage v2', { content: 'Grüße' }))
  t.equal(replaced.status, 200, 'a save of an existing slug replaces it')
  t.equal(replaced.headers.get('location'), null, 'nothing was created')
  t.match(replaced.body, { created: false, skill: { name: 'Triage v2', content: 'Grüße', size: 7, description: '' } },
    'every field replaced; an omitted description is empty')
  t.equal(replaced.body.skill.createdAt, created.body.skill.createdAt)

  t.same((await max.get('/api/v1/skills/triage')).body, { skill: replaced.body.skill })
  const list = await max.get('/api/v1/skills')
  t.equal(list.status, 200)
  const { content: _, ...summary } = replaced.body.skill
  t.same(list.body, { skills: [summary] }, 'the list carries no content')

  t.equal((await max.del('/api/v1/skills/triage')).status, 204)
  refused(t, await max.get('/api/v1/skills/triage'), 404, 'SKILL_NOT_FOUND', 'read after delete')
  refused(t, await max.del('/api/v1/skills/triage'), 404, 'SKILL_NOT_FOUND', 'delete of an absent skill')
})

t.test('a personal skill is its owner\'s alone: another member, the owner role included, gets 404 and no list entry', async (t) => {
  const { max, olive, eddie } = await world(t)
  t.equal((await max.put('/api/v1/skills/diary', skill('Diary', { content: 'private notes' }))).status, 201)
  for (const [who, caller] of [['the owner', olive], ['an editor', eddie]] as const) {
    refused(t, await caller.get('/api/v1/skills/diary'), 404, 'SKILL_NOT_FOUND', `${who} reads`)
    refused(t, await caller.get('/api/v1/skills/diary?visibility=personal'), 404, 'SKILL_NOT_FOUND', `${who} reads by visibility`)
    refused(t, await caller.del('/api/v1/skills/diary'), 404, 'SKILL_NOT_FOUND', `${who} deletes`)
    t.same(await slugs(caller), [], `${who} lists nothing`)
  }
  const own = await olive.put('/api/v1/skills/diary', skill('Olive\'s diary'))
  t.equal(own.status, 201, 'the same slug is another member\'s own personal skill')
  t.equal((await max.get('/api/v1/skills/diary')).body.skill.content, 'private notes', 'the first owner\'s is untouched')
  t.same(await slugs(max), ['diary:personal'])
})

t.test('without a sharing policy every member shares with the organization; every member reads shared skills', async (t) => {
  const { max, eddie, gina } = await world(t)
  t.equal(await canPublish(max), true, '/me reports skillPublish for the member role')
  const created = await max.put('/api/v1/skills/handbook', shared('Handbook'))
  t.equal(created.status, 201)
  t.equal(created.headers.get('location'), '/api/v1/skills/handbook?visibility=organization')
  t.equal(created.body.skill.visibility, 'organization')
  t.equal((await eddie.get('/api/v1/skills/handbook')).body.skill.name, 'Handbook', 'another member reads it')
  t.same(await slugs(eddie), ['handbook:organization'])
  t.equal((await eddie.put('/api/v1/skills/handbook', shared('Handbook 2'))).status, 200, 'and may replace it')
  refused(t, await gina.get('/api/v1/skills/handbook'), 404, 'SKILL_NOT_FOUND', 'another organization')
  t.same(await slugs(gina), [])
})

t.test('with a sharing policy: its roles and live publish grants share; anyone else is refused 403 SKILL_PUBLISH_FORBIDDEN', async (t) => {
  const hour = 60 * 60 * 1000
  const { service, seeded, olive, adam, dev, eddie, max } = await world(t, { seed: {
    organizations: [
      { slug: 'acme', name: 'Acme', skillSharingPolicy: { roles: ['owner', 'admin'] } },
      { slug: 'globex', name: 'Globex', skillSharingPolicy: null },
    ],
    grants: [
      { org: 'acme', email: 'eddie@acme.test', competence: 'tale:skills.publish', expiresAt: Date.now() + hour },
      { org: 'acme', email: 'dev@acme.test', competence: 'skills.publish', expiresAt: Date.now() - hour },
      { org: 'acme', email: 'max@acme.test', competence: 'skills.publish', expiresAt: null },
    ],
  } })
  await service.db.owner`update app.competence_grants set revoked_at = now()
                          where user_id = ${seeded.users['max@acme.test']!.id}`

  t.equal((await olive.put('/api/v1/skills/onboarding', shared('Onboarding'))).status, 201, 'the owner role is admitted')
  t.equal((await adam.put('/api/v1/skills/release', shared('Release'))).status, 201, 'the admin role is admitted')
  t.equal((await eddie.put('/api/v1/skills/support', shared('Support'))).status, 201, 'a live grant admits an editor')
  t.equal(await canPublish(eddie), true)

  for (const [who, caller] of [['an expired grant', dev], ['a revoked grant', max]] as const) {
    t.equal(await canPublish(caller), false, `/me: ${who} gives no skillPublish`)
    const body = refused(t, await caller.put('/api/v1/skills/rogue', shared('Rogue')), 403, 'SKILL_PUBLISH_FORBIDDEN', `${who}: create`)
    t.equal(body.data.capability, 'skillPublish')
    refused(t, await caller.put('/api/v1/skills/onboarding', shared('Hijacked')), 403, 'SKILL_PUBLISH_FORBIDDEN', `${who}: replace`)
    refused(t, await caller.del('/api/v1/skills/onboarding'), 403, 'SKILL_PUBLISH_FORBIDDEN', `${who}: delete`)
    t.equal((await caller.put('/api/v1/skills/rogue', skill('Mine'))).status, 201, `${who}: a personal skill needs nothing`)
  }
  const kept = await max.get('/api/v1/skills/onboarding')
  t.match(kept.body.skill, { name: 'Onboarding', visibility: 'organization' }, 'refused writes changed nothing; members still read it')
  t.same(await slugs(olive), ['onboarding:organization', 'release:organization', 'support:organization'],
    'refused creates wrote nothing')

  const [audit] = await service.db.owner`select count(*)::int as n from app.audit_log where action = 'skill.published'`
  t.equal(audit!.n, 3, 'shared skills are audited')
  t.equal((await eddie.del('/api/v1/skills/support')).status, 204, 'a live grant also deletes')
})

t.test('a slug names the caller\'s personal skill first; visibility picks either', async (t) => {
  const { olive, max } = await world(t)
  await olive.put('/api/v1/skills/triage', shared('Shared triage'))
  const personal = await olive.put('/api/v1/skills/triage', skill('My triage'))
  t.equal(personal.status, 201, 'a personal skill may share the slug of an organization one')
  t.equal((await olive.get('/api/v1/skills/triage')).body.skill.name, 'My triage')
  t.equal((await olive.get('/api/v1/skills/triage?visibility=organization')).body.skill.name, 'Shared triage')
  t.equal((await max.get('/api/v1/skills/triage')).body.skill.name, 'Shared triage', 'other members see the shared one')
  t.same(await slugs(olive), ['triage:personal', 'triage:organization'], 'listed by slug, personal first')
  t.equal((await olive.del('/api/v1/skills/triage')).status, 204, 'a delete resolves the same way')
  t.equal((await olive.get('/api/v1/skills/triage')).body.skill.name, 'Shared triage', 'the personal one was deleted')
  refused(t, await olive.get('/api/v1/skills/triage?visibility=personal'), 404, 'SKILL_NOT_FOUND')
  refused(t, await olive.get('/api/v1/skills/triage?visibility=team'), 400, 'INVALID_QUERY')
})

t.test('a save\'s body is at most 4 MiB, content included: one byte more answers 413 BODY_TOO_LARGE', async (t) => {
  const { max } = await world(t)
  const frame = Buffer.byteLength(JSON.stringify({ name: 'Big', content: '', visibility: 'personal' }))
  const body = (size: number) => ({ name: 'Big', content: 'x'.repeat(size - frame), visibility: 'personal' })
  t.equal(Buffer.byteLength(JSON.stringify(body(MAX_BODY))), MAX_BODY)
  const fits = await max.put('/api/v1/skills/big', body(MAX_BODY))
  t.equal(fits.status, 201, 'exactly 4 MiB is saved')
  t.equal(fits.body.skill.size, MAX_BODY - frame)
  const over = refused(t, await max.put('/api/v1/skills/bigger', body(MAX_BODY + 1)), 413, 'BODY_TOO_LARGE')
  t.equal(over.data.limitBytes, MAX_BODY)
  refused(t, await max.get('/api/v1/skills/bigger'), 404, 'SKILL_NOT_FOUND', 'nothing saved')
})

t.test('shapes: the slug, a blank name or content, unknown keys', async (t) => {
  const { max } = await world(t)
  for (const slug of ['Triage', 'tri_age', '-triage', 'x'.repeat(64)]) {
    const body = refused(t, await max.put(`/api/v1/skills/${slug}`, skill('Bad')), 400, 'INVALID_BODY', `slug ${slug}`)
    t.same(body.data.issues.map((i: { path: string }) => i.path), ['slug'])
    refused(t, await max.get(`/api/v1/skills/${slug}`), 404, 'SKILL_NOT_FOUND', `read of slug ${slug}`)
  }
  t.equal((await max.put(`/api/v1/skills/${'a'.repeat(63)}`, skill('Long'))).status, 201, '63 characters')
  const shape = refused(t, await max.put('/api/v1/skills/ok', { name: '  ', content: ' \n ', visibility: 'team', owner: 'x' }),
    400, 'INVALID_BODY')
  t.same(shape.data.issues.map((i: { path: string }) => i.path).sort(), ['content', 'name', 'owner', 'visibility'])
  refused(t, await max.put('/api/v1/skills/ok', skill('x'.repeat(201))), 400, 'INVALID_BODY', 'a name of 201 units')
})

t.test('an agent names only skills the caller can see: else 400 PROJECT_AGENT_SKILL_UNKNOWN at skills.N', async (t) => {
  const { alpha, olive, eddie, max } = await world(t)
  await olive.put('/api/v1/skills/triage', shared('Triage'))
  await olive.put('/api/v1/skills/olive-notes', skill('Olive\'s notes'))
  await max.put('/api/v1/skills/max-notes', skill('Max\'s notes'))
  const base = `/api/v1/projects/${alpha}/agents`
  const agent = (name: string, skills: string[]) => ({ name, harness: 'codex', model: 'local-echo', skills, connectors: [] })

  const ok = await olive.post(base, agent('Reviewer', ['triage', 'olive-notes']))
  t.equal(ok.status, 201, 'the organization\'s and the caller\'s own personal skills')
  t.same(ok.body.agent.skills, ['triage', 'olive-notes'])

  const bad = refused(t, await olive.post(base, agent('Snoop', ['triage', 'max-notes', 'nowhere'])), 400, 'PROJECT_AGENT_SKILL_UNKNOWN')
  t.same(bad.data.skills.sort(), ['max-notes', 'nowhere'], 'another member\'s personal skill is as unknown as a missing one')
  t.same(bad.data.issues.map((i: { path: string }) => i.path), ['skills.1', 'skills.2'])
  const mixed = refused(t, await olive.post(base, { ...agent('Mixed', ['nowhere']), tools: ['shell.exec'] }), 400,
    'PROJECT_AGENT_TOOL_UNKNOWN', 'with other catalog problems')
  t.same(mixed.data.issues.map((i: { path: string }) => i.path), ['tools.0', 'skills.0'], 'every problem at once')
  t.same(mixed.data.skills, ['nowhere'])

  const id = ok.body.agent.id
  t.equal((await eddie.put(`${base}/${id}`, agent('Reviewer', ['triage', 'olive-notes']))).status, 200,
    'a save keeps a skill the stored agent names, though this caller cannot see it')
  refused(t, await eddie.post(base, agent('Copy', ['olive-notes'])), 400, 'PROJECT_AGENT_SKILL_UNKNOWN',
    'but cannot name it anew')
  refused(t, await eddie.put(`${base}/${id}`, agent('Reviewer', ['triage', 'olive-notes', 'max-notes'])), 400,
    'PROJECT_AGENT_SKILL_UNKNOWN', 'nor add an invisible one on a save')
})
