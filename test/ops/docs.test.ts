// The documentation stands alone in the repository: every relative link resolves to
// a file of the repository, and none leads outside it.
import t from 'tap'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { root } from './process.ts'

const pages = ['README.md', ...readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]

t.test('the README links the documentation', async (t) => {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8')
  for (const page of ['docs/automations.md', 'docs/architecture.md', 'docs/operations.md']) {
    t.ok(readme.includes(`](${page})`), `README links ${page}`)
    t.ok(existsSync(path.join(root, page)), `${page} exists`)
  }
})

t.test('no page names a path outside the repository', async (t) => {
  for (const page of pages) {
    const text = readFileSync(path.join(root, page), 'utf8')
    const dir = path.dirname(path.join(root, page))
    for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue
      const resolved = path.resolve(dir, target!)
      t.ok(resolved.startsWith(root), `${page} links ${target} inside the repository`)
      t.ok(existsSync(resolved), `${page} links ${target}, which exists`)
    }
    t.notMatch(text, /(^|[\s`(])\.\.\/(?!\.\.)[\w.-]+\//m, `${page} names no path above the repository`)
  }
})

t.test('the limits table of the operations page lists every limit of db/limits.json with its value and unit', async (t) => {
  const limits = JSON.parse(readFileSync(path.join(root, 'db/limits.json'), 'utf8')) as Record<string, { value: number; unit: string }>
  const operations = readFileSync(path.join(root, 'docs/operations.md'), 'utf8')
  const rows = new Map<string, string[]>()
  for (const [, name, rest] of operations.matchAll(/^\| `([a-z][\w.]*)` \|(.*)\|$/gm)) rows.set(name!, rest!.split('|').map((c) => c.trim()))
  t.ok(Object.keys(limits).length > 0, 'db/limits.json names limits')
  for (const [name, limit] of Object.entries(limits)) {
    const row = rows.get(name)
    if (!row) {
      t.fail(`docs/operations.md lists ${name}`)
      continue
    }
    t.match(row[0], new RegExp(`^${limit.value}( \\(.*\\))?$`), `${name} is documented as ${limit.value}`)
    t.equal(row[1], limit.unit, `${name} is documented in ${limit.unit}`)
  }
  const documented = [...rows.keys()].filter((name) => /^(upload|document|folder|run|page|rate)\./.test(name))
  t.same(documented.filter((name) => !(name in limits)), [], 'the table names no limit that db/limits.json lacks')
})
