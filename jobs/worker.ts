// The graphile-worker runner: in-process beside the API by default, or alone via
// `npm run worker`. Tasks are one file each under jobs/tasks.
import { run, type Runner, type TaskList } from 'graphile-worker'
import { forgetIdleRateBuckets } from './tasks/forget-idle-rate-buckets.ts'

export const taskList: TaskList = {
  forget_idle_rate_buckets: forgetIdleRateBuckets,
}

const crontab = [
  '*/15 * * * * forget_idle_rate_buckets ?max=1',
].join('\n')

export async function startWorker(connectionString: string, concurrency = 2): Promise<Runner> {
  return run({ connectionString, concurrency, taskList, crontab, noHandleSignals: true, pollInterval: 1000 })
}
