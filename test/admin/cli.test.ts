// The admin CLI: JSON on stdout and nothing else, per the bootstrap contract.
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { freshDatabase } from '../lib/db.ts'
import { startService } from '../../server/service.ts'
import { loadConfig } from '../../server/core/config.ts'
import { createLogger } from '../../server/core/log.ts'

const run = promisify(execFile)

async function admin(url: string, args: string[], input?: string) {
  const child = run(process.execPath, ['--import=tsx', 'server/admin/cli.ts', ...args], {
    env: { ...process.env, DATABASE_URL: url }, encoding: 'utf8',
  })
  if (input !== undefined) {
    child.child.stdin!.end(input)
  }
  return child
}

t.test('seed creates what the file describes and prints ids and plaintext keys', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  const file = {
    organizations: [{ slug: 'acme', name: 'Acme', skillSharingPolicy: null }],
    users: [{ email: 'olive@acme.test', name: 'Olive Owner', password: 'pw-olive', emailVerified: true,
              memberships: [{ org: 'acme', role: 'owner', disabled: false }], keys: [{ name: 'ci', expiresAt: null }] },
            { email: 'max@acme.test', name: 'Max', memberships: [{ org: 'acme', role: 'member' }], keys: [] }],
    teams: [{ org: 'acme', name: 'Core', members: ['olive@acme.test'] }],
    projects: [{ org: 'acme', name: 'Alpha', createdBy: 'olive@acme.test', access: [{ email: 'max@acme.test', level: 'read' }] }],
    providers: [{ org: 'acme', slug: 'lab', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:8999/v1', apiKey: 'sk-test' }],
    models: [{ org: 'acme', id: 'local-echo', providerSlug: 'local', contextWindow: 8192, maxOutputTokens: 1024, default: true }],
    secrets: [{ org: 'acme', name: 'GITHUB_TOKEN', value: 'ghp-test' }],
    grants: [{ org: 'acme', email: 'max@acme.test', competence: 'notifications.export' }],
  }
  const { stdout } = await admin(db.url, ['seed', '--file', '-'], JSON.stringify(file))
  const out = JSON.parse(stdout)
  t.match(out, {
    organizations: { acme: { id: String } },
    users: { 'olive@acme.test': { id: String, keys: { ci: /^tale_/ } }, 'max@acme.test': { id: String, keys: {} } },
    teams: { Core: { id: String } },
    projects: { Alpha: { id: String } },
  })

  // The printed key works against the service.
  const service = await startService(loadConfig({ DATABASE_URL: db.url, PORT: '0', LOG_LEVEL: 'silent' }), db.url,
    { port: 0, log: createLogger('silent') })
  t.teardown(() => service.close())
  const me = await fetch(`${service.url}/api/v1/me`, { headers: { authorization: `Bearer ${out.users['olive@acme.test'].keys.ci}` } })
  t.equal(me.status, 200)
  const maxKey = await admin(db.url, ['key', 'create', '--email', 'max@acme.test', '--name', 'cli'])
  const created = JSON.parse(maxKey.stdout)
  const projects = await fetch(`${service.url}/api/v1/projects`, { headers: { authorization: `Bearer ${created.key}` } })
  t.equal(((await projects.json()) as { projects: unknown[] }).projects.length, 1, 'the seeded read grant holds')

  const [hash] = await db.owner`select password_hash from app.users where email = 'olive@acme.test'`
  t.match(hash!.password_hash, /^scrypt\$/, 'passwords are stored with a memory-hard KDF')
  const [secret] = await db.owner`select value from app.secrets where name = 'GITHUB_TOKEN'`
  t.equal(secret!.value, 'ghp-test')
})

t.test('a seed file with an error creates nothing', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  const file = {
    organizations: [{ slug: 'acme', name: 'Acme' }],
    users: [{ email: 'olive@acme.test', memberships: [{ org: 'nowhere', role: 'owner' }], keys: [] }],
  }
  await t.rejects(admin(db.url, ['seed', '--file', '-'], JSON.stringify(file)))
  const [count] = await db.owner`select count(*)::int as n from app.organizations`
  t.equal(count!.n, 0)
  const unknownKey = admin(db.url, ['seed', '--file', '-'], JSON.stringify({ organisations: [] }))
  await t.rejects(unknownKey, 'unknown keys in a seed file are refused')
})

t.test('single operator commands', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  const json = async (args: string[]) => {
    const { stdout, stderr } = await admin(db.url, args)
    t.equal(stderr, '', `${args.slice(0, 2).join(' ')} writes nothing to stderr`)
    return JSON.parse(stdout)
  }
  t.match(await json(['migrate']), { applied: [] })
  t.match(await json(['org', 'create', '--slug', 'acme', '--name', 'Acme']), { id: String })
  t.match(await json(['user', 'create', '--email', 'eve@acme.test', '--name', 'Eve', '--password', 'pw', '--verified']), { id: String })
  t.same(await json(['member', 'add', '--org', 'acme', '--email', 'eve@acme.test', '--role', 'editor']), { ok: true })
  const key = await json(['key', 'create', '--email', 'eve@acme.test', '--name', 'laptop'])
  t.match(key, { id: String, key: /^tale_/ })
  t.same(await json(['model', 'add', '--org', 'acme', '--id', 'local-echo', '--provider', 'local', '--context-window', '4096', '--default']), { ok: true })
  const [created] = await db.owner`select app.operator_project_create(app.operator_org_id('acme'), app.operator_user_id('eve@acme.test'), 'Beta') as id`
  t.ok(created!.id)
  t.same(await json(['project', 'grant', '--org', 'acme', '--project', 'Beta', '--email', 'eve@acme.test', '--level', 'read']), { ok: true })
  const [grant] = await db.owner`select level from app.project_access where project_id = ${created!.id}`
  t.equal(grant!.level, 'read', 'a second grant replaces the first')
  t.same(await json(['key', 'revoke', '--id', key.id]), { revoked: true })
  t.same(await json(['key', 'revoke', '--id', key.id]), { revoked: false }, 'revoking twice changes nothing')
  await t.rejects(admin(db.url, ['member', 'add', '--org', 'acme']), 'a missing option is refused')
  await t.rejects(admin(db.url, ['frobnicate']), 'an unknown command is refused')
})
