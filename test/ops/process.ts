// A process of the service started as an operator starts it, with its stderr read
// line by line (the JSON log) and its end observed.
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'

export const root = fileURLToPath(new URL('../../', import.meta.url))
/** tsx as an --import argument that resolves from any working directory. */
export const tsxLoader = import.meta.resolve('tsx')

export interface Spawned {
  child: ChildProcess
  /** Every stderr line so far. */
  lines: string[]
  /** Every stdout line so far. */
  out: string[]
  /** Resolves with the first stderr line (now or later) that matches. */
  line: (match: (line: string) => boolean) => Promise<string>
  /** Resolves when the process has exited and every stream of it (and of its children) closed. */
  closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

export function spawnProcess(command: string, args: string[], options: { env: Record<string, string>; cwd?: string }): Spawned {
  // The internal services of mode all on ports of their own, so processes started side by side never collide.
  const env: Record<string, string | undefined> = { ...process.env, LOG_LEVEL: 'info', INDEXING_PORT: '0', CRAWLER_PORT: '0', ...options.env }
  for (const [name, value] of Object.entries(env)) if (value === '') delete env[name]
  const child = spawn(command, args, { cwd: options.cwd ?? root, env, stdio: ['ignore', 'pipe', 'pipe'] })
  const lines: string[] = []
  const out: string[] = []
  const waiting: { match: (line: string) => boolean; resolve: (line: string) => void }[] = []
  const split = (target: string[], onLine?: (line: string) => void) => {
    let rest = ''
    return (chunk: Buffer) => {
      rest += chunk.toString('utf8')
      const parts = rest.split('\n')
      rest = parts.pop()!
      for (const line of parts) {
        target.push(line)
        onLine?.(line)
      }
    }
  }
  child.stdout!.on('data', split(out))
  child.stderr!.on('data', split(lines, (line) => {
    for (const w of [...waiting]) {
      if (w.match(line)) {
        waiting.splice(waiting.indexOf(w), 1)
        w.resolve(line)
      }
    }
  }))
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('close', (code, signal) => resolve({ code, signal }))
  })
  const line = (match: (line: string) => boolean) => {
    const found = lines.find(match)
    if (found !== undefined) return Promise.resolve(found)
    return new Promise<string>((resolve, reject) => {
      waiting.push({ match, resolve })
      void closed.then(() => reject(new Error(`the process ended without the line; stderr:\n${lines.join('\n')}`)))
    })
  }
  return { child, lines, out, line, closed }
}

/** The service's composition root under node, as the container runs it. */
export function spawnMain(mode: string[], env: Record<string, string>, cwd?: string): Spawned {
  return spawnProcess(process.execPath, ['--import', tsxLoader, `${root}server/main.ts`, ...mode], { env, cwd })
}

/** A JSON log line parsed, or null when the line is not JSON. */
export function entry(line: string): Record<string, any> | null {
  try {
    const parsed = JSON.parse(line)
    return parsed !== null && typeof parsed === 'object' ? parsed : null
  } catch {
    return null
  }
}

export const message = (text: string | RegExp) => (line: string) => {
  const parsed = entry(line)
  return parsed !== null && (typeof text === 'string' ? parsed.message === text : text.test(String(parsed.message)))
}

/** A process of the service, killed with the test whatever happens (a timeout skips teardowns). */
export function started(t: Test, spawned: Spawned): Spawned {
  process.once('exit', () => spawned.child.kill('SIGKILL'))
  t.teardown(async () => {
    if (spawned.child.exitCode === null && spawned.child.signalCode === null) spawned.child.kill('SIGKILL')
    await spawned.closed
  })
  return spawned
}
