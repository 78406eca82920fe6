// The worker heartbeat's timing, shared by the worker that writes it (jobs/) and the
// admin CLI that reads it (`admin status`).

/** How often a running worker process rewrites its row of app.worker_heartbeats. */
export const HEARTBEAT_INTERVAL_MS = 5_000

/**
 * A worker counts as live while its last beat is at most this old: six intervals, so a
 * busy database or a long pause of the event loop does not make a working process
 * look dead.
 */
export const HEARTBEAT_LIVE_SECONDS = 30

/** Rows stale for longer (processes that died without stopping) are removed by the next worker to start. */
export const HEARTBEAT_FORGET_SECONDS = 86_400
