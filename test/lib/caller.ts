// Runs SQL as a caller would: on the request role, with the caller's context set the
// way app.authenticate sets it.
import type { Sql } from '../../server/core/db/connection.ts'

export interface SqlCaller {
  userId: string
  orgId: string
  role: string
}

export async function asCaller<T>(requests: Sql, caller: SqlCaller, work: (sql: Sql) => Promise<T>): Promise<T> {
  return (await requests.begin(async (tx) => {
    await tx`select set_config('app.user_id', ${caller.userId}, true), set_config('app.org_id', ${caller.orgId}, true),
                    set_config('app.role', ${caller.role}, true)`
    return work(tx as unknown as Sql)
  })) as T
}
