// GET /api/v1/me, /teams, /models.
import t from 'tap'
import { world } from '../lib/world.ts'
import { acme, person } from '../lib/fixtures.ts'
import { pinClock } from '../lib/db.ts'

t.test('/me, for acme\'s people', async (t) => {
  const expiresAt = Date.now() + 86_400_000
  const { service, seeded } = await world(t, { projects: [], seed: {
    ...acme(),
    users: [...acme().users!, { ...person('temp@acme.test', [{ org: 'acme', role: 'member' }], []), keys: [{ name: 'temp', expiresAt }] }],
  } })
  const key = (email: string) => seeded.users[email]!.keys.main!

  t.test('/me reports the user, the organization, the key and capabilities, as a revalidatable JSON read', async (t) => {
    const owner = await service.request('GET', '/api/v1/me', { key: key('olive@acme.test') })
    t.equal(owner.status, 200)
    t.match(owner.body, {
      user: { id: seeded.users['olive@acme.test']!.id, email: 'olive@acme.test', emailVerified: true },
      organization: { id: seeded.organizations.acme!.id, slug: 'acme', name: 'Acme', role: 'owner' },
      organizations: [{ slug: 'acme', name: 'Acme' }],
      key: { name: 'main', expiresAt: null },
    })
    t.same(owner.body.capabilities,
      { developer: true, deploymentEditor: false, notificationExport: true, skillPublish: true, actAs: true })
    t.ok(owner.headers.get('etag'), 'a JSON read carries an ETag')
    t.equal(owner.headers.get('cache-control'), 'private, no-cache')
    t.ok(owner.headers.get('x-service-api-version'))
  })

  t.test('/me reports the key\'s expiresAt in epoch milliseconds', async (t) => {
    const temp = await service.request('GET', '/api/v1/me', { key: seeded.users['temp@acme.test']!.keys.temp! })
    t.equal(temp.body.key.expiresAt, expiresAt, 'key.expiresAt is epoch ms')
  })

  t.test('/me derives capabilities from the role', async (t) => {
    const expected: Record<string, Record<string, boolean>> = {
      'adam@acme.test': { developer: true, notificationExport: true, actAs: true },
      'dev@acme.test': { developer: true, notificationExport: false, actAs: false },
      'eddie@acme.test': { developer: false, notificationExport: false, actAs: false },
      'max@acme.test': { developer: false, notificationExport: false, actAs: false },
    }
    for (const [email, capabilities] of Object.entries(expected)) {
      const me = await service.request('GET', '/api/v1/me', { key: key(email) })
      t.match(me.body.capabilities, capabilities, email)
    }
  })
})

t.test('capabilities, under grants and a skill sharing policy', async (t) => {
  const now = Date.now()
  const { service, seeded } = await world(t, { projects: [], seed: {
    ...acme(),
    organizations: [{ slug: 'acme', name: 'Acme', skillSharingPolicy: { roles: ['owner', 'admin'] } },
                    { slug: 'globex', name: 'Globex', skillSharingPolicy: null }],
    grants: [
      { org: 'acme', email: 'max@acme.test', competence: 'tale:notifications.export', expiresAt: now + 60_000 },
      { org: 'acme', email: 'max@acme.test', competence: 'rest.act-as', expiresAt: null },
      { org: 'acme', email: 'eddie@acme.test', competence: 'skills.publish', expiresAt: null },
    ],
  } })
  const me = async (email: string) =>
    (await service.request('GET', '/api/v1/me', { key: seeded.users[email]!.keys.main })).body.capabilities

  t.test('live grants add capabilities, and the sharing policy admits its roles, granted people, or everyone without a policy', async (t) => {
    t.match(await me('max@acme.test'), { notificationExport: true, actAs: true, skillPublish: false },
      'live grants add capabilities; the sharing policy does not admit members')
    t.match(await me('eddie@acme.test'), { skillPublish: true }, 'a publish grant admits under a policy')
    t.match(await me('adam@acme.test'), { skillPublish: true }, 'an admitted role publishes')
    t.match(await me('gina@globex.test'), { skillPublish: true }, 'no policy: every member publishes')
  })

  t.test('a revoked grant no longer counts', async (t) => {
    await service.db.owner`update app.competence_grants set revoked_at = now() where competence = 'rest.act-as'`
    t.match(await me('max@acme.test'), { actAs: false }, 'a revoked grant no longer counts')
  })

  t.test('an expired grant no longer counts', async (t) => {
    await pinClock(service.db.owner, now + 120_000)
    t.match(await me('max@acme.test'), { notificationExport: false }, 'an expired grant no longer counts')
  })

  t.test('disabling a member revokes their grants', async (t) => {
    await service.db.owner`update app.memberships set disabled = true where user_id = ${seeded.users['eddie@acme.test']!.id}`
    const [grant] = await service.db.owner`select revoked_at from app.competence_grants where competence = 'skills.publish'`
    t.ok(grant!.revoked_at, 'disabling a member revokes their grants')
  })

  t.test('removing a member revokes their grants but keeps them, and every grant and revocation is audited', async (t) => {
    await service.db.owner`delete from app.memberships where user_id = ${seeded.users['max@acme.test']!.id}`
    const kept = await service.db.owner`select competence, revoked_at from app.competence_grants
                                         where user_id = ${seeded.users['max@acme.test']!.id} order by competence`
    t.equal(kept.length, 2, 'removing a member keeps their grants as the audit trail')
    t.ok(kept.every((g) => g.revoked_at !== null), 'and revokes them')
    const audit = await service.db.owner`select action, data->>'reason' as reason from app.audit_log
                                          where action like 'competence.%' order by id`
    t.same(audit.map((a) => a.action).filter((a) => a === 'competence.granted').length, 3, 'grants are audited')
    t.ok(audit.some((a) => a.action === 'competence.revoked' && a.reason === 'member disabled'))
    t.ok(audit.some((a) => a.action === 'competence.revoked' && a.reason === 'member removed'))
  })

  t.test('deploymentEditor comes from the operator allowlist alone, not from a role', async (t) => {
    await service.db.owner`insert into app.deployment_editors (user_id) values (${seeded.users['dev@acme.test']!.id})`
    t.match(await me('dev@acme.test'), { deploymentEditor: true }, 'the operator allowlist grants deploymentEditor')
    t.match(await me('olive@acme.test'), { deploymentEditor: false }, 'an owner role alone is not enough')
  })
})

t.test('/teams lists every team of the organization and marks membership', async (t) => {
  const { service, seeded } = await world(t, { projects: [], seed: {
    ...acme(),
    teams: [{ org: 'acme', name: 'Core', members: ['eddie@acme.test'] }, { org: 'acme', name: 'Ops', members: [] },
            { org: 'globex', name: 'Hidden', members: ['gina@globex.test'] }],
  } })
  const res = await service.request('GET', '/api/v1/teams', { key: seeded.users['eddie@acme.test']!.keys.main })
  t.equal(res.status, 200)
  t.same(res.body, { teams: [
    { id: seeded.teams.Core!.id, name: 'Core', member: true },
    { id: seeded.teams.Ops!.id, name: 'Ops', member: false },
  ] })
})

t.test('/models, with a provider configured for acme', async (t) => {
  const { service, seeded } = await world(t, { projects: [], seed: {
    ...acme(),
    providers: [{ org: 'acme', slug: 'lab', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:8999/v1', apiKey: 'sk' }],
    models: [{ org: 'acme', id: 'lab-large', providerSlug: 'lab', contextWindow: 32000, maxOutputTokens: null, default: true }],
  } })

  t.test('/models lists the configured models and the local one by provider then id, with the harnesses', async (t) => {
    const acmeModels = await service.request('GET', '/api/v1/models', { key: seeded.users['max@acme.test']!.keys.main })
    t.equal(acmeModels.status, 200)
    t.same(acmeModels.body.models, [
      { id: 'lab-large', providerSlug: 'lab', contextWindow: 32000, capabilities: ['chat'], default: true },
      { id: 'local-echo', providerSlug: 'local', contextWindow: 8192, maxOutputTokens: 1024, capabilities: ['chat'], default: false },
    ], 'ordered by provider then id; maxOutputTokens is absent when no ceiling is declared')
    t.same(acmeModels.body.harnesses.map((h: { id: string }) => h.id), ['claude-code', 'codex', 'opencode'])
  })

  t.test('every organization has the local model', async (t) => {
    const globex = await service.request('GET', '/api/v1/models', { key: seeded.users['gina@globex.test']!.keys.main })
    t.same(globex.body.models.map((m: { id: string }) => m.id), ['local-echo'], 'every organization has the local model')
  })

  t.test('a model whose provider is gone is not listed', async (t) => {
    await service.db.owner`delete from app.model_providers where slug = 'lab'`
    const orphaned = await service.request('GET', '/api/v1/models', { key: seeded.users['max@acme.test']!.keys.main })
    t.same(orphaned.body.models.map((m: { id: string }) => m.id), ['local-echo'], 'a model whose provider is gone is not listed')
  })
})
