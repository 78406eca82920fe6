// /metrics/store: the backend store (PostgreSQL) as its statistics views describe it,
// read at each scrape: connections, transactions, locks, replication lag where there
// is replication, and per table the rows, dead rows and vacuum ages that tell bloat.
// Counters PostgreSQL keeps (commits, rollbacks) are exposed as counters whose value
// is PostgreSQL's, so rate() works across restarts of this process.
import { Counter, Gauge, Registry } from 'prom-client'
import type { Sql } from '../core/db/connection.ts'
import { readSnapshot } from './snapshot.ts'

export interface StoreMetrics {
  registry: Registry
  /** Reads the statistics views; called before each scrape. */
  refresh: () => Promise<void>
}

interface Snapshot {
  connections: { state: string; count: number }[]
  maxConnections: number
  database: { commits: string; rollbacks: string; deadlocks: string; conflicts: string; bytes: string }
  locks: { mode: string; granted: boolean; count: number }[]
  recovery: { in_recovery: boolean; replay_lag: number | null }
  replicas: { replica: string; lag: number | null }[]
  tables: { schema: string; table: string; live: string; dead: string; vacuum_age: number | null; analyze_age: number | null }[]
}

// Every state pg_stat_activity reports for a client backend, so each appears at 0.
const STATES = ['active', 'idle', 'idle in transaction', 'idle in transaction (aborted)', 'fastpath function call', 'disabled']

export function createStoreMetrics(owner: Sql): StoreMetrics {
  const registry = new Registry()
  const gauge = (name: string, help: string, labelNames: string[] = []) => new Gauge({ name, help, labelNames, registers: [registry] })
  const counter = (name: string, help: string) => new Counter({ name, help, registers: [registry] })

  const up = gauge('store_up', 'Whether the store answered this scrape in time (1) or not (0: the other families are empty).')
  const connections = gauge('store_connections', 'Client connections to this database, by state (pg_stat_activity).', ['state'])
  const maxConnections = gauge('store_max_connections', 'The server\'s max_connections.')
  const commits = counter('store_transactions_committed_total', 'Transactions committed in this database (pg_stat_database.xact_commit).')
  const rollbacks = counter('store_transactions_rolled_back_total', 'Transactions rolled back in this database (pg_stat_database.xact_rollback).')
  const deadlocks = counter('store_deadlocks_total', 'Deadlocks detected in this database (pg_stat_database.deadlocks).')
  const conflicts = counter('store_recovery_conflicts_total', 'Queries cancelled by recovery conflicts on a replica (pg_stat_database.conflicts).')
  const size = gauge('store_database_size_bytes', 'The database\'s size on disk (pg_database_size).')
  const locks = gauge('store_locks', 'Locks on this database by mode and state (held: granted; waiting: not yet granted) (pg_locks).', ['mode', 'state'])
  const waiting = gauge('store_locks_waiting', 'Lock requests on this database waiting to be granted, all modes together (0 when none).')
  const inRecovery = gauge('store_in_recovery', 'Whether this server is a replica replaying a primary\'s WAL (1) or a primary (0).')
  const replayLag = gauge('store_replica_replay_lag_seconds', 'On a replica: time since the last replayed transaction committed on the primary (absent on a primary).')
  const replicationLag = gauge('store_replication_lag_seconds', 'On a primary: each streaming replica\'s replay lag (pg_stat_replication.replay_lag; absent without replicas).', ['replica'])
  const live = gauge('store_table_live_rows', 'Estimated live rows per table (pg_stat_user_tables.n_live_tup).', ['schema', 'table'])
  const dead = gauge('store_table_dead_rows', 'Estimated dead rows per table, waiting for vacuum: the bloat indicator (n_dead_tup).', ['schema', 'table'])
  const vacuumAge = gauge('store_table_last_vacuum_age_seconds', 'Seconds since a table was last vacuumed, by hand or by autovacuum (absent if never).', ['schema', 'table'])
  const analyzeAge = gauge('store_table_last_analyze_age_seconds', 'Seconds since a table was last analyzed, by hand or by autovacuum (absent if never).', ['schema', 'table'])
  const perScrape = [connections, maxConnections, size, locks, waiting, inRecovery, replayLag, replicationLag, live, dead, vacuumAge, analyzeAge]
  const totals = [commits, rollbacks, deadlocks, conflicts]

  async function read(): Promise<Snapshot> {
    return await readSnapshot(owner, async (sql) => {
      const connections = await sql<Snapshot['connections']>`
        select s.state, count(a.pid)::int as count
          from unnest(${STATES}::text[]) as s (state)
          left join pg_stat_activity a on a.state = s.state and a.datname = current_database() and a.backend_type = 'client backend'
         group by s.state`
      const [{ max }] = await sql<[{ max: number }]>`select current_setting('max_connections')::int as max`
      // Counters as text: bigint beyond 2^53 stays exact until prom-client takes it.
      const [database] = await sql<[Snapshot['database']]>`
        select xact_commit::text as commits, xact_rollback::text as rollbacks, deadlocks::text as deadlocks,
               conflicts::text as conflicts, pg_database_size(current_database())::text as bytes
          from pg_stat_database where datname = current_database()`
      const locks = await sql<Snapshot['locks']>`
        select mode, granted, count(*)::int as count from pg_locks
         where database = (select oid from pg_database where datname = current_database())
         group by mode, granted`
      const [recovery] = await sql<[Snapshot['recovery']]>`
        select pg_is_in_recovery() as in_recovery,
               case when pg_is_in_recovery() then extract(epoch from now() - pg_last_xact_replay_timestamp())::float8 end as replay_lag`
      const replicas = await sql<Snapshot['replicas']>`
        select coalesce(nullif(application_name, ''), client_addr::text, pid::text) as replica,
               extract(epoch from replay_lag)::float8 as lag
          from pg_stat_replication`
      const tables = await sql<Snapshot['tables']>`
        select schemaname as schema, relname as "table", n_live_tup::text as live, n_dead_tup::text as dead,
               extract(epoch from now() - greatest(last_vacuum, last_autovacuum))::float8 as vacuum_age,
               extract(epoch from now() - greatest(last_analyze, last_autoanalyze))::float8 as analyze_age
          from pg_stat_user_tables`
      return { connections, maxConnections: max, database: database!, locks, recovery: recovery!, replicas, tables }
    })
  }

  return {
    registry,
    refresh: async () => {
      let snapshot: Snapshot
      try {
        snapshot = await read()
      } catch {
        for (const metric of [...perScrape, ...totals]) metric.reset()
        up.set(0)
        return
      }
      // Cleared and set in one synchronous stretch, so a concurrent scrape never sees them half-filled.
      for (const metric of [...perScrape, ...totals]) metric.reset()
      up.set(1)
      for (const row of snapshot.connections) connections.set({ state: row.state }, row.count)
      maxConnections.set(snapshot.maxConnections)
      commits.inc(Number(snapshot.database.commits))
      rollbacks.inc(Number(snapshot.database.rollbacks))
      deadlocks.inc(Number(snapshot.database.deadlocks))
      conflicts.inc(Number(snapshot.database.conflicts))
      size.set(Number(snapshot.database.bytes))
      for (const row of snapshot.locks) locks.inc({ mode: row.mode, state: row.granted ? 'held' : 'waiting' }, row.count)
      waiting.set(snapshot.locks.filter((row) => !row.granted).reduce((sum, row) => sum + row.count, 0))
      inRecovery.set(snapshot.recovery.in_recovery ? 1 : 0)
      if (snapshot.recovery.replay_lag !== null) replayLag.set(snapshot.recovery.replay_lag)
      for (const row of snapshot.replicas) if (row.lag !== null) replicationLag.set({ replica: row.replica }, row.lag)
      for (const row of snapshot.tables) {
        const labels = { schema: row.schema, table: row.table }
        live.set(labels, Number(row.live))
        dead.set(labels, Number(row.dead))
        if (row.vacuum_age !== null) vacuumAge.set(labels, row.vacuum_age)
        if (row.analyze_age !== null) analyzeAge.set(labels, row.analyze_age)
      }
    },
  }
}
