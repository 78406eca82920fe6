// Row-level security, checked in SQL against the catalog so that a table added
// later is held to the same rules without anyone remembering to add it here.
import t from 'tap'
import { sqlState, databaseWithRequests } from '../lib/db.ts'
import type { Sql } from '../../server/core/db/connection.ts'
import { seed } from '../../server/admin/operations.ts'
import { asCaller } from '../lib/caller.ts'
import { acme, person, seedFile } from '../lib/fixtures.ts'

const { db, requests } = await databaseWithRequests(t)

const seeded = await seed(db.owner, seedFile({
  ...acme(),
  users: [
    ...acme().users!,
    person('guest@globex.test', [{ org: 'globex', role: 'member' }]),
  ],
  teams: [{ org: 'acme', name: 'Core', members: ['eddie@acme.test'] }, { org: 'globex', name: 'Ops', members: ['gina@globex.test'] }],
  projects: [
    { org: 'acme', name: 'Alpha', createdBy: 'olive@acme.test', access: [{ team: 'Core', level: 'read' }] },
    { org: 'globex', name: 'Gamma', createdBy: 'gina@globex.test', access: [] },
  ],
  providers: [
    { org: 'acme', slug: 'lab', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-acme' },
    { org: 'globex', slug: 'lab', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-globex' },
  ],
  models: [
    { org: 'acme', id: 'lab-large', providerSlug: 'lab', contextWindow: 1000, maxOutputTokens: null, default: true },
    { org: 'globex', id: 'lab-large', providerSlug: 'lab', contextWindow: 1000, maxOutputTokens: null, default: true },
  ],
  secrets: [{ org: 'acme', name: 'TOKEN', value: 'acme-secret' }, { org: 'globex', name: 'TOKEN', value: 'globex-secret' }],
  grants: [
    { org: 'acme', email: 'max@acme.test', competence: 'notifications.export', expiresAt: null },
    { org: 'globex', email: 'guest@globex.test', competence: 'notifications.export', expiresAt: null },
  ],
}))
const acmeId = seeded.organizations.acme!.id
const globexId = seeded.organizations.globex!.id
for (const [org, project] of [[acmeId, seeded.projects.Alpha!.id], [globexId, seeded.projects.Gamma!.id]]) {
  await db.owner`insert into app.folders (organization_id, project_id, name, depth) values (${org!}, ${project!}, 'Docs', 1)`
  const [creator] = await db.owner`select created_by from app.projects where id = ${project!}`
  const [upload] = await db.owner`
    insert into app.uploads (organization_id, project_id, created_by, object_key, expires_at)
    values (${org!}, ${project!}, ${creator!.created_by}, ${`${org}/${project}/fixture`}, now() + interval '30 minutes') returning id`
  await db.owner`
    insert into app.documents (organization_id, project_id, file_name, mime_type, size_bytes, object_key, created_by)
    values (${org!}, ${project!}, 'notes.txt', 'text/plain', 5, ${`${org}/${project}/${upload!.id}`}, ${creator!.created_by})`
  const document = { name: 'ops/fixture', steps: [{ slug: 'end', type: 'output', config: { mapping: {} } }] }
  const [automation] = await db.owner`
    insert into app.automations (organization_id, name, deployed_version) values (${org!}, 'ops/fixture', 1) returning id`
  await db.owner`insert into app.automation_versions (organization_id, automation_id, version, document)
                 values (${org!}, ${automation!.id}, 1, ${db.owner.json(document)})`
  await db.owner`insert into app.automation_installs (organization_id, automation_id, project_id)
                 values (${org!}, ${automation!.id}, ${project!})`
  const [run] = await db.owner`
    insert into app.runs (organization_id, automation_id, automation_name, version, document, mode, status, waiting_for, project_id, started_by)
    values (${org!}, ${automation!.id}, 'ops/fixture', 1, ${db.owner.json(document)}, 'mock', 'waiting', 'approval', ${project!}, ${creator!.created_by})
    returning id`
  await db.owner`insert into app.run_approvals (organization_id, run_id, step_slug, title) values (${org!}, ${run!.id}, 'end', 'ok?')`
  await db.owner`insert into app.run_asks (organization_id, run_id, step_slug, question) values (${org!}, ${run!.id}, 'end', 'why?')`
  await db.owner`insert into app.agent_turns (organization_id, run_id, step_slug, run_seq, agent_name, prompt)
                 values (${org!}, ${run!.id}, 'end', 0, 'Fixture', 'do it')`
  const [trigger] = await db.owner`
    insert into app.automation_triggers (organization_id, automation_id, kind, token_hash)
    values (${org!}, ${automation!.id}, 'webhook', app.webhook_token_hash(${`fixture-token-${org}`})) returning id`
  await db.owner`insert into app.webhook_deliveries (organization_id, trigger_id, scope, delivery_id, body_hash, run_id)
                 values (${org!}, ${trigger!.id}, ${project!}, 'fixture', decode('00', 'hex'), ${run!.id})`
  await db.owner`insert into app.events (organization_id, name, payload, project_id) values (${org!}, 'project.created', '{}', ${project!})`
  await db.owner`insert into app.notifications (organization_id, recipient_id, kind) values (${org!}, ${creator!.created_by}, 'fixture')`
  const [label] = await db.owner`
    insert into app.task_labels (organization_id, project_id, name) values (${org!}, ${project!}, 'Bug') returning id`
  await db.owner`insert into app.task_counters (organization_id, project_id, last_number) values (${org!}, ${project!}, 1)`
  const [task] = await db.owner`
    insert into app.tasks (organization_id, project_id, number, external_system, external_id, title, label_ids, created_by)
    values (${org!}, ${project!}, 1, 'jira', 'FIX-1', 'Fixture', ${[label!.id]}, ${creator!.created_by}) returning id`
  await db.owner`insert into app.task_comments (organization_id, project_id, task_id, author_type, author_user_id, body)
                 values (${org!}, ${project!}, ${task!.id}, 'user', ${creator!.created_by}, 'fixture')`
  const [thread] = await db.owner`
    insert into app.threads (organization_id, owner_id, project_id) values (${org!}, ${creator!.created_by}, ${project!}) returning id`
  await db.owner`insert into app.thread_messages (organization_id, thread_id, role, status, parts)
                 values (${org!}, ${thread!.id}, 'user', 'complete', '[{"type": "text", "text": "fixture"}]')`
  await db.owner`insert into app.project_agents (organization_id, project_id, name, harness, model, secrets, created_by)
                 values (${org!}, ${project!}, 'Fixture', 'codex', 'local-echo', ${['TOKEN']}, ${creator!.created_by})`
  await db.owner`insert into app.identity_clients (organization_id, key, client_id, name, redirect_uri, secret_hash, created_by)
                 values (${org!}, 'portal', ${`tale_fixture_${org}`}, 'Portal', 'https://portal.example/cb', sha256('x'), ${creator!.created_by})`
  // A hub document and a knowledge entry, queued for indexing (index_files), with a
  // passage of the entry (index_chunks).
  await db.owner`insert into app.documents (organization_id, kind, file_name, mime_type, size_bytes, inline_content, created_by)
                 values (${org!}, 'document', 'Handbook', 'text/plain', 7, 'fixture', ${creator!.created_by})`
  const [entry] = await db.owner`
    insert into app.knowledge_entries (organization_id, title, content, created_by, updated_by)
    values (${org!}, 'Fixture', 'fixture text', ${creator!.created_by}, ${creator!.created_by}) returning id`
  await db.owner`select app.index_queue_entry(k) from app.knowledge_entries k where k.id = ${entry!.id}`
  await db.owner`insert into app.index_chunks (file_id, ordinal, organization_id, knowledge_entry_id, content, language)
                 values (${`knowledge:${entry!.id}`}, 0, ${org!}, ${entry!.id}, 'fixture text', 'english')`
  // A website with a page, its index row and a passage.
  const [site] = await db.owner`
    insert into app.websites (organization_id, domain, origin, scan_interval, created_by)
    values (${org!}, 'fixture.example', 'https://fixture.example', 3600, ${creator!.created_by}) returning id`
  const [page] = await db.owner`
    insert into app.website_pages (website_id, organization_id, url, status, content, title)
    values (${site!.id}, ${org!}, 'https://fixture.example/', 'indexed', 'fixture page', 'Fixture') returning *`
  await db.owner`select app.index_queue_page(p) from app.website_pages p where p.id = ${page!.id}`
  await db.owner`insert into app.index_chunks (file_id, ordinal, organization_id, website_page_id, content, language)
                 values (${`page:${page!.id}`}, 0, ${org!}, ${page!.id}, 'fixture page', 'english')`
  // A contact and a product of the organization.
  await db.owner`insert into app.contacts (organization_id, external_id, email, name, created_by)
                 values (${org!}, 'crm-1', 'fixture@example.test', 'Fixture', ${creator!.created_by})`
  await db.owner`insert into app.products (organization_id, external_id, name, price, currency, created_by)
                 values (${org!}, 'sku-1', 'Fixture', 9.5, 'EUR', ${creator!.created_by})`
  // A personal and a shared skill, and an imported browser session (its sealed bytes
  // stand in for ciphertext).
  await db.owner`insert into app.skills (organization_id, slug, visibility, owner_id, name, content, created_by)
                 values (${org!}, 'fixture', 'personal', ${creator!.created_by}, 'Fixture', 'Do it.', ${creator!.created_by}),
                        (${org!}, 'fixture', 'organization', null, 'Fixture', 'Do it.', ${creator!.created_by})`
  await db.owner`insert into app.browser_sessions (organization_id, id, name, domains, cookie_count, sealed, key_id, created_by)
                 values (${org!}, gen_random_uuid(), 'Fixture', ${['example.com']}, 1, decode('01', 'hex'), 'fixture', ${creator!.created_by})`
}
const gina = { userId: seeded.users['gina@globex.test']!.id, orgId: globexId, role: 'owner' }

const tables = await db.owner<{ schema: string; name: string; rls: boolean; forced: boolean; tenant: boolean }[]>`
  select n.nspname as schema, c.relname as name, c.relrowsecurity as rls, c.relforcerowsecurity as forced,
         exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'organization_id' and not a.attisdropped) as tenant
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
   where c.relkind in ('r', 'p') and n.nspname in ('app', 'api')
   order by 1, 2`

t.test('every table of the service has row-level security enabled and forced', async (t) => {
  t.ok(tables.length >= 10, 'the catalog lists the service tables')
  for (const table of tables) {
    t.ok(table.rls && table.forced, `${table.schema}.${table.name}: enabled ${table.rls}, forced ${table.forced}`)
  }
})

t.test('the request role cannot bypass row-level security and owns nothing', async (t) => {
  const [role] = await db.owner`select rolbypassrls, rolsuper from pg_roles where rolname = 'api'`
  t.same(role, { rolbypassrls: false, rolsuper: false })
  const owned = await db.owner`select c.relname from pg_class c join pg_roles r on r.oid = c.relowner where r.rolname = 'api'`
  t.same(owned, [])
  const [session] = await requests`select current_user`
  t.equal(session!.current_user, 'api', 'request connections run as api')
})

t.test('a caller of another organization sees no row of any tenant table', async (t) => {
  const tenantTables = tables.filter((table) => table.tenant)
  t.ok(tenantTables.length >= 10)
  for (const table of tenantTables) {
    const qualified = `"${table.schema}"."${table.name}"`
    const [present] = await db.owner.unsafe(`select count(*)::int as n from ${qualified} where organization_id = $1`, [acmeId])
    t.ok(present!.n > 0, `${qualified} has fixture rows of acme (add some to this test when adding a table)`)
    const [privilege] = await db.owner`select has_table_privilege('api', ${qualified}, 'SELECT') as readable`
    if (!privilege!.readable) {
      t.pass(`${qualified}: the request role may not read it at all`)
      continue
    }
    const visible = await asCaller(requests, gina, async (sql) => {
      try {
        const [row] = await sql.unsafe(`select count(*)::int as n from ${qualified} where organization_id = $1`, [acmeId])
        return row!.n as number
      } catch (error) {
        return (error as { code?: string }).code === '42501' ? 0 : Promise.reject(error)
      }
    })
    t.equal(visible, 0, `${qualified}: no acme row visible to globex's owner`)
  }
})

const outcome = (work: () => Promise<unknown>) => sqlState(work, (result) => `succeeded (${JSON.stringify(result)})`)

t.test('a caller of another organization can write no row of any tenant table', async (t) => {
  for (const table of tables.filter((x) => x.tenant)) {
    const qualified = `"${table.schema}"."${table.name}"`
    const columns = (await db.owner<{ name: string }[]>`
      select a.attname as name from pg_attribute a
       where a.attrelid = ${qualified}::regclass and a.attnum > 0 and not a.attisdropped and a.attidentity = ''
         and a.attgenerated = ''`).map((c) => `"${c.name}"`)
    const [sample] = await db.owner.unsafe(`select to_jsonb(x) as row from ${qualified} x where organization_id = $1 limit 1`, [acmeId])

    const insert = await outcome(() => asCaller(requests, gina, (sql) => sql.unsafe(
      `insert into ${qualified} (${columns.join(', ')}) select ${columns.join(', ')} from jsonb_populate_record(null::${qualified}, $1)`,
      [sample!.row])))
    t.equal(insert, '42501', `${qualified}: inserting an acme row is refused`)

    const updated = await outcome(() => asCaller(requests, gina, (sql) =>
      sql.unsafe(`update ${qualified} set organization_id = organization_id where organization_id = $1`, [acmeId]).then((r) => r.count)))
    t.ok(updated === 'succeeded (0)' || updated === '42501', `${qualified}: updates reach no acme row (${updated})`)

    const deleted = await outcome(() => asCaller(requests, gina, (sql) =>
      sql.unsafe(`delete from ${qualified} where organization_id = $1`, [acmeId]).then((r) => r.count)))
    t.ok(deleted === 'succeeded (0)' || deleted === '42501', `${qualified}: deletes reach no acme row (${deleted})`)
  }
  const [after] = await db.owner`select count(*)::int as n from app.projects where organization_id = ${acmeId}`
  t.equal(after!.n, 1, 'acme still has its project')
})

t.test('project rows, for acme\'s people', async (t) => {
  const caller = (email: string, role: string) => ({ userId: seeded.users[email]!.id, orgId: acmeId, role })
  const count = (sql: Sql) => sql`select count(*)::int as n from app.projects`.then((rows) => rows[0]!.n as number)

  t.test('project rows exist only for callers with access: a grant, a team grant, the creator, or an admin role', async (t) => {
    t.equal(await asCaller(requests, caller('max@acme.test', 'member'), count), 0, 'a member without a grant sees no project')
    t.equal(await asCaller(requests, caller('dev@acme.test', 'developer'), count), 0, 'neither does a developer without a grant')
    t.equal(await asCaller(requests, caller('eddie@acme.test', 'editor'), count), 1, 'a team grant gives access')
    t.equal(await asCaller(requests, caller('adam@acme.test', 'admin'), count), 1, 'admins see every project')
    t.equal(await asCaller(requests, caller('olive@acme.test', 'owner'), count), 1, 'the creator sees theirs')
  })

  t.test('read access to a project does not allow writing it', async (t) => {
    const renamed = await asCaller(requests, caller('eddie@acme.test', 'editor'),
      (sql) => sql`update app.projects set name = 'Hijacked'`.then((r) => r.count))
    t.equal(renamed, 0, 'read access does not allow writes')
  })

  t.test('no one grants themself access to a project over the request role', async (t) => {
    const alpha = seeded.projects.Alpha!.id
    const selfGrant = await outcome(() => asCaller(requests, caller('eddie@acme.test', 'editor'),
      (sql) => sql`insert into app.project_access (organization_id, project_id, user_id, level)
                   values (${acmeId}, ${alpha}, ${seeded.users['eddie@acme.test']!.id}, 'edit')`))
    t.equal(selfGrant, '42501', 'an editor cannot grant themself access to a project they did not create')
    const devGrant = await outcome(() => asCaller(requests, caller('dev@acme.test', 'developer'),
      (sql) => sql`insert into app.project_access (organization_id, project_id, user_id, level)
                   values (${acmeId}, ${alpha}, ${seeded.users['dev@acme.test']!.id}, 'read')`))
    t.equal(devGrant, '42501', 'nor can a developer without a grant')
  })

  t.test('a legal hold is not writable over the request role, even by an owner', async (t) => {
    const hold = await outcome(() => asCaller(requests, caller('olive@acme.test', 'owner'),
      (sql) => sql`update app.projects set legal_hold_at = null`))
    t.equal(hold, '42501', 'a legal hold is not writable over the request role, even by an owner')
  })

  t.test('a project cannot be created in another user\'s name, nor by the member role', async (t) => {
    const forged = await outcome(() => asCaller(requests, caller('eddie@acme.test', 'editor'),
      (sql) => sql`insert into app.projects (organization_id, name, created_by) values (${acmeId}, 'Forged', ${seeded.users['olive@acme.test']!.id})`))
    t.equal(forged, '42501', 'a project cannot be created in another user\'s name')

    const memberInsert = await outcome(() => asCaller(requests, caller('max@acme.test', 'member'),
      (sql) => sql`insert into app.projects (organization_id, name) values (${acmeId}, 'Sneaky')`))
    t.equal(memberInsert, '42501', 'the member role cannot create projects')
  })
})

t.test('secrets and provider keys are never readable by the request role', async (t) => {
  const olive = { userId: seeded.users['olive@acme.test']!.id, orgId: acmeId, role: 'owner' }
  t.equal(await outcome(() => asCaller(requests, olive, (sql) => sql`select value from app.secrets`)), '42501')
  t.equal(await outcome(() => asCaller(requests, olive, (sql) => sql`select api_key from app.model_providers`)), '42501')
  t.equal(await outcome(() => asCaller(requests, olive, (sql) => sql`select password_hash from app.users`)), '42501')
  t.equal(await outcome(() => asCaller(requests, olive, (sql) => sql`select key_hash from app.api_keys`)), '42501')
  t.equal(await outcome(() => asCaller(requests, olive, (sql) => sql`select * from app.rate_buckets`)), '42501')
  t.equal(await outcome(() => asCaller(requests, olive, (sql) => sql`select * from app.deployment_secrets`)), '42501')
})

t.test('the audit log is append-only', async (t) => {
  const [row] = await db.owner`select id from app.audit_log where organization_id = ${acmeId} limit 1`
  t.ok(row, 'creating a project wrote an audit row')
  t.equal(await outcome(() => db.owner`update app.audit_log set action = 'x' where id = ${row!.id}`), '42501',
    'even the owner cannot rewrite it')
  t.equal(await outcome(() => db.owner`delete from app.audit_log where id = ${row!.id}`), '42501')
})

t.test('operator and maintenance functions are not callable by the request role', async (t) => {
  const olive = { userId: seeded.users['olive@acme.test']!.id, orgId: acmeId, role: 'owner' }
  for (const call of [
    "select app.operator_org_create('evil', 'Evil')",
    "select app.selectable_organizations('00000000-0000-0000-0000-000000000000')",
    'select app.forget_idle_rate_buckets()',
  ]) {
    t.equal(await outcome(() => asCaller(requests, olive, (sql) => sql.unsafe(call))), '42501', call)
  }
})

t.test('users, organizations and keys of another organization stay out of sight', async (t) => {
  const visible = await asCaller(requests, gina, async (sql) => ({
    users: (await sql`select email from app.users order by email`).map((r) => r.email),
    organizations: (await sql`select slug from app.organizations`).map((r) => r.slug),
    keys: (await sql`select user_id from app.api_keys`).map((r) => r.user_id),
  }))
  t.same(visible.users, ['gina@globex.test', 'guest@globex.test'])
  t.same(visible.organizations, ['globex'])
  t.same(visible.keys, [gina.userId], 'only the caller\'s own key')
})

t.test('maintenance and operator functions are not the request role\'s to call', async (t) => {
  const callable = await requests<{ name: string }[]>`
    select p.proname as name from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = 'app' and (p.proname like 'worker\_%' or p.proname like 'operator\_%')
       and has_function_privilege('api', p.oid, 'execute')`
  t.same(callable.map((f) => f.name), [])
})
