// Closing a connection whose request body was not read to its end.
//
// An answer can go out before the body it answers has arrived: a 413 refused on its
// Content-Length, a GET whose route reads no body, a refusal of the key before the
// upload. When that connection then closes (the client asked for `Connection: close`,
// or the refusal says so), Node destroys the socket as soon as the answer is handed to
// the kernel. Bytes the client is still sending then reach a closed socket, the kernel
// answers them with a reset, and a reset makes the client's kernel discard whatever of
// the answer it had not yet read: the client sees its request aborted instead of the
// answer. So such a connection half-closes once the answer is out, goes on discarding
// what still arrives for a moment, and only then closes (HTTP/1.1's lingering close,
// as nginx and Apache do it).
import type { IncomingMessage, ServerResponse } from 'node:http'

/** How long a connection closed with its request body unread keeps discarding what the client still sends. */
export const LINGER_MS = 2_000

type LingeringSocket = IncomingMessage['socket'] & { destroySoon?: () => void; lingering?: boolean; lastAnswered?: boolean }

/** From now on, a close of this request's connection lingers, and the rest of its body is read and dropped. */
function lingeringClose(req: IncomingMessage): void {
  const socket = req.socket as LingeringSocket
  if (!socket.lingering) {
    socket.lingering = true
    socket.destroySoon = () => {
      socket.end()
      // The client has already closed its side: nothing more is coming.
      if (socket.readableEnded) {
        socket.destroy()
        return
      }
      // The client closes its side once it has read the answer; until then (or the
      // linger's end) what it sends is read and dropped.
      const timer = setTimeout(() => socket.destroy(), LINGER_MS)
      timer.unref()
      socket.once('end', () => socket.destroy())
      socket.once('close', () => clearTimeout(timer))
    }
  }
  req.resume()
}

/**
 * Makes an answer sent before its request's body has fully arrived close lingering.
 * Requests that carry no body pay nothing: their connection has nothing unread.
 */
export function lingerOnUnreadBody(req: IncomingMessage, res: ServerResponse): void {
  const length = req.headers['content-length']
  const carriesBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
  if (!carriesBody) return
  // 'prefinish' comes before Node's own 'finish' handler, which is what closes the connection.
  res.once('prefinish', () => {
    if (req.complete) return
    lingeringClose(req)
    // While the connection lingers, its parser goes on reading, and a request the
    // client sent after the body would reach the app once the body is read. An answer
    // that closes the connection is its last (HTTP/1.1 processes nothing after it).
    if (!res.shouldKeepAlive || /\bclose\b/i.test(String(res.getHeader('connection') ?? ''))) {
      (req.socket as LingeringSocket).lastAnswered = true
    }
  })
}

/**
 * True for a request that arrived on a connection whose last answer is out: the
 * connection is cut and the request never served. Checked first by every server that
 * lingers.
 */
export function arrivedAfterLastAnswer(req: IncomingMessage): boolean {
  const socket = req.socket as LingeringSocket
  if (!socket.lastAnswered) return false
  socket.destroy()
  return true
}
