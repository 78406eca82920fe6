// The admin CLI: JSON on stdout and nothing else, per the bootstrap contract.
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
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

t.test('a database seeded from a file on stdin', async (t) => {
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

  t.test('seed creates what the file describes and prints ids and plaintext keys', async (t) => {
    t.match(out, {
      organizations: { acme: { id: String } },
      users: { 'olive@acme.test': { id: String, keys: { ci: /^tale_/ } }, 'max@acme.test': { id: String, keys: {} } },
      teams: { Core: { id: String } },
      projects: { Alpha: { id: String } },
    })
  })

  t.test('the keys seed prints and key create prints work against the service, with the seeded grants', async (t) => {
    const service = await startService(loadConfig({ DATABASE_URL: db.url, PORT: '0', LOG_LEVEL: 'silent' }), db.url,
      { port: 0, log: createLogger('silent') })
    t.teardown(() => service.close())
    const me = await fetch(`${service.url}/api/v1/me`, { headers: { authorization: `Bearer ${out.users['olive@acme.test'].keys.ci}` } })
    t.equal(me.status, 200)
    const maxKey = await admin(db.url, ['key', 'create', '--email', 'max@acme.test', '--name', 'cli'])
    const created = JSON.parse(maxKey.stdout)
    const projects = await fetch(`${service.url}/api/v1/projects`, { headers: { authorization: `Bearer ${created.key}` } })
    t.equal(((await projects.json()) as { projects: unknown[] }).projects.length, 1, 'the seeded read grant holds')
  })

  t.test('seeded passwords are stored with a memory-hard KDF, and secrets as given', async (t) => {
    const [hash] = await db.owner`select password_hash from app.users where email = 'olive@acme.test'`
    t.match(hash!.password_hash, /^scrypt\$/, 'passwords are stored with a memory-hard KDF')
    const [secret] = await db.owner`select value from app.secrets where name = 'GITHUB_TOKEN'`
    t.equal(secret!.value, 'ghp-test')
  })
})

t.test('seed refusals', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())

  t.test('a seed file with an error creates nothing', async (t) => {
    const file = {
      organizations: [{ slug: 'acme', name: 'Acme' }],
      users: [{ email: 'olive@acme.test', memberships: [{ org: 'nowhere', role: 'owner' }], keys: [] }],
    }
    await t.rejects(admin(db.url, ['seed', '--file', '-'], JSON.stringify(file)))
    const [count] = await db.owner`select count(*)::int as n from app.organizations`
    t.equal(count!.n, 0)
  })

  t.test('a seed file with an unknown key is refused', async (t) => {
    const unknownKey = admin(db.url, ['seed', '--file', '-'], JSON.stringify({ organisations: [] }))
    await t.rejects(unknownKey, 'unknown keys in a seed file are refused')
  })
})

t.test('an organization\'s language in a seed file', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())

  t.test('a seeded organization takes the language it names, en when it names none', async (t) => {
    const file = { organizations: [{ slug: 'acme', name: 'Acme', language: 'de' }, { slug: 'globex', name: 'Globex' }] }
    await admin(db.url, ['seed', '--file', '-'], JSON.stringify(file))
    t.same(await db.owner`select slug, language from app.organizations order by slug`,
      [{ slug: 'acme', language: 'de' }, { slug: 'globex', language: 'en' }])
  })

  t.test('a language other than en, de or fr is refused in words, creating nothing', async (t) => {
    const file = { organizations: [{ slug: 'initech', name: 'Initech', language: 'es' }] }
    const refused = await admin(db.url, ['seed', '--file', '-'], JSON.stringify(file)).catch((error) => error)
    t.equal(refused.code, 2)
    t.equal(refused.stderr, 'seed file: organizations.0.language must be one of en, de, fr\n')
    t.same(await db.owner`select slug from app.organizations where slug = 'initech'`, [])
  })
})

t.test('single operator commands, on one database', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  const json = async (t: Test, args: string[]) => {
    const { stdout, stderr } = await admin(db.url, args)
    t.equal(stderr, '', `${args.slice(0, 2).join(' ')} writes nothing to stderr`)
    return JSON.parse(stdout)
  }
  let key: { id: string }

  t.test('each operator command prints its JSON result and nothing on stderr', async (t) => {
    t.match(await json(t, ['migrate']), { applied: [] })
    t.match(await json(t, ['org', 'create', '--slug', 'acme', '--name', 'Acme']), { id: String })
    t.match(await json(t, ['user', 'create', '--email', 'eve@acme.test', '--name', 'Eve', '--password', 'pw', '--verified']), { id: String })
    t.same(await json(t, ['member', 'add', '--org', 'acme', '--email', 'eve@acme.test', '--role', 'editor']), { ok: true })
    key = await json(t, ['key', 'create', '--email', 'eve@acme.test', '--name', 'laptop'])
    t.match(key, { id: String, key: /^tale_/ })
    t.same(await json(t, ['model', 'add', '--org', 'acme', '--id', 'local-echo', '--provider', 'local', '--context-window', '4096', '--default']), { ok: true })
  })

  t.test('project grant replaces an existing grant', async (t) => {
    const [created] = await db.owner`select app.operator_project_create(app.operator_org_id('acme'), app.operator_user_id('eve@acme.test'), 'Beta') as id`
    t.ok(created!.id)
    t.same(await json(t, ['project', 'grant', '--org', 'acme', '--project', 'Beta', '--email', 'eve@acme.test', '--level', 'read']), { ok: true })
    const [grant] = await db.owner`select level from app.project_access where project_id = ${created!.id}`
    t.equal(grant!.level, 'read', 'a second grant replaces the first')
  })

  t.test('key revoke revokes once; revoking twice changes nothing', async (t) => {
    t.same(await json(t, ['key', 'revoke', '--id', key.id]), { revoked: true })
    t.same(await json(t, ['key', 'revoke', '--id', key.id]), { revoked: false }, 'revoking twice changes nothing')
  })

  t.test('harness list, add and remove keep the deployment\'s harness list', async (t) => {
    const ids = async () => (await json(t, ['harness', 'list'])).harnesses.map((h: { id: string }) => h.id)
    t.same(await ids(), ['claude-code', 'codex', 'opencode'])
    t.same(await json(t, ['harness', 'add', '--id', 'aider', '--name', 'Aider']), { ok: true })
    t.same(await ids(), ['claude-code', 'codex', 'opencode', 'aider'])
    t.same(await json(t, ['harness', 'remove', '--id', 'opencode']), { removed: true })
    t.same(await json(t, ['harness', 'remove', '--id', 'opencode']), { removed: false }, 'removing twice changes nothing')
    t.same(await ids(), ['claude-code', 'codex', 'aider'])
    await t.rejects(admin(db.url, ['harness', 'add', '--id', 'Not Valid']), 'an id that is not lowercase letters, digits and dashes')
  })

  t.test('a missing option or an unknown command is refused', async (t) => {
    await t.rejects(admin(db.url, ['member', 'add', '--org', 'acme']), 'a missing option is refused')
    await t.rejects(admin(db.url, ['frobnicate']), 'an unknown command is refused')
  })
})

t.test('help', async (t) => {
  // No database is needed to ask for help.
  const url = 'postgres://nobody@127.0.0.1:1/none'

  t.test('--help, -h, help and no command print the usage, listing every command, on stdout', async (t) => {
    for (const args of [['--help'], ['-h'], ['help'], []]) {
      const { stdout } = await admin(url, args)
      t.match(stdout, /^usage: npm run --silent admin -- <command>/, `${args.join(' ') || '(nothing)'} prints the usage`)
      for (const command of ['migrate', 'seed', 'org create', 'org upload-policy', 'user create', 'member add', 'key create', 'key revoke', 'project grant', 'model add', 'harness list', 'harness add', 'harness remove']) {
        t.ok(stdout.includes(`\n  ${command}`), `it lists ${command}`)
      }
    }
  })

  t.test('a command\'s --help, or help and the command, prints that command\'s usage', async (t) => {
    for (const args of [['member', 'add', '--help'], ['help', 'member', 'add']]) {
      const { stdout } = await admin(url, args)
      t.match(stdout, /^usage: npm run --silent admin -- member add --org S --email E --role owner\|admin\|developer\|editor\|member/, args.join(' '))
    }
  })

  t.test('an unknown command is a usage error: exit 2 naming it', async (t) => {
    const unknown = await admin(url, ['frobnicate']).catch((error) => error)
    t.equal(unknown.code, 2, 'an unknown command is a usage error')
    t.match(unknown.stderr, /unknown command "frobnicate"/)
  })
})

t.test('an invalid role is refused in words, before the database is asked', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  await admin(db.url, ['org', 'create', '--slug', 'acme', '--name', 'Acme'])
  await admin(db.url, ['user', 'create', '--email', 'eve@acme.test'])
  const refused = await admin(db.url, ['member', 'add', '--org', 'acme', '--email', 'eve@acme.test', '--role', 'boss']).catch((error) => error)
  t.equal(refused.code, 2)
  t.equal(refused.stderr, 'role must be one of owner, admin, developer, editor, member\n')
  const level = await admin(db.url, ['project', 'grant', '--org', 'acme', '--project', 'X', '--email', 'eve@acme.test', '--level', 'write']).catch((error) => error)
  t.equal(level.stderr, 'level must be one of read, edit\n')
})

t.test('database refusals never show a constraint or index name', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  const names = (await db.owner<{ name: string }[]>`
    select conname as name from pg_constraint where connamespace = 'app'::regnamespace
    union select c.relname from pg_index i join pg_class c on c.oid = i.indexrelid where c.relnamespace = 'app'::regnamespace`)
    .map((row) => row.name)
  t.ok(names.includes('memberships_role_check') && names.includes('organizations_slug_key'), 'the catalog was read')
  const refusal = async (args: string[], expected: string) => {
    const failed = await admin(db.url, args).catch((error) => error)
    t.equal(failed.code, 1, `${args.slice(0, 2).join(' ')} fails`)
    t.equal(failed.stderr, `error: ${expected}\n`)
    t.same(names.filter((name) => failed.stderr.includes(name)), [], 'no constraint or index is named')
  }
  await admin(db.url, ['org', 'create', '--slug', 'acme', '--name', 'Acme'])
  await refusal(['org', 'create', '--slug', 'ACME', '--name', 'Again'], 'an organization with this slug already exists')
  await refusal(['org', 'create', '--slug', 'no spaces', '--name', 'Bad'], 'slug must be 1 to 64 lowercase letters, digits and inner hyphens')
  await refusal(['org', 'create', '--slug', 'blank', '--name', ' '], 'name must not be empty')
  await admin(db.url, ['user', 'create', '--email', 'eve@acme.test'])
  await refusal(['user', 'create', '--email', 'EVE@acme.test'], 'a user with this email already exists')
  await refusal(['user', 'create', '--email', 'no-at-sign'], 'email must be an email address')
  await refusal(['member', 'add', '--org', 'nowhere', '--email', 'eve@acme.test', '--role', 'member'], 'no organization with slug nowhere')
  await refusal(['model', 'add', '--org', 'acme', '--id', 'm', '--provider', 'local', '--context-window', '0'], 'context-window must be positive')
})

t.test('a role refused by the database itself reads as the rule', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  const { describeDatabaseError } = await import('../../server/admin/errors.ts')
  const { addMember, createOrganization, createUser } = await import('../../server/admin/operations.ts')
  await createOrganization(db.owner, 'acme', 'Acme')
  await createUser(db.owner, { email: 'eve@acme.test' })
  const error = await addMember(db.owner, 'acme', 'eve@acme.test', 'boss').catch((e) => e)
  t.equal(describeDatabaseError(error), 'role must be one of owner, admin, developer, editor, member')
})
