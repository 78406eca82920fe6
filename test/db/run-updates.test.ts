// The request role changes runs, approvals and questions only as the operations do:
// the columns they write, under policies that carry the capability each change needs
// (db/policies/runs.sql, run_approvals.sql, run_asks.sql). Checked by direct SQL on
// the request role, as a bug in a function or an injected statement would try.
import t from 'tap'
import { sqlState, databaseWithRequests } from '../lib/db.ts'
import type { Sql } from '../../server/core/db/connection.ts'
import { seed } from '../../server/admin/operations.ts'
import { asCaller } from '../lib/caller.ts'
import { acme, seedFile } from '../lib/fixtures.ts'

const { db, requests } = await databaseWithRequests(t)

const seeded = await seed(db.owner, seedFile({
  ...acme(),
  projects: [{ org: 'acme', name: 'Alpha', createdBy: 'olive@acme.test', access: [{ email: 'max@acme.test', level: 'read' }, { email: 'dev@acme.test', level: 'read' }] }],
}))
const org = seeded.organizations.acme!.id
const alpha = seeded.projects.Alpha!.id
const user = (email: string) => seeded.users[email]!.id
const max = { userId: user('max@acme.test'), orgId: org, role: 'member' }
const dev = { userId: user('dev@acme.test'), orgId: org, role: 'developer' }
const olive = { userId: user('olive@acme.test'), orgId: org, role: 'owner' }

const document = { name: 'ops/fixture', steps: [{ slug: 'approve', type: 'approval', config: { title: 'ok?' } }] }
async function run(status: string, waitingFor: string | null = null): Promise<string> {
  const [row] = await db.owner`
    insert into app.runs (organization_id, automation_name, version, document, mode, status, waiting_for, project_id, started_by)
    values (${org}, 'ops/fixture', 1, ${db.owner.json(document)}, 'mock', ${status}, ${waitingFor}, ${alpha}, ${olive.userId})
    returning id`
  return row!.id
}

const outcome = (work: () => Promise<{ count: number }>) => sqlState(work, (result) => `updated ${result.count}`)

const as = (caller: typeof max, statement: (sql: Sql) => Promise<{ count: number }>) =>
  outcome(() => asCaller(requests, caller, statement))

t.test('a member who sees a run writes none of the columns operations leave alone', async (t) => {
  const waiting = await run('waiting', 'approval')
  t.equal(await as(max, (sql) => sql`select * from app.runs where id = ${waiting}`), 'updated 1', 'the member sees the run')
  for (const column of ['output', 'state', 'trace', 'effects', 'input', 'document', 'project_id', 'started_by', 'seq']) {
    t.equal(await as(max, (sql) => sql.unsafe(`update app.runs set ${column} = ${column} where id = $1`, [waiting])), '42501',
      `runs.${column} is not the request role's to write`)
  }
  t.equal(await as(max, (sql) => sql`update app.runs set detail = 'forged' where id = ${waiting}`), '42501',
    'a granted column changed outside a resumption is refused')
})

t.test('a member cannot cancel a run; a developer can', async (t) => {
  const waiting = await run('waiting', 'approval')
  const queued = await run('queued')
  const cancel = (id: string) => (sql: Sql) => sql`
    update app.runs set status = 'cancelled', waiting_for = null, cancel_requested_at = now(), finished_at = now()
     where id = ${id}`
  t.equal(await as(max, cancel(waiting)), '42501', 'a waiting run')
  t.equal(await as(max, cancel(queued)), 'updated 0', 'a queued run is not even a candidate')
  t.equal(await as(max, (sql) => sql`update app.runs set cancel_requested_at = now() where id = ${queued}`), 'updated 0',
    'nor is asking a running or queued run to stop')
  t.equal(await as(dev, cancel(waiting)), 'updated 1', 'the developer capability cancels')
  t.equal(await as(dev, (sql) => sql`update app.runs set status = 'completed', finished_at = now() where id = ${queued}`),
    '42501', 'even a developer only cancels: no other status is reachable')
})

t.test('a run resumes only with an answer its resumer put on record', async (t) => {
  const waiting = await run('waiting', 'approval')
  const [approval] = await db.owner`
    insert into app.run_approvals (organization_id, run_id, step_slug, title) values (${org}, ${waiting}, 'approve', 'ok?')
    returning id`
  const resume = (sql: Sql) => sql`
    update app.runs set status = 'queued', waiting_for = null,
                        resume = ${sql.json({ slug: 'approve', port: 'approved', output: {} })}
     where id = ${waiting}`
  t.equal(await as(max, resume), '42501', 'skipping the approval is refused')
  t.equal(await as(max, (sql) => sql`
    update app.run_approvals set status = 'approved', decided_by = ${dev.userId}, decided_at = now() where id = ${approval!.id}`),
  '42501', 'a decision in someone else\'s name is refused')
  t.equal(await as(max, (sql) => sql`update app.run_approvals set status = 'void' where id = ${approval!.id}`), '42501',
    'voiding an approval is a cancel\'s, which needs the developer capability')
  t.equal(await as(max, (sql) => sql`update app.run_approvals set title = 'forged' where id = ${approval!.id}`), '42501',
    'the title is not the request role\'s to write')
  t.equal(await as(max, async (sql) => {
    await sql`update app.run_approvals set status = 'approved', decided_by = ${max.userId}, decided_at = now() where id = ${approval!.id}`
    return resume(sql)
  }), 'updated 1', 'the decision on record, then the resumption, is what the operation does')
})

t.test('a question is answered in the answerer\'s own name, as an actor only with act-as', async (t) => {
  const waiting = await run('waiting', 'ask')
  const [ask] = await db.owner`
    insert into app.run_asks (organization_id, run_id, step_slug, question) values (${org}, ${waiting}, 'approve', 'why?')
    returning id`
  const answer = (actor: string | null, by = max.userId) => (sql: Sql) => sql`
    update app.run_asks set status = 'answered', answer = '{}', answered_by = ${by}, answered_at = now(), actor = ${actor}
     where id = ${ask!.id}`
  t.equal(await as(max, (sql) => sql`update app.run_asks set fields = '[]' where id = ${ask!.id}`), '42501',
    'the fields are not the request role\'s to write')
  t.equal(await as(max, answer(null, olive.userId)), '42501', 'not in another user\'s name')
  t.equal(await as(max, answer('bot')), '42501', 'not as an actor without the act-as capability')
  t.equal(await as(max, (sql) => sql`update app.run_asks set status = 'void' where id = ${ask!.id}`), '42501',
    'voiding is a cancel\'s')
  t.equal(await as(olive, answer('bot', olive.userId)), 'updated 1', 'an owner may answer as an actor')
})
