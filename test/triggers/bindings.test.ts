// Binding triggers over REST (SPEC.md "Trigger (one per automation)" and the Trigger
// state table): per-kind bodies, the refusals of AUTOMATION_TRIGGER_INVALID, the
// developer capability, the webhook token's life and the binding's health.
import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { deploy } from '../lib/automations.ts'
import { world, type World } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'

const echo = (name: string) => ({
  name, description: 'Echoes its payload',
  steps: [{ slug: 'end', type: 'output', config: { mapping: { got: '{{ input.payload }}' } } }],
})

const TRIGGERS = '/api/v1/automations/ops__hook/triggers'

async function setUp(t: Test) {
  const w = await world(t)
  await deploy(await w.dev.mcp(), echo('ops/hook'))
  return w
}

const deliver = (w: World, token: string, body: unknown = { n: Math.random() }) =>
  w.service.request('POST', `/api/automations/webhook/${token}`, { body })

const triggerOf = async (w: World) => (await w.max.get(TRIGGERS)).body.triggers[0]

// A run the trigger started, ended as told (the run engine's end, as SQL sees it).
async function firedRun(w: World): Promise<string> {
  const [row] = await w.service.db.owner<{ id: string }[]>`
    select app.trigger_fire(t, null, '{}'::jsonb, t.kind) as id
      from app.automation_triggers t join app.automations a on a.organization_id = t.organization_id and a.id = t.automation_id
     where a.name = 'ops/hook'`
  return row!.id
}
async function endRun(w: World, id: string, failureCode: string | null): Promise<void> {
  await w.service.db.owner`update app.runs set status = ${failureCode ? 'failed' : 'completed'}, failure_code = ${failureCode},
    started_at = now(), finished_at = now() where id = ${id}`
}
async function failTimes(w: World, times: number, code = 'node_error'): Promise<void> {
  for (let i = 0; i < times; i += 1) await endRun(w, await firedRun(w), code)
}

t.test('a body is checked per kind: a key of another kind is an unknown key', async (t) => {
  const w = await setUp(t)
  let body = refused(t, await w.dev.put(TRIGGERS, { kind: 'webhook', cron: '* * * * *' }), 400, 'INVALID_BODY', 'cron on a webhook')
  t.same(body.data.issues, [{ path: 'cron', message: 'unknown key "cron"' }])
  body = refused(t, await w.dev.put(TRIGGERS, { kind: 'schedule', cron: '* * * * *', rotateToken: true }), 400, 'INVALID_BODY',
    'rotateToken on a schedule')
  t.same(body.data.issues.map((i: { path: string }) => i.path), ['rotateToken'])
  body = refused(t, await w.dev.put(TRIGGERS, { kind: 'event', event: 'project.created', timezone: 'UTC' }), 400, 'INVALID_BODY',
    'timezone on an event')
  t.same(body.data.issues.map((i: { path: string }) => i.path), ['timezone'])
  body = refused(t, await w.dev.put(TRIGGERS, { kind: 'schedule', cron: 5, enabled: 'yes' }), 400, 'INVALID_BODY', 'wrong types')
  t.same(body.data.issues.map((i: { path: string }) => i.path).sort(), ['cron', 'enabled'], 'every issue with its path')
  refused(t, await w.dev.put(TRIGGERS, { kind: 'schedule' }), 400, 'INVALID_BODY', 'a schedule without cron')
  refused(t, await w.dev.put(TRIGGERS, { kind: 'event' }), 400, 'INVALID_BODY', 'an event trigger without event')
  body = refused(t, await w.dev.put(TRIGGERS, { kind: 'cron' }), 400, 'INVALID_BODY', 'an unknown kind')
  t.equal(body.data.issues[0].path, 'kind')
  refused(t, await w.dev.put(TRIGGERS, { kind: 'schedule', cron: '* * * * *', cronFields: { minutes: [0] } }), 400, 'INVALID_BODY',
    'the cron expansion is the server\'s, never the client\'s')
  refused(t, await w.dev.put(TRIGGERS, { kind: 'schedule', cron: '* * * * *', cronProblem: 'none' }), 400, 'INVALID_BODY')
  t.same((await w.dev.get(TRIGGERS)).body, { triggers: [] }, 'nothing was bound')
})

t.test('a schedule needs a five-field cron that fires and an IANA zone; an event one the platform raises', async (t) => {
  const w = await setUp(t)
  const invalid = async (body: Record<string, unknown>, label: string) => {
    const answer = refused(t, await w.dev.put(TRIGGERS, body), 400, 'AUTOMATION_TRIGGER_INVALID', label)
    return answer.data
  }
  t.match(await invalid({ kind: 'schedule', cron: '0 0 30 2 *' }, 'a cron that never fires (30 February)'), { field: 'cron' })
  // cron-parser takes this one (a '*' day of week leaves the day of month alone), so
  // SQL finds that it never fires.
  const never = await invalid({ kind: 'schedule', cron: '0 0 30 2 */1' }, 'a parsed cron that matches no instant')
  t.same(never, { field: 'cron', cron: '0 0 30 2 */1' }, 'refused by the occurrence search, not the parser')
  t.match(await invalid({ kind: 'schedule', cron: '0 0 * * * *' }, 'six fields (seconds)'), { field: 'cron', problem: /five fields/ })
  t.match(await invalid({ kind: 'schedule', cron: '* * * *' }, 'four fields'), { field: 'cron' })
  t.match(await invalid({ kind: 'schedule', cron: '@daily' }, 'a macro'), { field: 'cron', problem: /macro/ })
  t.match(await invalid({ kind: 'schedule', cron: '0 0 L * *' }, 'L'), { field: 'cron' })
  t.match(await invalid({ kind: 'schedule', cron: '0 0 * * 1#2' }, '#'), { field: 'cron' })
  t.match(await invalid({ kind: 'schedule', cron: '61 * * * *' }, 'a minute out of range'), { field: 'cron' })
  t.match(await invalid({ kind: 'schedule', cron: '0 9 * * *', timezone: 'Mars/Olympus' }, 'an unknown zone'),
    { field: 'timezone', timezone: 'Mars/Olympus' })
  await invalid({ kind: 'schedule', cron: '0 9 * * *', timezone: 'posix/Europe/Berlin' }, 'a zone alias outside IANA names')
  t.match(await invalid({ kind: 'event', event: 'conversation.created' }, 'an event not raised yet'),
    { field: 'event', events: ['comment.created', 'comment.mentioned', 'contact.created', 'contact.deleted', 'contact.updated',
      'project.created', 'task.created', 'task.status_changed'] })
  await invalid({ kind: 'event', event: 'nothing.happened' }, 'an unknown event')
  t.same((await w.dev.get(TRIGGERS)).body, { triggers: [] }, 'nothing was bound')

  const schedule = await w.dev.put(TRIGGERS, { kind: 'schedule', cron: '30 9 * JAN-DEC MON-FRI', timezone: 'Europe/Berlin' })
  t.equal(schedule.status, 200)
  t.match(schedule.body, { name: 'ops/hook', deployed: true, trigger: { kind: 'schedule', enabled: true, cron: '30 9 * JAN-DEC MON-FRI',
    timezone: 'Europe/Berlin', nextDueAt: Number } })
  t.notOk('token' in schedule.body, 'no token for a schedule')
  const event = await w.dev.put(TRIGGERS, { kind: 'event', event: 'project.created' })
  t.match(event.body.trigger, { kind: 'event', event: 'project.created', enabled: true })
  t.notOk('revoked' in event.body, 'nothing is revoked when no webhook is replaced')
})

t.test('binding needs the developer capability; members read', async (t) => {
  const w = await setUp(t)
  refused(t, await w.eddie.put(TRIGGERS, { kind: 'webhook' }), 403, 'ROLE_FORBIDDEN', 'an editor binds')
  refused(t, await w.max.put(TRIGGERS, { kind: 'webhook' }), 403, 'ROLE_FORBIDDEN', 'a member binds')
  t.equal((await w.dev.put(TRIGGERS, { kind: 'webhook' })).status, 200, 'a developer binds')
  refused(t, await w.eddie.del(TRIGGERS), 403, 'ROLE_FORBIDDEN', 'an editor unbinds')
  const read = await w.max.get(TRIGGERS)
  t.equal(read.status, 200, 'a member reads')
  t.equal(read.body.triggers.length, 1)
  refused(t, await w.dev.put('/api/v1/automations/nope/triggers', { kind: 'webhook' }), 404, 'AUTOMATION_NOT_FOUND')
  refused(t, await w.dev.get('/api/v1/automations/nope/triggers'), 404, 'AUTOMATION_NOT_FOUND')
  refused(t, await w.gina.get(TRIGGERS), 404, 'AUTOMATION_NOT_FOUND', 'another organization\'s automation')
})

t.test('none -> PUT: enabled unless told, and a webhook shows its token once', async (t) => {
  const w = await setUp(t)
  const bound = await w.dev.put(TRIGGERS, { kind: 'webhook' })
  t.equal(bound.status, 200)
  t.match(bound.body.token, /^[A-Za-z0-9_-]{43}$/, '256 bits, base64url')
  t.match(bound.body.trigger, { kind: 'webhook', enabled: true, lastFiredAt: null, lastRunId: null, lastSkippedAt: null,
    lastSkipReason: null, consecutiveFailures: 0, lastFailedAt: null, lastFailureCode: null, lastFailedRunId: null })
  const [row] = await w.service.db.owner`select encode(token_hash, 'hex') as hash, row_to_json(t)::text as everything
    from app.automation_triggers t`
  t.equal(row!.hash, createHash('sha256').update(bound.body.token).digest('hex'), 'only the SHA-256 is stored')
  t.notMatch(row!.everything, bound.body.token, 'the plaintext is stored nowhere in the row')
  const read = await w.max.get(TRIGGERS)
  t.notMatch(read.text, bound.body.token, 'reads never show the token')
  t.notOk('token' in read.body.triggers[0])
  const list = await w.max.get('/api/v1/automations')
  t.same(list.body.automations[0].trigger, read.body.triggers[0], 'automation reads carry the trigger with its health')
  t.notMatch(list.text, bound.body.token)
  const again = await w.dev.put(TRIGGERS, { kind: 'webhook' })
  t.notOk('token' in again.body, 'a rebind of the same kind shows no token')
  t.equal((await deliver(w, bound.body.token)).status, 202, 'the first token still works')

  await w.dev.del(TRIGGERS)
  const disabled = await w.dev.put(TRIGGERS, { kind: 'schedule', cron: '0 9 * * *', enabled: false })
  t.equal(disabled.body.trigger.enabled, false, 'enabled: false on the first PUT binds disabled')
})

t.test('bound -> PUT omitting enabled: enabled, with the count and the skip reason reset', async (t) => {
  const w = await setUp(t)
  await w.dev.put(TRIGGERS, { kind: 'schedule', cron: '0 9 * * *', enabled: false })
  await failTimes(w, 2)
  await w.service.db.owner`update app.automation_triggers set last_skipped_at = now(), last_skip_reason = 'start_refused'`
  t.match(await triggerOf(w), { enabled: false, consecutiveFailures: 2, lastSkipReason: 'start_refused', lastFailureCode: 'node_error' })
  const put = await w.dev.put(TRIGGERS, { kind: 'schedule', cron: '0 9 * * *' })
  t.match(put.body.trigger, { enabled: true, consecutiveFailures: 0, lastSkipReason: null, lastSkippedAt: null })
  t.match(put.body.trigger, { lastFailureCode: 'node_error' }, 'the last failure itself is kept')
})

t.test('enabled -> disabled: the URL answers 404 and the token is kept; re-enabled, the same token works', async (t) => {
  const w = await setUp(t)
  const { token } = (await w.dev.put(TRIGGERS, { kind: 'webhook' })).body
  const [before] = await w.service.db.owner`select token_hash from app.automation_triggers`
  const off = await w.dev.put(TRIGGERS, { kind: 'webhook', enabled: false })
  t.equal(off.body.trigger.enabled, false)
  t.notOk('token' in off.body)
  refused(t, await deliver(w, token), 404, 'NOT_FOUND', 'a disabled trigger\'s URL')
  const [after] = await w.service.db.owner`select token_hash from app.automation_triggers`
  t.same(after!.token_hash, before!.token_hash, 'the token is retained')
  const on = await w.dev.put(TRIGGERS, { kind: 'webhook' })
  t.equal(on.body.trigger.enabled, true, 'omitting enabled enables')
  t.notOk('token' in on.body, 'no new token')
  t.equal((await deliver(w, token)).status, 202, 'the same token works again')
  await w.dev.put(TRIGGERS, { kind: 'webhook', enabled: false })
  await w.dev.put(TRIGGERS, { kind: 'webhook', enabled: true })
  t.equal((await deliver(w, token)).status, 202, 'and after enabled: true')
})

t.test('rotation: the new token is shown once and the old URL is dead at once', async (t) => {
  const w = await setUp(t)
  const first = (await w.dev.put(TRIGGERS, { kind: 'webhook' })).body.token
  const rotated = await w.dev.put(TRIGGERS, { kind: 'webhook', rotateToken: true })
  t.match(rotated.body.token, /^[A-Za-z0-9_-]{43}$/)
  t.not(rotated.body.token, first)
  refused(t, await deliver(w, first), 404, 'NOT_FOUND', 'the old URL')
  t.equal((await deliver(w, rotated.body.token)).status, 202, 'the new URL')
  t.notOk('token' in (await w.dev.put(TRIGGERS, { kind: 'webhook' })).body, 'shown only by the rotation')
})

t.test('webhook -> another kind: revoked, health restarts, and a later webhook bind mints a new token', async (t) => {
  const w = await setUp(t)
  const first = (await w.dev.put(TRIGGERS, { kind: 'webhook' })).body.token
  const accepted = await deliver(w, first)
  t.equal((await triggerOf(w)).lastRunId, accepted.body.runId)
  await failTimes(w, 1)
  const replaced = await w.dev.put(TRIGGERS, { kind: 'schedule', cron: '0 9 * * *' })
  t.equal(replaced.body.revoked, 'webhook')
  t.match(replaced.body.trigger, { kind: 'schedule', lastFiredAt: null, lastRunId: null, consecutiveFailures: 0,
    lastFailedAt: null, lastFailureCode: null, lastFailedRunId: null }, 'health stamps restart')
  refused(t, await deliver(w, first), 404, 'NOT_FOUND', 'the replaced webhook\'s URL')
  const event = await w.dev.put(TRIGGERS, { kind: 'event', event: 'project.created' })
  t.notOk('revoked' in event.body, 'only a replaced webhook is revoked')
  const again = await w.dev.put(TRIGGERS, { kind: 'webhook' })
  t.match(again.body.token, /^[A-Za-z0-9_-]{43}$/, 'a new token')
  t.not(again.body.token, first)
  refused(t, await deliver(w, first), 404, 'NOT_FOUND', 'the first token stays dead')
  t.equal((await deliver(w, again.body.token)).status, 202)
})

t.test('DELETE answers 204 whether or not a trigger existed, and revokes the URL', async (t) => {
  const w = await setUp(t)
  const none = await w.dev.del(TRIGGERS)
  t.equal(none.status, 204, 'nothing bound')
  const { token } = (await w.dev.put(TRIGGERS, { kind: 'webhook' })).body
  t.equal((await w.dev.del(TRIGGERS)).status, 204)
  t.same((await w.max.get(TRIGGERS)).body, { triggers: [] })
  t.equal((await w.max.get('/api/v1/automations')).body.automations[0].trigger, null, 'reads show no trigger')
  refused(t, await deliver(w, token), 404, 'NOT_FOUND', 'the removed webhook\'s URL')
  t.equal((await w.dev.del(TRIGGERS)).status, 204, 'again')
  t.equal((await w.dev.del('/api/v1/automations/nope/triggers')).status, 204, 'no automation, no trigger: the same 204')
  refused(t, await w.eddie.del(TRIGGERS), 403, 'ROLE_FORBIDDEN', 'removing still needs the developer capability')
})

t.test('schedule health: counted failures add up, other failures move nothing, a success resets', async (t) => {
  const w = await setUp(t)
  await w.dev.put(TRIGGERS, { kind: 'schedule', cron: '0 9 * * *' })
  await failTimes(w, 2)
  const counted = await triggerOf(w)
  t.match(counted, { enabled: true, consecutiveFailures: 2, lastFailureCode: 'node_error', lastFailedAt: Number })
  await failTimes(w, 1, 'timeout')
  t.match(await triggerOf(w), { consecutiveFailures: 2, lastFailureCode: 'node_error', lastFailedRunId: counted.lastFailedRunId },
    'a non-counted failure neither counts nor resets')
  const run = await firedRun(w)
  await endRun(w, run, null)
  t.match(await triggerOf(w), { consecutiveFailures: 0, lastRunId: run, lastFiredAt: Number }, 'a success resets the count')
})

t.test('a schedule reaching five counted failures pauses, with its audit row and notifications; PUT enables it again', async (t) => {
  const w = await setUp(t)
  await w.dev.put(TRIGGERS, { kind: 'schedule', cron: '0 9 * * *' })
  const late = await firedRun(w)
  await failTimes(w, 4, 'connector_error')
  t.match(await triggerOf(w), { enabled: true, consecutiveFailures: 4 }, 'fewer than five: unchanged')
  await failTimes(w, 1, 'llm_output_invalid')
  const paused = await triggerOf(w)
  t.match(paused, { enabled: false, lastSkipReason: 'paused_after_failures', consecutiveFailures: 5, lastSkippedAt: Number })
  const audit = await w.service.db.owner`select action, data from app.audit_log where action = 'automation.trigger.paused'`
  t.equal(audit.length, 1, 'one audit row')
  t.match(audit[0]!.data, { automation: 'ops/hook', failures: 5, lastFailureCode: 'llm_output_invalid' })
  const notified = await w.service.db.owner<{ email: string }[]>`select u.email from app.notifications n
    join app.users u on u.id = n.recipient_id where n.kind = 'automation.trigger.paused' order by u.email`
  t.same(notified.map((n) => n.email), ['adam@acme.test', 'olive@acme.test'], 'every owner and admin, no one else')
  await endRun(w, late, null)
  t.match(await triggerOf(w), { enabled: false, consecutiveFailures: 5 }, 'a success does not reset a paused schedule')
  const resumed = await w.dev.put(TRIGGERS, { kind: 'schedule', cron: '0 9 * * *', enabled: true })
  t.match(resumed.body.trigger, { enabled: true, consecutiveFailures: 0, lastSkipReason: null }, 'count cleared')
})

t.test('webhook and event bindings count failures but never pause', async (t) => {
  const w = await setUp(t)
  for (const body of [{ kind: 'webhook' }, { kind: 'event', event: 'project.created' }]) {
    await w.dev.put(TRIGGERS, body)
    await failTimes(w, 6)
    t.match(await triggerOf(w), { kind: body.kind, enabled: true, consecutiveFailures: 6, lastSkipReason: null }, `${body.kind}: not paused`)
  }
})
