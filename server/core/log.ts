// Structured logs on stderr, one JSON object per line. Every process writes through
// it: requests, the job worker's own lines and Node's process warnings included.
export type Level = 'debug' | 'info' | 'warn' | 'error' | 'silent'
const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void
  info(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
}

export function createLogger(level: Level): Logger {
  const write = (at: Exclude<Level, 'silent'>) => (message: string, fields: Record<string, unknown> = {}) => {
    if (order[at] < order[level]) return
    const entry: Record<string, unknown> = { level: at, time: new Date().toISOString(), message }
    for (const [key, value] of Object.entries(fields)) {
      entry[key] = value instanceof Error ? { message: value.message, stack: value.stack } : value
    }
    let line: string
    try {
      line = JSON.stringify(entry)
    } catch {
      // A field that cannot be serialized (a cycle, a BigInt) must not cost the line.
      line = JSON.stringify({ level: at, time: entry.time, message, fields: 'unserializable' })
    }
    process.stderr.write(line + '\n')
  }
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') }
}
