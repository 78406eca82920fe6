// Schedule triggers: the SQL tick starts each occurrence once (repeated, racing),
// in the trigger's zone across both daylight-saving changes, with one catch-up run
// after downtime, and records why an occurrence started nothing. The worker's tick
// task ticks the minute the crontab scheduled it for.
import t, { type Test } from 'tap'
import postgres from 'postgres'
import type { JobHelpers } from 'graphile-worker'
import { world, type World } from '../lib/world.ts'
import { automationPath as path, callTool, deploy, inputlessDocument as document } from '../lib/automations.ts'
import { pinClock } from '../lib/db.ts'
import { scheduleTick } from '../../jobs/tasks/schedule-tick.ts'

const ms = (iso: string) => Date.parse(iso)

async function scheduled(w: World, name: string, cron: string, timezone?: string, deployIt = true) {
  const client = await w.dev.mcp()
  if (deployIt) await deploy(client, document(name))
  else await callTool(client, 'automation_create', { document: document(name) })
  const put = await w.dev.put(`${path(name)}/triggers`, { kind: 'schedule', cron, ...(timezone ? { timezone } : {}) })
  if (put.status !== 200) throw new Error(`binding ${name} failed: ${put.status} ${put.text}`)
  return put.body.trigger
}

const tick = async (w: World, at: string | number) =>
  (await w.service.db.owner<{ n: number }[]>`select app.schedule_tick(${new Date(at)}) as n`)[0]!.n

const triggerOf = async (w: World, name: string) => (await w.dev.get(`${path(name)}/triggers`)).body.triggers[0]

const triggerId = async (w: World, name: string) => (await w.service.db.owner<{ id: string }[]>`
  select t.id from app.automation_triggers t join app.automations a on a.id = t.automation_id where a.name = ${name}`)[0]!.id

const runsOf = async (w: World, name: string) => (await w.service.db.owner<{ id: string; input: any }[]>`
  select id, input from app.runs where automation_name = ${name} order by created_at, (input->>'scheduledAt')::bigint`)

t.test('a tick run twice for the same minute starts one run, attributed to its trigger', async (t) => {
  const w = await world(t)
  await pinClock(w.service.db.owner, ms('2025-06-02T10:00:30Z'))
  const bound = await scheduled(w, 'sched/minutely', '* * * * *')
  t.equal(bound.nextDueAt, ms('2025-06-02T10:01:00Z'), 'the next occurrence after the binding')

  await pinClock(w.service.db.owner, ms('2025-06-02T10:01:00Z'))
  t.equal(await tick(w, '2025-06-02T10:01:00Z'), 1, 'the first tick starts the occurrence')
  t.equal(await tick(w, '2025-06-02T10:01:00Z'), 0, 'the same minute again starts nothing')
  t.equal(await tick(w, '2025-06-02T10:01:40Z'), 0, 'nor does a later tick within the minute')
  const runs = await runsOf(w, 'sched/minutely')
  t.equal(runs.length, 1)

  const run = (await w.olive.get(`/api/v1/runs/${runs[0]!.id}`)).body
  t.match(run, { startedBy: `trigger:${await triggerId(w, 'sched/minutely')}`, startedVia: 'schedule', mode: 'live' })
  t.same(run.input, { trigger: 'schedule', scheduledAt: ms('2025-06-02T10:01:00Z'), firedAt: ms('2025-06-02T10:01:00Z') })
  t.match(await triggerOf(w, 'sched/minutely'), {
    enabled: true, lastFiredAt: ms('2025-06-02T10:01:00Z'), lastRunId: runs[0]!.id, nextDueAt: ms('2025-06-02T10:02:00Z'),
  })
})

t.test('two ticks racing from two connections start one run per occurrence', async (t) => {
  const w = await world(t)
  await pinClock(w.service.db.owner, ms('2025-06-02T10:00:30Z'))
  await scheduled(w, 'sched/raced', '* * * * *')
  const other = postgres(w.service.db.url, { max: 1, onnotice: () => {} })
  t.teardown(() => other.end())
  const tickOn = async (sql: postgres.Sql | postgres.TransactionSql, at: string) => (await sql<{ n: number }[]>`select app.schedule_tick(${new Date(at)}) as n`)[0]!.n

  // One tick holds the due trigger in its open transaction while the other runs.
  const [held, alongside] = await w.service.db.owner.begin(async (tx) => {
    const first = await tickOn(tx, '2025-06-02T10:01:00Z')
    return [first, await tickOn(other, '2025-06-02T10:01:00Z')]
  })
  t.equal(held, 1)
  t.equal(alongside, 0, 'the concurrent tick skips the locked trigger')
  t.equal(await tickOn(other, '2025-06-02T10:01:00Z'), 0, 'and finds nothing left once the first committed')

  // Free races, one per minute.
  for (let minute = 2; minute <= 9; minute++) {
    const at = `2025-06-02T10:0${minute}:00Z`
    const started = await Promise.all([tickOn(w.service.db.owner, at), tickOn(other, at)])
    t.equal(started[0]! + started[1]!, 1, `one run at ${at}`)
  }
  const runs = await runsOf(w, 'sched/raced')
  t.equal(runs.length, 9)
  t.equal(new Set(runs.map((r) => r.input.scheduledAt)).size, 9, 'each occurrence once')
})

// Wall-clock time in Berlin, to read occurrences as the schedule's owner wrote them.
const berlin = (at: number) => new Intl.DateTimeFormat('sv-SE', {
  timeZone: 'Europe/Berlin', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
}).format(at)

// Ticks at each next occurrence until `until` (and a minute before each, which must
// start nothing); returns the occurrences that started a run, in Berlin time.
async function fireUntil(t: Test, w: World, names: string[], until: string): Promise<string[]> {
  const fired: string[] = []
  for (;;) {
    const [next] = await w.service.db.owner<{ due: Date; name: string }[]>`
      select t.next_due_at as due, a.name from app.automation_triggers t join app.automations a on a.id = t.automation_id
       where a.name in ${w.service.db.owner(names)} order by t.next_due_at limit 1`
    if (!next || next.due.getTime() > ms(until)) return fired
    const due = next.due.getTime()
    t.equal(await tick(w, due - 60_000), 0, `nothing a minute before ${berlin(due)}`)
    await pinClock(w.service.db.owner, due)
    t.equal(await tick(w, due), 1, `${next.name} at ${berlin(due)}`)
    t.equal(await tick(w, due), 0, `once at ${berlin(due)}`)
    fired.push(`${next.name.split('/')[1]} ${berlin(due)}`)
  }
}

t.test('a zone\'s schedule keeps its wall-clock time across both daylight-saving changes', async (t) => {
  const w = await world(t)
  await pinClock(w.service.db.owner, ms('2025-03-28T12:00:00Z'))
  await scheduled(w, 'sched/night', '30 2 * * *', 'Europe/Berlin')
  await scheduled(w, 'sched/morning', '0 9 * * *', 'Europe/Berlin')

  // Spring: 02:00 CET jumps to 03:00 CEST on 30 March, so 02:30 does not exist that night.
  t.same(await fireUntil(t, w, ['sched/night', 'sched/morning'], '2025-03-31T12:00:00Z'), [
    'night 2025-03-29 02:30', 'morning 2025-03-29 09:00',
    'night 2025-03-30 03:30', 'morning 2025-03-30 09:00',
    'night 2025-03-31 02:30', 'morning 2025-03-31 09:00',
  ], 'the skipped 02:30 fires once, at 03:30; 09:00 stays 09:00')

  // Autumn: 03:00 CEST falls back to 02:00 CET on 26 October, so 02:30 happens twice.
  await pinClock(w.service.db.owner, ms('2025-10-24T12:00:00Z'))
  for (const name of ['sched/night', 'sched/morning']) {
    await w.dev.put(`${path(name)}/triggers`, { kind: 'schedule', cron: name === 'sched/night' ? '30 2 * * *' : '0 9 * * *', timezone: 'Europe/Berlin' })
  }
  const before = await fireUntil(t, w, ['sched/night', 'sched/morning'], '2025-10-25T12:00:00Z')
  t.equal(await tick(w, '2025-10-26T00:30:00Z'), 0, 'the first 02:30 (CEST) of the repeated hour is not an occurrence')
  t.same([...before, ...await fireUntil(t, w, ['sched/night', 'sched/morning'], '2025-10-27T12:00:00Z')], [
    'night 2025-10-25 02:30', 'morning 2025-10-25 09:00',
    'night 2025-10-26 02:30', 'morning 2025-10-26 09:00',
    'night 2025-10-27 02:30', 'morning 2025-10-27 09:00',
  ], 'the repeated 02:30 fires once; 09:00 stays 09:00')
  const octoberNights = (await runsOf(w, 'sched/night')).map((r) => r.input.scheduledAt as number)
    .filter((at) => berlin(at).startsWith('2025-10-26'))
  t.same(octoberNights, [ms('2025-10-26T01:30:00Z')], 'one run on the night of the change, at the second 02:30')
  t.equal((await runsOf(w, 'sched/morning')).filter((r) => berlin(r.input.scheduledAt).startsWith('2025-10-26'))[0]!.input.scheduledAt,
    ms('2025-10-26T08:00:00Z'), '09:00 CET is 08:00 UTC after the change')
})

t.test('after downtime a schedule starts one catch-up run and moves past now', async (t) => {
  const w = await world(t)
  await pinClock(w.service.db.owner, ms('2025-06-02T10:00:30Z'))
  await scheduled(w, 'sched/hourly', '0 * * * *')
  // Nothing ticked from 10:00:30 to 15:30: five occurrences were missed.
  await pinClock(w.service.db.owner, ms('2025-06-02T15:30:00Z'))
  t.equal(await tick(w, '2025-06-02T15:30:00Z'), 1, 'one run, not one per missed occurrence')
  t.equal(await tick(w, '2025-06-02T15:31:00Z'), 0, 'the next tick starts nothing')
  const [run] = await runsOf(w, 'sched/hourly')
  t.same(run!.input, { trigger: 'schedule', scheduledAt: ms('2025-06-02T11:00:00Z'), firedAt: ms('2025-06-02T15:30:00Z') },
    'the catch-up run names the first missed occurrence and when it fired')
  t.equal((await triggerOf(w, 'sched/hourly')).nextDueAt, ms('2025-06-02T16:00:00Z'), 'the next occurrence is after now')
  t.equal(await tick(w, '2025-06-02T16:00:00Z'), 1, 'and fires on time')
  t.equal((await runsOf(w, 'sched/hourly')).length, 2)
})

t.test('an occurrence of an automation with nothing deployed records not_deployed', async (t) => {
  const w = await world(t)
  await pinClock(w.service.db.owner, ms('2025-06-02T10:00:30Z'))
  await scheduled(w, 'sched/draft', '* * * * *', undefined, false)
  await pinClock(w.service.db.owner, ms('2025-06-02T10:01:00Z'))
  t.equal(await tick(w, '2025-06-02T10:01:00Z'), 0)
  t.match(await triggerOf(w, 'sched/draft'), {
    enabled: true, lastSkippedAt: ms('2025-06-02T10:01:00Z'), lastSkipReason: 'not_deployed', lastFiredAt: null,
    nextDueAt: ms('2025-06-02T10:02:00Z'),
  })
  t.equal((await runsOf(w, 'sched/draft')).length, 0)
})

t.test('an occurrence no single project can take records start_refused', async (t) => {
  const w = await world(t)
  await pinClock(w.service.db.owner, ms('2025-06-02T10:00:30Z'))
  await scheduled(w, 'sched/two-homes', '* * * * *')
  for (const project of [w.alpha, w.beta]) {
    const installed = await w.olive.post(`/api/v1/projects/${project}/automations/sched__two-homes`, {})
    if (installed.status !== 201) throw new Error(installed.text)
  }
  await pinClock(w.service.db.owner, ms('2025-06-02T10:01:00Z'))
  t.equal(await tick(w, '2025-06-02T10:01:00Z'), 0, 'installed in two projects, a schedule names neither')
  t.match(await triggerOf(w, 'sched/two-homes'), {
    lastSkippedAt: ms('2025-06-02T10:01:00Z'), lastSkipReason: 'start_refused', nextDueAt: ms('2025-06-02T10:02:00Z'),
  })
  t.equal((await runsOf(w, 'sched/two-homes')).length, 0)
})

t.test('a schedule that can no longer fire records unusable_cron and waits for no occurrence', async (t) => {
  const w = await world(t)
  await pinClock(w.service.db.owner, ms('2025-06-02T10:00:30Z'))
  await scheduled(w, 'sched/lost-zone', '* * * * *', 'Europe/Berlin')
  // The zone left PostgreSQL's zone database after the binding (an upgrade of tzdata).
  await w.service.db.owner`update app.automation_triggers set timezone = 'Atlantis/Poseidonis'`
  await pinClock(w.service.db.owner, ms('2025-06-02T10:01:00Z'))
  t.equal(await tick(w, '2025-06-02T10:01:00Z'), 0)
  t.match(await triggerOf(w, 'sched/lost-zone'), {
    lastSkippedAt: ms('2025-06-02T10:01:00Z'), lastSkipReason: 'unusable_cron', nextDueAt: null,
  })
  t.equal(await tick(w, '2025-06-03T10:01:00Z'), 0, 'nothing is due again')
  t.equal((await runsOf(w, 'sched/lost-zone')).length, 0)
})

// The worker's task, called as graphile-worker calls it, on the owner's connection.
function helpersOn(w: World): JobHelpers {
  const quiet = { debug() {}, info() {}, warn() {}, error() {} }
  return {
    query: async (text: string, values: unknown[] = []) => ({ rows: await w.service.db.owner.unsafe(text, values as never[]) }),
    logger: quiet,
  } as unknown as JobHelpers
}

t.test('the tick task ticks the minute the crontab scheduled it for, however late it runs', async (t) => {
  const w = await world(t)
  await pinClock(w.service.db.owner, ms('2025-06-02T10:04:30Z'))
  await scheduled(w, 'sched/late-worker', '* * * * *')
  // The job for 10:05 reaches a busy worker at 10:07:30.
  await pinClock(w.service.db.owner, ms('2025-06-02T10:07:30Z'))
  await scheduleTick({ _cron: { ts: '2025-06-02T10:05:00.000Z', backfilled: false } }, helpersOn(w))
  let runs = await runsOf(w, 'sched/late-worker')
  t.same(runs.map((r) => r.input), [{ trigger: 'schedule', scheduledAt: ms('2025-06-02T10:05:00Z'), firedAt: ms('2025-06-02T10:05:00Z') }])
  t.equal((await triggerOf(w, 'sched/late-worker')).nextDueAt, ms('2025-06-02T10:06:00Z'), 'the next minute after the scheduled one')

  // A job without the crontab's instant ticks at the database's now.
  await scheduleTick({}, helpersOn(w))
  runs = await runsOf(w, 'sched/late-worker')
  t.same(runs.at(-1)!.input, { trigger: 'schedule', scheduledAt: ms('2025-06-02T10:06:00Z'), firedAt: ms('2025-06-02T10:07:30Z') })
  t.equal((await triggerOf(w, 'sched/late-worker')).nextDueAt, ms('2025-06-02T10:08:00Z'))
})

// Day of month and day of week combine as cron has it: OR when both are restricted,
// AND when either is written with a leading `*` (so `*/2` narrows, never widens).
t.test('the two day fields combine as in cron', async (t) => {
  const w = await world(t)
  const { parseCron } = await import('../../server/core/schedules/cron.ts')
  const nextDays = async (expression: string, count: number) => {
    const parsed = parseCron(expression)
    if (!('cronFields' in parsed)) throw new Error(parsed.cronProblem)
    const days: string[] = []
    let after = '2026-06-01T00:00:00Z'
    for (let i = 0; i < count; i++) {
      const [row] = await w.service.db.owner<{ at: Date }[]>`
        select app.cron_next(${w.service.db.owner.json(parsed.cronFields as never)}, 'UTC', ${after}::timestamptz) as at`
      after = row!.at.toISOString()
      days.push(after.slice(0, 10))
    }
    return days
  }
  // June 2026: Mondays are the 1st, 8th, 15th, 22nd and 29th.
  t.same(await nextDays('0 12 */2 * 1', 3), ['2026-06-01', '2026-06-15', '2026-06-29'], 'odd days that are Mondays')
  t.same(await nextDays('0 12 10,20 * 1', 4), ['2026-06-01', '2026-06-08', '2026-06-10', '2026-06-15'], 'the 10th, the 20th or a Monday')
  t.same(await nextDays('0 12 * * 1', 2), ['2026-06-01', '2026-06-08'], 'every Monday')
  t.same(await nextDays('0 12 13 * *', 2), ['2026-06-13', '2026-07-13'], 'every 13th')
})

// A PUT whose transaction began before a tick took the row waits for it, and must not
// schedule again the occurrence that tick started.
t.test('a PUT that waited on a tick does not bring back the occurrence the tick started', async (t) => {
  const w = await world(t)
  await pinClock(w.service.db.owner, ms('2025-06-02T10:00:30Z'))
  await scheduled(w, 'sched/raced', '* * * * *')
  t.equal(await tick(w, '2025-06-02T10:01:00Z'), 1, 'the tick starts 10:01')
  // The clock still reads 10:00:30, as it did when the PUT's transaction began.
  const put = await w.dev.put(`${path('sched/raced')}/triggers`, { kind: 'schedule', cron: '* * * * *' })
  t.equal(put.body.trigger.nextDueAt, ms('2025-06-02T10:02:00Z'), 'the next occurrence is after the one already started')
  t.equal(await tick(w, '2025-06-02T10:01:00Z'), 0, 'so 10:01 does not start twice')
  t.equal((await runsOf(w, 'sched/raced')).length, 1)
})
