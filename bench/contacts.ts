// The contact bulk import (docs/records.md): POST /api/v1/contacts/bulk of 10,000 rows
// as an Editor's API key, timed from the request's first byte to its answer's last,
// beside a floor that sends the server's statement (app.handle with contacts_bulk and
// the same rows) through the request pool with no HTTP. Three imports of the same
// people, one after the other:
//
// - create: every row's externalId is new, so every row inserts a contact and its
//   contact.created event;
// - repeat: the same rows again, each answered `updated`; nothing changed, so nothing
//   is written (a sync's steady state);
// - change: the same rows with a new company and one attribute changed, so every
//   row writes its contact and a contact.updated event.
//
// Each round uses new externalIds, so every create round creates; HTTP and the floor
// alternate round by round, so a slower stretch of the host falls on both.
import { requestPool } from '../server/core/db/connection.ts'
import { loadConfig } from '../server/core/config.ts'
import { rateBudgets } from '../server/auth/rate-budgets.ts'
import { hashApiKey } from '../server/auth/credentials.ts'
import { callOperation } from '../server/transport/operation.ts'
import { memberKey } from './measure.ts'

const ROWS = 10_000
const ROUNDS = Number(process.env.BENCH_CONTACTS_ROUNDS ?? 3)

export type ImportKind = 'create' | 'repeat' | 'change'

export interface ImportFigures {
  kind: ImportKind
  side: 'HTTP' | 'floor'
  round: number
  /** Milliseconds for the whole import, rounded to 1. */
  ms: number
  rowsPerSecond: number
  /** The body's size in bytes. */
  bytes: number
  /** The answer's counts, which say the import did what its kind means. */
  created: number
  updated: number
  failed: number
}

export interface ContactFigures { rows: number; imports: ImportFigures[] }

const companies = ['Acme', 'Globex', 'Initech', 'Umbrella', 'Hooli', 'Vandelay Industries', 'Stark Industries', 'Wayne Enterprises']
const givenNames = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Frances', 'Niklaus', 'Radia', 'Leslie']
const familyNames = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson', 'Allen', 'Wirth', 'Perlman', 'Lamport']
const plans = ['free', 'team', 'business', 'enterprise']

/**
 * The rows of one import: a CRM export's people, each with an externalId, an email, a
 * name, most with a company, some with a phone, and a few attributes of mixed types.
 */
function contactRows(prefix: string, kind: ImportKind): Record<string, unknown>[] {
  return Array.from({ length: ROWS }, (_, i) => {
    const given = givenNames[i % givenNames.length]!
    const family = familyNames[Math.floor(i / givenNames.length) % familyNames.length]!
    const row: Record<string, unknown> = {
      externalId: `${prefix}-${i}`,
      email: `${given.toLowerCase()}.${family.toLowerCase()}.${i}@example.test`,
      name: `${given} ${family}`,
      attributes: { plan: plans[i % plans.length], seats: 1 + (i % 50), newsletter: i % 3 === 0,
                    tags: i % 5 === 0 ? ['vip', 'beta'] : ['lead'], source: 'crm' },
    }
    if (i % 10 !== 0) row.company = companies[i % companies.length]
    if (i % 4 === 0) row.phone = `+1 555 ${String(i).padStart(7, '0')}`
    if (kind === 'change') {
      row.company = companies[(i + 1) % companies.length]
      row.attributes = { seats: 2 + (i % 50) }
    }
    return row
  })
}

type Answer = { created: number; updated: number; failed: number }

function figures(kind: ImportKind, side: ImportFigures['side'], round: number, ms: number, bytes: number, answer: Answer): ImportFigures {
  return { kind, side, round, ms: Math.round(ms), rowsPerSecond: Math.round(ROWS / (ms / 1000)), bytes,
           created: answer.created, updated: answer.updated, failed: answer.failed }
}

export async function benchContacts(url: string, port: number, scale: number): Promise<ContactFigures> {
  const key = await memberKey(url, 'contacts-editor@bench.test', 'editor')
  const base = `http://127.0.0.1:${port}/api/v1/contacts/bulk`
  const sql = requestPool(url, loadConfig({ ...process.env, DATABASE_URL: url }).DATABASE_POOL_SIZE)
  const budgets = rateBudgets(scale)
  const auth = { keyHash: hashApiKey(key), orgSlug: null, source: '127.0.0.1', buckets: [budgets.general],
                 authFailures: budgets.authFailures, read: false, rateScale: budgets.scale }

  // Each resolves with the answer's text once its last byte is in; it is read after
  // the clock stops, as the client's own work.
  const overHttp = async (body: string): Promise<string> => {
    const res = await fetch(base, { method: 'POST', body,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } })
    const text = await res.text()
    if (res.status !== 200) throw new Error(`bulk import: ${res.status} ${text.slice(0, 500)}`)
    return text
  }
  const floor = async (rows: Record<string, unknown>[]): Promise<string> => {
    const outcome = await callOperation(sql, auth, 'contacts_bulk', { contacts: rows })
    if (outcome.error) throw new Error(`bulk import floor: ${outcome.error.code} ${outcome.error.message}`)
    return outcome.body!
  }

  const imports: ImportFigures[] = []
  try {
    // Warm-up: connections opened, plans and caches filled on both sides, with a
    // full-size import of each kind, as a running service has seen them.
    for (const kind of ['create', 'repeat', 'change'] as const) {
      await overHttp(JSON.stringify({ contacts: contactRows('warm-http', kind) }))
      await floor(contactRows('warm-floor', kind))
    }
    for (let round = 1; round <= ROUNDS; round++) {
      for (const side of ['HTTP', 'floor'] as const) {
        const prefix = `${side === 'HTTP' ? 'http' : 'floor'}-${round}`
        for (const kind of ['create', 'repeat', 'change'] as const) {
          const rows = contactRows(prefix, kind)
          // The body is made before the clock starts, as a client has it ready.
          const body = JSON.stringify({ contacts: rows })
          const began = performance.now()
          const text = side === 'HTTP' ? await overHttp(body) : await floor(rows)
          const ms = performance.now() - began
          imports.push(figures(kind, side, round, ms, Buffer.byteLength(body), JSON.parse(text) as Answer))
        }
      }
    }
  } finally {
    await sql.end()
  }
  return { rows: ROWS, imports }
}
