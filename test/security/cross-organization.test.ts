// Two organizations, acme (A) and globex (B), each with owners, admins and members,
// projects with and without grants, and a resource of every family a path names.
// Random operations from /openapi.json, called by A's people of every role with B's
// ids in their paths (and in the ids their bodies and queries carry): a read answers
// 404, a write 404 or 403, never a success; every row of B is exactly what it was
// after each write; no successful body holds an id of B. A member without access to
// a project of their own organization gets 404 for it and for its task, agent and
// thread.
//
// Seeded: SECURITY_SEED replays a run, SECURITY_RUNS sets the number of calls.
import t from 'tap'
import fc from 'fast-check'
import { world, type Client } from '../lib/world.ts'
import { acme, person } from '../lib/fixtures.ts'
import { signIn, type SessionClient } from '../lib/session.ts'
import type { Response } from '../lib/service.ts'
import type { Sql } from '../../server/core/db/connection.ts'
import { checkProperty, minimalValue, operationsOf, securityRuns, securitySeed, type Operation } from '../lib/security.ts'

const seed = securitySeed()
const numRuns = securityRuns(120)
t.comment(`cross-organization: seed ${seed}, ${numRuns} runs (replay with SECURITY_SEED=${seed})`)

const w = await world(t, {
  env: { RATE_LIMIT_SCALE: '10000' },
  projects: [
    { org: 'acme', name: 'Alpha', createdBy: 'olive@acme.test', access: [{ email: 'max@acme.test', level: 'read' },
      { email: 'dev@acme.test', level: 'edit' }, { email: 'eddie@acme.test', level: 'edit' }] },
    { org: 'acme', name: 'Beta', createdBy: 'olive@acme.test', access: [] },
    { org: 'globex', name: 'Gamma', createdBy: 'gina@globex.test', access: [{ email: 'gus@globex.test', level: 'read' }] },
    { org: 'globex', name: 'Delta', createdBy: 'gina@globex.test', access: [] },
  ],
  seed: {
    users: [
      ...acme().users!,
      person('gabe@globex.test', [{ org: 'globex', role: 'admin' }]),
      person('gus@globex.test', [{ org: 'globex', role: 'member' }]),
    ],
    grants: [
      { org: 'acme', email: 'max@acme.test', competence: 'notifications.export', expiresAt: null },
      { org: 'globex', email: 'gus@globex.test', competence: 'notifications.export', expiresAt: null },
    ],
  },
})
const owner = w.service.db.owner
const orgA = w.seeded.organizations.acme!.id
const orgB = w.seeded.organizations.globex!.id

/** Ids and names of one project's resources, keyed by what a path parameter names. */
type Resources = Record<string, string>

/** A resource of every family, in one project, written as the database owner. */
async function resources(sql: Sql, org: string, project: string, prefix: string): Promise<Resources> {
  const [creator] = await sql`select created_by from app.projects where id = ${project}`
  const by = creator!.created_by as string
  const one = async (query: Promise<Record<string, unknown>[]>) => String((await query)[0]!.id)
  const folder = await one(sql`insert into app.folders (organization_id, project_id, name, depth) values (${org}, ${project}, 'Docs', 1) returning id`)
  const file = await one(sql`insert into app.documents (organization_id, project_id, file_name, mime_type, size_bytes, object_key, created_by)
    values (${org}, ${project}, 'notes.txt', 'text/plain', 5, ${`${org}/${project}/${prefix}`}, ${by}) returning id`)
  const name = `${prefix}/fixture`
  const document = { name, steps: [{ slug: 'end', type: 'output', config: { mapping: {} } }] }
  const automation = await one(sql`insert into app.automations (organization_id, name, deployed_version) values (${org}, ${name}, 1) returning id`)
  await sql`insert into app.automation_versions (organization_id, automation_id, version, document) values (${org}, ${automation}, 1, ${sql.json(document)})`
  await sql`insert into app.automation_installs (organization_id, automation_id, project_id) values (${org}, ${automation}, ${project})`
  const run = await one(sql`
    insert into app.runs (organization_id, automation_id, automation_name, version, document, mode, status, waiting_for, project_id, started_by)
    values (${org}, ${automation}, ${name}, 1, ${sql.json(document)}, 'mock', 'waiting', 'approval', ${project}, ${by}) returning id`)
  const approval = await one(sql`insert into app.run_approvals (organization_id, run_id, step_slug, title) values (${org}, ${run}, 'end', 'ok?') returning id`)
  const ask = await one(sql`insert into app.run_asks (organization_id, run_id, step_slug, question) values (${org}, ${run}, 'end', 'why?') returning id`)
  const token = `fixture-token-${prefix}`
  await sql`insert into app.automation_triggers (organization_id, automation_id, kind, token_hash)
            values (${org}, ${automation}, 'webhook', app.webhook_token_hash(${token}))`
  const notification = await one(sql`insert into app.notifications (organization_id, recipient_id, kind) values (${org}, ${by}, 'fixture') returning id`)
  await sql`insert into app.task_counters (organization_id, project_id, last_number) values (${org}, ${project}, 1)`
  const task = await one(sql`insert into app.tasks (organization_id, project_id, number, external_system, external_id, title, created_by)
    values (${org}, ${project}, 1, 'jira', ${`${prefix}-1`}, 'Fixture', ${by}) returning id`)
  await sql`insert into app.task_comments (organization_id, project_id, task_id, author_type, author_user_id, body)
            values (${org}, ${project}, ${task}, 'user', ${by}, 'fixture')`
  const thread = await one(sql`insert into app.threads (organization_id, owner_id, project_id) values (${org}, ${by}, ${project}) returning id`)
  const message = await one(sql`insert into app.thread_messages (organization_id, thread_id, role, status, parts)
    values (${org}, ${thread}, 'user', 'complete', '[{"type": "text", "text": "fixture"}]') returning id`)
  const agent = await one(sql`insert into app.project_agents (organization_id, project_id, name, harness, model, created_by)
    values (${org}, ${project}, 'Fixture', 'codex', 'local-echo', ${by}) returning id`)
  const clientKey = `${prefix}-portal`
  await sql`insert into app.identity_clients (organization_id, key, client_id, name, redirect_uri, secret_hash, created_by)
            values (${org}, ${clientKey}, ${`tale_${prefix}`}, 'Portal', 'https://portal.example/cb', sha256('x'), ${by})`
  const hubDocument = await one(sql`insert into app.documents (organization_id, kind, file_name, mime_type, size_bytes, inline_content, created_by)
    values (${org}, 'document', 'Handbook', 'text/plain', 7, 'fixture', ${by}) returning id`)
  const entry = await one(sql`insert into app.knowledge_entries (organization_id, title, content, created_by, updated_by)
    values (${org}, 'Fixture', 'fixture text', ${by}, ${by}) returning id`)
  const website = await one(sql`insert into app.websites (organization_id, domain, origin, scan_interval, created_by)
    values (${org}, ${`${prefix}.example`}, ${`https://${prefix}.example`}, 3600, ${by}) returning id`)
  const contact = await one(sql`insert into app.contacts (organization_id, external_id, email, name, created_by)
    values (${org}, ${`${prefix}-crm-1`}, ${`${prefix}@example.test`}, 'Fixture', ${by}) returning id`)
  const product = await one(sql`insert into app.products (organization_id, external_id, name, price, currency, created_by)
    values (${org}, ${`${prefix}-sku-1`}, 'Fixture', 9.5, 'EUR', ${by}) returning id`)
  const skill = `${prefix}-skill`
  await sql`insert into app.skills (organization_id, slug, visibility, owner_id, name, content, created_by)
            values (${org}, ${skill}, 'organization', null, 'Fixture', 'Do it.', ${by})`
  const browserSession = await one(sql`insert into app.browser_sessions (organization_id, id, name, domains, cookie_count, sealed, key_id, created_by)
    values (${org}, gen_random_uuid(), 'Fixture', ${['example.com']}, 1, decode('01', 'hex'), 'fixture', ${by}) returning id`)
  const [grant] = await sql`select id from app.competence_grants where organization_id = ${org} limit 1`
  return {
    project, folder, file, automation: name.replaceAll('/', '__'), run, approval, ask, token, notification, task, thread, message,
    agent, clientKey, hubDocument, entry, website, contact, product, skill, browserSession, competence: String(grant!.id),
  }
}

const A = await resources(owner, orgA, w.projects.Alpha!, 'alpha')
const hidden = await resources(owner, orgA, w.projects.Beta!, 'beta')
const B = await resources(owner, orgB, w.projects.Gamma!, 'gamma')
await resources(owner, orgB, w.projects.Delta!, 'delta')

// Path parameters by name; `id` by the collection it follows.
const byCollection: Record<string, string> = {
  projects: 'project', documents: 'hubDocument', 'knowledge-entries': 'entry', websites: 'website', contacts: 'contact',
  products: 'product', 'browser-sessions': 'browserSession',
}
const byName: Record<string, string> = {
  folderId: 'folder', documentId: 'file', slug: 'skill', name: 'automation', runId: 'run', askId: 'ask', approvalId: 'approval',
  taskId: 'task', agentId: 'agent', notificationId: 'notification', threadId: 'thread', messageId: 'message', recordId: 'competence',
  key: 'clientKey', token: 'token', project_id: 'project',
}
function resourceOf(path: string, param: string): string | undefined {
  if (param !== 'id') return byName[param]
  const segments = path.split('/')
  return byCollection[segments[segments.indexOf('{id}') - 1]!]
}

// Every id of B that a response to A must never hold.
const userIdsB = Object.entries(w.seeded.users).filter(([email]) => email.endsWith('@globex.test')).map(([, u]) => u.id)
const foreignIds = new Set<string>([orgB, ...userIdsB, w.projects.Gamma!, w.projects.Delta!,
  ...Object.values(B).filter((value) => /^[0-9a-f-]{36}$/.test(value))])

// Ids a body or query names, by member name: B's, so the operation is asked about them.
const foreignByMember: Record<string, string> = {
  projectId: B.project!, taskId: B.task!, agentId: B.agent!, threadId: B.thread!, folderId: B.folder!, parentId: B.folder!,
  documentId: B.file!, userId: userIdsB[0]!, runId: B.run!, websiteId: B.website!, approvalId: B.approval!, askId: B.ask!,
}

/** A digest per table of every row of B, read as the database owner past every policy. */
async function digestOfB(): Promise<Map<string, string>> {
  const tables = await owner<{ name: string }[]>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'app' and c.relkind in ('r', 'p')
       and exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'organization_id' and not a.attisdropped)
     order by 1`
  const rowsOf = (from: string, where: string) =>
    `select '${from}' as name, md5(coalesce(string_agg(md5(t::text), '' order by md5(t::text)), '')) as digest
       from app."${from}" t where ${where}`
  const parts = [
    ...tables.map((table) => rowsOf(table.name, 'organization_id = $1')),
    rowsOf('organizations', 'id = $1'),
    ...['users'].map((name) => rowsOf(name, 'id = any($2::uuid[])')),
    ...['api_keys', 'sessions', 'user_totp'].map((name) => rowsOf(name, 'user_id = any($2::uuid[])')),
  ]
  const rows = await owner.unsafe<{ name: string; digest: string }[]>(parts.join('\nunion all\n'), [orgB, userIdsB as never])
  return new Map(rows.map((r) => [r.name, r.digest]))
}

function changedTables(before: Map<string, string>, after: Map<string, string>): string[] {
  return [...new Set([...before.keys(), ...after.keys()])].filter((name) => before.get(name) !== after.get(name))
}

const document = await (await fetch(`${w.service.url}/openapi.json`)).json() as Record<string, any>
const operations = operationsOf(document)

// Left out of the property, each for its reason. Keyless routes have no caller (a
// webhook's token is the whole credential); PUT /skills/{slug} saves the caller's own
// skill under a name of the caller's choosing, so another organization's slug names
// nothing foreign there.
const ownNamespace = new Set(['PUT /api/v1/skills/{slug}'])
const probed = operations.filter((op) => !op.keyless && !ownNamespace.has(`${op.method} ${op.path}`))
// Deleting a trigger answers 204 whether or not one existed, the automation included
// (the spec's rule): its success says nothing of B, and B's rows are still checked.
const idempotent = new Set(['DELETE /api/v1/automations/{name}/triggers'])

const callers = ['olive@acme.test', 'adam@acme.test', 'dev@acme.test', 'eddie@acme.test', 'max@acme.test']
const keyClients = new Map<string, Client>(callers.map((email) => [email, w.as(email)]))
const sessions = new Map<string, SessionClient>()
for (const email of callers) sessions.set(email, await signIn(w, email))

t.test('every path parameter of the document names a resource the test holds', async (t) => {
  const unfilled = operations.flatMap((op) => op.params.filter((p) => {
    const resource = resourceOf(op.path, p)
    return !resource || A[resource] === undefined || B[resource] === undefined
  }).map((p) => `${op.method} ${op.path}: {${p}}`))
  t.same(unfilled, [], 'a new path parameter needs a resource of both organizations in this test')
  t.ok(probed.filter((op) => op.params.length).length > 80, `${probed.length} operations are probed`)
})

interface Call {
  operation: Operation
  caller: string
  /** Per path parameter: B's value (true) or A's. At least one is B's. */
  foreign: boolean[]
  /** A session route's ?orgId=: the caller's organization or B. */
  sessionOrg: 'A' | 'B'
}

const callArbitrary: fc.Arbitrary<Call> = fc.constantFrom(...probed).chain((operation) => fc.record({
  operation: fc.constant(operation),
  caller: fc.constantFrom(...callers),
  foreign: fc.array(fc.boolean(), { minLength: operation.params.length, maxLength: operation.params.length })
    .map((picks) => picks.length && !picks.includes(true) ? picks.map((_, i) => i === picks.length - 1) : picks),
  sessionOrg: fc.constantFrom<'A' | 'B'>('A', 'B'),
}))

function requestOf(call: Call): { path: string; body: unknown } {
  let at = 0
  const path = call.operation.path.replace(/\{([^}]+)\}/g, (_, param: string) => {
    const values = call.foreign[at++] ? B : A
    return encodeURIComponent(values[resourceOf(call.operation.path, param)!]!).replaceAll('%2F', '/')
  })
  const named = (member: string) => foreignByMember[member]
  const query = call.operation.query.filter((q) => q.required || q.name === 'orgId' || foreignByMember[q.name])
    .map((q) => {
      const value = q.name === 'orgId' ? (call.sessionOrg === 'A' ? orgA : orgB) : minimalValue(document, q.schema, named, q.name)
      return `${q.name}=${encodeURIComponent(String(value))}`
    }).join('&')
  const body = call.operation.body ? minimalValue(document, call.operation.body, named) : undefined
  return { path: query ? `${path}?${query}` : path, body }
}

async function send(call: Call): Promise<Response> {
  const { path, body } = requestOf(call)
  if (call.operation.session) {
    return sessions.get(call.caller)!.request(call.operation.method, path, { body: call.operation.read ? undefined : body ?? {} })
  }
  return keyClients.get(call.caller)!.request(call.operation.method, path, {
    org: 'acme', body: call.operation.read ? undefined : body, headers: body === undefined ? {} : { 'content-type': 'application/json' },
  })
}

t.test('A\'s people reach nothing of B: reads 404, writes refused, B\'s rows unchanged, no id of B in any success', async (t) => {
  const refusals = new Map<string, number>()
  await checkProperty(t, 'cross-organization', fc.asyncProperty(callArbitrary, async (call) => {
    const { operation } = call
    const label = `${call.caller} ${operation.method} ${requestOf(call).path}`
    const before = operation.read ? null : await digestOfB()
    const res = await send(call)
    const key = `${res.status} ${res.body?.code ?? ''}`
    refusals.set(key, (refusals.get(key) ?? 0) + 1)
    // A deployment without object storage answers 503 before any rule is asked,
    // whoever's the id: the operations that may say so declare it.
    const unconfigured = res.status === 503 && operation.statuses.has(503)
    if (res.status >= 500 && !unconfigured) throw new Error(`${label} answered ${res.status}: ${res.text.slice(0, 300)}`)
    // A shape refusal comes before the database is asked, so it tells nothing of B
    // either (the generated body cannot satisfy every pattern); B's rows are still checked.
    const shapeRefusal = res.status === 400 && ['INVALID_BODY', 'INVALID_QUERY'].includes(res.body?.code)
    const idempotentDelete = idempotent.has(`${operation.method} ${operation.path}`) && res.status === 204
    if (res.status >= 200 && res.status < 300) {
      const leaked = [...foreignIds].filter((id) => res.text.includes(id))
      if (leaked.length) throw new Error(`${label} answered ${res.status} with ids of B (${leaked.join(', ')}): ${res.text.slice(0, 500)}`)
    }
    const foreignPath = operation.params.length > 0
    const foreignOrg = operation.session && call.sessionOrg === 'B'
    if (foreignOrg) {
      if (!shapeRefusal && res.status !== 403 || res.body?.code !== 'ORG_FORBIDDEN') {
        throw new Error(`${label} named B's organization and answered ${res.status} ${res.text.slice(0, 300)}`)
      }
    } else if (foreignPath && operation.read && res.status !== 404) {
      throw new Error(`${label}: a read of B's resource answered ${res.status}, not 404: ${res.text.slice(0, 300)}`)
    } else if (foreignPath && !operation.read && ![403, 404].includes(res.status) && !shapeRefusal && !unconfigured
      && !idempotentDelete) {
      throw new Error(`${label}: a write to B's resource answered ${res.status}, not 404 or 403: ${res.text.slice(0, 300)}`)
    }
    if (before) {
      const changed = changedTables(before, await digestOfB())
      if (changed.length) throw new Error(`${label} answered ${res.status} and changed B's rows in ${changed.join(', ')}`)
    }
  }), seed, numRuns)
  t.comment(`answers: ${JSON.stringify(Object.fromEntries([...refusals].sort()))}`)
})

t.test('a member without access to a project gets 404 for it and its task, agent and thread', async (t) => {
  const beta = w.projects.Beta!
  for (const email of ['max@acme.test', 'eddie@acme.test']) {
    const who = keyClients.get(email)!
    const reads = [
      `/api/v1/projects/${beta}/folders`, `/api/v1/projects/${beta}/tasks`, `/api/v1/projects/${beta}/tasks/${hidden.task}`,
      `/api/v1/tasks/${hidden.task}`, `/api/v1/tasks/${hidden.task}/comments`, `/api/v1/projects/${beta}/agents/${hidden.agent}`,
      `/api/v1/projects/${beta}/threads`, `/api/v1/projects/${beta}/threads/${hidden.thread}/messages`,
      `/api/v1/threads/${hidden.thread}/messages`, `/api/v1/projects/${beta}/runs/${hidden.run}`,
    ]
    for (const path of reads) {
      const res = await who.get(path)
      t.equal(res.status, 404, `${email} GET ${path}`)
    }
    const writes: [string, string, unknown][] = [
      ['PATCH', `/api/v1/projects/${beta}`, { name: 'Taken' }],
      ['PATCH', `/api/v1/projects/${beta}/tasks/${hidden.task}`, { status: 'done' }],
      ['POST', `/api/v1/tasks/${hidden.task}/comments`, { body: 'hello' }],
      ['DELETE', `/api/v1/projects/${beta}/agents/${hidden.agent}`, undefined],
      ['POST', `/api/v1/projects/${beta}/threads/${hidden.thread}/messages`, { content: 'hello', model: 'local-echo' }],
    ]
    for (const [method, path, body] of writes) {
      const res = await who.request(method, path, { body })
      t.equal(res.status, 404, `${email} ${method} ${path}`)
    }
  }
  const [{ name }] = await owner`select name from app.projects where id = ${beta}` as unknown as [{ name: string }]
  t.equal(name, 'Beta', 'the project is unchanged')
})
