// Runs through the engine: a trivial deployed automation (set + output) started over
// REST at 32 connections; runs completed per second, and the latency from the start
// (the row the 202 answers for) to the terminal status. The floor is graphile-worker
// alone on the same machine: jobs of a task that does nothing, from the same queue.
import autocannon from 'autocannon'
import postgres from 'postgres'
import { run as runWorker, Logger } from 'graphile-worker'
import { WORKER_PRESET } from '../jobs/worker.ts'

export interface RunFigures {
  started: number
  completed: number
  completedPerSecond: number
  p50: number
  p99: number
  errors: number
}

const TRIVIAL = {
  name: 'bench/trivial',
  steps: [
    { slug: 'set', type: 'set', config: { values: { greeting: 'hi {{ input.n }}' } }, next: { success: 'end' } },
    { slug: 'end', type: 'output', config: { mapping: { greeting: '{{ steps.set.output.greeting }}' } } },
  ],
}

export async function deployTrivial(url: string): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  await sql`
    with a as (
      insert into app.automations (organization_id, name, deployed_version)
      select id, ${TRIVIAL.name}, 1 from app.organizations where slug = 'bench' returning organization_id, id
    )
    insert into app.automation_versions (organization_id, automation_id, version, document)
    select organization_id, id, 1, ${sql.json(TRIVIAL)} from a`
  await sql.end()
}

export async function benchRuns(url: string, port: number, key: string, connections: number, seconds: number): Promise<RunFigures> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  await sql`delete from app.runs`
  const began = new Date()
  const load = await autocannon({
    url: `http://127.0.0.1:${port}/api/v1/automations/bench__trivial/runs`, method: 'POST', connections, duration: seconds,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"input": {"n": 1}}',
  })
  // Let the queue drain, then measure what was started during the load.
  for (let i = 0; i < 600; i++) {
    const [live] = await sql`select count(*)::int as n from app.runs where status in ('queued', 'running')`
    if (live!.n === 0) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const [figures] = await sql<{ started: number; completed: number; span: number; p50: number; p99: number }[]>`
    select count(*)::int as started,
           count(*) filter (where status = 'completed')::int as completed,
           extract(epoch from max(finished_at) - ${began}::timestamptz)::float8 as span,
           percentile_cont(0.5) within group (order by extract(epoch from finished_at - created_at) * 1000)::float8 as p50,
           percentile_cont(0.99) within group (order by extract(epoch from finished_at - created_at) * 1000)::float8 as p99
      from app.runs`
  await sql.end()
  return {
    started: figures!.started, completed: figures!.completed,
    completedPerSecond: figures!.completed / Math.max(figures!.span, seconds),
    p50: Math.round(figures!.p50 * 10) / 10, p99: Math.round(figures!.p99 * 10) / 10,
    errors: load.non2xx + load.errors,
  }
}

/** graphile-worker's own throughput: empty jobs through a runner of the given concurrency. */
export async function benchEmptyJobs(url: string, jobs: number, concurrency: number): Promise<number> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  await sql`select graphile_worker.add_jobs(array(select row('bench_noop', '{}'::json, null, null, null, null, null, null)::graphile_worker.job_spec
                                                   from generate_series(1, ${jobs})))`
  const began = performance.now()
  let done = 0
  const finished = new Promise<void>((resolve) => {
    void runWorker({
      connectionString: url, concurrency, noHandleSignals: true, pollInterval: 1000, logger: new Logger(() => () => {}),
      preset: { worker: WORKER_PRESET(concurrency) },
      taskList: { bench_noop: async () => { if (++done === jobs) resolve() } },
    }).then((runner) => finished.then(() => runner.stop()))
  })
  await finished
  const seconds = (performance.now() - began) / 1000
  await sql.end()
  return jobs / seconds
}
