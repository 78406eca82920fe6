// Stopping an HTTP server without dropping what it accepted: the API and the
// internal services close through this on shutdown.
//
// Node's own ways both lose requests under load. closeAllConnections() cuts requests
// in flight; http.Server#close() stops listening but also destroys every kept-alive
// connection that is idle at that instant, and a client that has just written its
// next request on one (it cannot know) is reset. A drain instead stops listening,
// lets every request already taken finish with `Connection: close`, closes a
// connection only once it has been idle for a moment (as a keep-alive timeout would),
// and cuts what is left only when the grace runs out.
import net from 'node:net'
import type http from 'node:http'

/** How long requests already accepted get to finish once a shutdown begins; what still runs then is cut. */
export const DRAIN_GRACE_MS = 5_000

/**
 * How long a kept-alive connection may have sat idle, during a drain, before it is
 * closed: long enough that a client in the middle of a sequence of requests sends its
 * next one (and is answered with `Connection: close`) rather than racing the close.
 */
export const DRAIN_IDLE_MS = 500

export interface DrainOptions {
  idleMs?: number
}

/** Stops listening and resolves once every connection has closed, cutting them after graceMs. */
export type Drain = (graceMs?: number) => Promise<void>

/**
 * Watches the server's connections and requests from now on (call it before the
 * server listens) and returns the function that drains it.
 */
export function drainer(server: http.Server, options: DrainOptions = {}): Drain {
  const idleMs = options.idleMs ?? DRAIN_IDLE_MS
  // Requests each open connection is serving; 0 is an idle kept-alive connection.
  const serving = new Map<net.Socket, number>()
  const responses = new Set<http.ServerResponse>()
  const idleTimers = new Map<net.Socket, NodeJS.Timeout>()
  // When each connection last became idle (accepted, or its last response ended).
  const idleSince = new Map<net.Socket, number>()
  let drained: Promise<void> | null = null

  const stopIdleTimer = (socket: net.Socket) => {
    clearTimeout(idleTimers.get(socket))
    idleTimers.delete(socket)
  }
  // Half-closes: the client reads the end of the stream instead of a reset, and the
  // socket closes when the client closes its side (or when the grace runs out).
  const closeWhenIdle = (socket: net.Socket) => {
    stopIdleTimer(socket)
    const waited = performance.now() - (idleSince.get(socket) ?? performance.now())
    idleTimers.set(socket, setTimeout(() => {
      idleTimers.delete(socket)
      if ((serving.get(socket) ?? 0) === 0) socket.end()
    }, Math.max(0, idleMs - waited)).unref())
  }

  server.on('connection', (socket: net.Socket) => {
    serving.set(socket, 0)
    idleSince.set(socket, performance.now())
    socket.once('close', () => {
      serving.delete(socket)
      idleSince.delete(socket)
      stopIdleTimer(socket)
    })
    if (drained) closeWhenIdle(socket)
  })

  // Before the application's own listener, so a response begun during a drain
  // carries the header from its first byte.
  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket as net.Socket
    serving.set(socket, (serving.get(socket) ?? 0) + 1)
    stopIdleTimer(socket)
    responses.add(res)
    if (drained) res.setHeader('connection', 'close')
    res.once('close', () => {
      responses.delete(res)
      if (!serving.has(socket)) return
      const left = Math.max(0, serving.get(socket)! - 1)
      serving.set(socket, left)
      if (left === 0) idleSince.set(socket, performance.now())
      // A response whose headers went out before the drain did not say close.
      if (drained && left === 0 && !socket.destroyed) closeWhenIdle(socket)
    })
  })

  return (graceMs = DRAIN_GRACE_MS) => drained ??= new Promise<void>((resolve) => {
    const cut = setTimeout(() => {
      server.closeAllConnections()
      for (const socket of serving.keys()) socket.destroy()
    }, graceMs)
    cut.unref()
    // net's close, not http's: it only stops listening, and calls back once the last
    // connection has closed.
    net.Server.prototype.close.call(server, () => {
      clearTimeout(cut)
      resolve()
    })
    for (const res of responses) if (!res.headersSent) res.setHeader('connection', 'close')
    for (const [socket, count] of serving) if (count === 0) closeWhenIdle(socket)
  })
}
