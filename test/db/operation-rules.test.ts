// Rules of operations checked through the one statement a request sends
// (app.handle), on the request role: the budgets an operation takes itself honour
// RATE_LIMIT_SCALE, and a project the caller cannot see is absent before any
// capability is asked for.
import type { IncomingMessage } from 'node:http'
import t from 'tap'
import { pinClock, databaseWithRequests } from '../lib/db.ts'
import { callOperation } from '../../server/transport/operation.ts'
import { authRequest } from '../../server/auth/request.ts'
import { rateBudgets } from '../../server/auth/rate-budgets.ts'
import { hashApiKey } from '../../server/auth/credentials.ts'
import { seed } from '../../server/admin/operations.ts'
import { acme, seedFile } from '../lib/fixtures.ts'

const { db, requests } = await databaseWithRequests(t)

const seeded = await seed(db.owner, seedFile({
  ...acme(),
  projects: [
    { org: 'acme', name: 'Alpha', createdBy: 'olive@acme.test', access: [{ email: 'max@acme.test', level: 'edit' }] },
    { org: 'acme', name: 'Hidden', createdBy: 'olive@acme.test', access: [] },
  ],
}))
const org = seeded.organizations.acme!.id
const alpha = seeded.projects.Alpha!.id
const hidden = seeded.projects.Hidden!.id
const key = (email: string) => seeded.users[email]!.keys.main!

function call(email: string, operation: string, args: object, scale = 1) {
  const budgets = rateBudgets(scale)
  const auth = { keyHash: hashApiKey(key(email)), orgSlug: null, source: '203.0.113.7', buckets: [budgets.general],
                 authFailures: budgets.authFailures, read: false, rateScale: budgets.scale }
  return callOperation(requests, auth, operation, args)
}

t.test('the request carries RATE_LIMIT_SCALE for the budgets operations take in SQL', async (t) => {
  const req = { headers: { authorization: 'Bearer k' }, method: 'POST', socket: { remoteAddress: '203.0.113.7' } }
  t.equal(authRequest(req as unknown as IncomingMessage, undefined, rateBudgets(0.2)).rateScale, 0.2)
})

t.test('the retry-indexing budget honours RATE_LIMIT_SCALE', async (t) => {
  await pinClock(db.owner, Date.now())
  const [document] = await db.owner`
    insert into app.documents (organization_id, project_id, file_name, mime_type, size_bytes, object_key, created_by)
    values (${org}, ${alpha}, 'a.txt', 'text/plain', 1, ${`${org}/${alpha}/a`}, ${seeded.users['olive@acme.test']!.id})
    returning id`
  const retry = () => call('olive@acme.test', 'file_retry_indexing', { id: alpha, documentId: document!.id }, 0.2)
  // Scale 0.2: a burst of 10 * 0.2 = 2 retries, refilling 2 a minute.
  t.equal((await retry()).error, null)
  t.equal((await retry()).error, null)
  const third = await retry()
  t.equal(third.error?.code, 'RATE_LIMITED', 'the third retry at scale 0.2')
  t.equal(third.error?.data?.retryAfter, 30, 'one retry refills every 60 / 2 seconds')
})

t.test('the cascading project delete budget honours RATE_LIMIT_SCALE', async (t) => {
  await pinClock(db.owner, Date.now())
  const ids = []
  for (const name of ['One', 'Two']) {
    const created = await call('olive@acme.test', 'project_create', { name })
    ids.push(JSON.parse(created.body!).project.id as string)
  }
  // Scale 0.2: a burst of 5 * 0.2 = 1.
  t.equal((await call('olive@acme.test', 'project_delete', { id: ids[0] }, 0.2)).error, null)
  t.equal((await call('olive@acme.test', 'project_delete', { id: ids[1] }, 0.2)).error?.code, 'RATE_LIMITED')
})

t.test('a live run start names an invisible project: 404 before the capability check', async (t) => {
  const document = { name: 'ops/fixture', steps: [{ slug: 'end', type: 'output', config: { mapping: {} } }] }
  const [automation] = await db.owner`
    insert into app.automations (organization_id, name, deployed_version) values (${org}, 'ops/fixture', 1) returning id`
  await db.owner`insert into app.automation_versions (organization_id, automation_id, version, document)
                 values (${org}, ${automation!.id}, 1, ${db.owner.json(document)})`
  const start = (project: string, where: 'id' | 'projectId') =>
    call('max@acme.test', 'run_start', { name: 'ops/fixture', mode: 'live', [where]: project })
  for (const where of ['id', 'projectId'] as const) {
    t.equal((await start(hidden, where)).error?.code, 'NOT_FOUND', `${where}: a project the member cannot see is absent`)
    t.equal((await start(alpha, where)).error?.code, 'ROLE_FORBIDDEN', `${where}: a visible one meets the capability check`)
  }
})
