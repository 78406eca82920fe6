// The import direction of the layers: server/core is the shared layer and imports
// nothing else of the service; jobs/ and the internal services import server/core
// only; server/main.ts is the one composition root that may start the worker beside
// the API. A file that reaches against the direction fails here.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../../', import.meta.url))

/** Every relative import of a TypeScript source, resolved to a repository path. */
function importsOf(file: string, source: string): string[] {
  const found: string[] = []
  const pattern = /(?:from\s+|import\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)['"]/g
  for (const match of source.matchAll(pattern)) {
    found.push(path.posix.normalize(path.posix.join(path.posix.dirname(file), match[1]!)))
  }
  return found
}

const inside = (file: string, folder: string) => file.startsWith(folder + '/')

/** The rule a file breaks by importing target, or null when the import is allowed. */
export function violation(file: string, target: string): string | null {
  if (inside(target, 'test') || inside(target, 'bench')) return 'the service never imports its tests or benchmarks'
  if (inside(file, 'server/core')) {
    return inside(target, 'server/core') ? null : 'server/core imports nothing outside server/core'
  }
  if (inside(file, 'jobs')) {
    return inside(target, 'jobs') || inside(target, 'server/core') ? null : 'jobs/ imports server/core only'
  }
  if (inside(file, 'server/services')) {
    const own = file.split('/').slice(0, 3).join('/')
    return inside(target, own) || inside(target, 'server/core') ? null : 'an internal service imports itself and server/core only'
  }
  if (inside(file, 'server')) {
    if (inside(target, 'jobs') && file !== 'server/main.ts') return 'only server/main.ts starts the worker'
    if (inside(target, 'server/services') && file !== 'server/main.ts') return 'only server/main.ts starts the internal services'
  }
  return null
}

function sources(folder: string): string[] {
  const out: string[] = []
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, entry.name)
      if (entry.isDirectory()) walk(rel)
      else if (entry.name.endsWith('.ts')) out.push(rel)
    }
  }
  if (fs.existsSync(path.join(root, folder))) walk(folder)
  return out
}

t.test('the rule itself refuses imports against the direction', async (t) => {
  t.ok(violation('server/core/engine/engine.ts', 'server/routes/route.ts'), 'core importing the HTTP side')
  t.ok(violation('server/core/config.ts', 'jobs/worker.ts'), 'core importing jobs')
  t.ok(violation('jobs/tasks/run-automation.ts', 'server/transport/errors.ts'), 'jobs importing the HTTP side')
  t.ok(violation('server/mcp/tools.ts', 'jobs/worker.ts'), 'an HTTP module importing jobs')
  t.ok(violation('server/services/crawler/main.ts', 'server/routes/route.ts'), 'a service importing the HTTP side')
  t.ok(violation('server/services/crawler/main.ts', 'server/services/indexing/app.ts'), 'a service importing another')
  t.ok(violation('server/routes/files.ts', 'test/lib/db.ts'), 'the service importing tests')
  t.equal(violation('server/main.ts', 'jobs/worker.ts'), null, 'the composition root starts the worker')
  t.equal(violation('jobs/worker.ts', 'server/core/log.ts'), null, 'jobs import the shared layer')
  t.equal(violation('server/routes/files.ts', 'server/core/storage/object-store.ts'), null, 'HTTP imports the shared layer')
})

t.test('no source file imports against the direction', async (t) => {
  const files = [...sources('server'), ...sources('jobs')]
  t.ok(files.length > 20, 'the sources were found')
  const broken: string[] = []
  for (const file of files) {
    for (const target of importsOf(file, fs.readFileSync(path.join(root, file), 'utf8'))) {
      const rule = violation(file, target)
      if (rule) broken.push(`${file} imports ${target}: ${rule}`)
    }
  }
  t.same(broken, [], 'every import follows the layers')
})
