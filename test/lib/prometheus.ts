// A reader of the Prometheus text exposition format (version 0.0.4): families with
// their HELP and TYPE, and samples with their labels, so tests assert on what a
// scraper would read rather than on loose text matches.

export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

export interface Family {
  name: string
  help: string
  type: string
  samples: Sample[]
}

export type Exposition = Map<string, Family>

// A histogram's or summary's samples carry suffixes of their family's name.
const SUFFIXES = ['_bucket', '_sum', '_count', '_created']

function familyOf(families: Exposition, sample: string): Family | undefined {
  const exact = families.get(sample)
  if (exact) return exact
  for (const suffix of SUFFIXES) {
    if (sample.endsWith(suffix)) {
      const family = families.get(sample.slice(0, -suffix.length))
      if (family && (family.type === 'histogram' || family.type === 'summary')) return family
    }
  }
  return undefined
}

/** Label values, with the format's escapes (\\, \", \n) undone. */
function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {}
  let at = 0
  while (at < text.length) {
    const eq = text.indexOf('=', at)
    if (eq === -1 || text[eq + 1] !== '"') throw new Error(`malformed labels in: ${line}`)
    const name = text.slice(at, eq).trim()
    if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(name)) throw new Error(`malformed label name "${name}" in: ${line}`)
    let value = ''
    let i = eq + 2
    for (; i < text.length && text[i] !== '"'; i++) {
      if (text[i] === '\\') {
        const next = text[++i]
        value += next === 'n' ? '\n' : next
      } else {
        value += text[i]
      }
    }
    if (i >= text.length) throw new Error(`unterminated label value in: ${line}`)
    labels[name] = value
    at = i + 1
    if (text[at] === ',') at += 1
  }
  return labels
}

// Prometheus reads values as Go's ParseFloat does: NaN and Inf in any case (prom-client writes Nan).
function parseValue(text: string, line: string): number {
  const lower = text.toLowerCase()
  if (lower === '+inf' || lower === 'inf') return Infinity
  if (lower === '-inf') return -Infinity
  if (lower === 'nan') return NaN
  const value = Number(text)
  if (text === '' || Number.isNaN(value)) throw new Error(`malformed value in: ${line}`)
  return value
}

/** Parses an exposition; a line the format does not allow throws, naming it. */
export function parseExposition(text: string): Exposition {
  const families: Exposition = new Map()
  const declare = (name: string) => {
    let family = families.get(name)
    if (!family) {
      family = { name, help: '', type: 'untyped', samples: [] }
      families.set(name, family)
    }
    return family
  }
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) ?(.*)$/.exec(line)
    if (comment) {
      const family = declare(comment[2]!)
      if (comment[1] === 'HELP') family.help = comment[3]!
      else family.type = comment[3]!
      continue
    }
    if (line.startsWith('#')) continue
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \S+)?$/.exec(line)
    if (!sample) throw new Error(`malformed sample line: ${line}`)
    const name = sample[1]!
    const family = familyOf(families, name)
    if (!family) throw new Error(`a sample of no declared family: ${line}`)
    family.samples.push({ name, labels: sample[2] ? parseLabels(sample[2], line) : {}, value: parseValue(sample[3]!, line) })
  }
  return families
}

/** The samples of one family (or a histogram's suffixed series) whose labels include the given ones. */
export function samples(exposition: Exposition, name: string, labels: Record<string, string> = {}): Sample[] {
  const family = familyOf(exposition, name)
  if (!family) return []
  return family.samples.filter((sample) => sample.name === name
    && Object.entries(labels).every(([label, value]) => sample.labels[label] === value))
}

/** The value of the one sample matching, or undefined when none does; several matching throws. */
export function value(exposition: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples(exposition, name, labels)
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return found[0]?.value
}
