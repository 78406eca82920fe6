// The knowledge search (docs/knowledge.md "Search"): ranking over a small labelled
// corpus, and access decided in SQL: a passage of a document the caller cannot read
// never comes back.
import t from 'tap'
import { uploadFile } from '../lib/files.ts'
import { world, type Client } from '../lib/world.ts'
import { eventually } from '../lib/wait.ts'
import { refused } from '../lib/assert.ts'
import { asCaller } from '../lib/caller.ts'
import { requestPool } from '../../server/core/db/connection.ts'

interface Result { score: number; content: string; page: number | null; heading: string | null; source: { type: string; id: string; name: string; projectId?: string } }

const search = async (caller: Client, body: Record<string, unknown>) => {
  const res = await caller.post('/api/v1/knowledge/search', body)
  if (res.status !== 200) throw new Error(`search answered ${res.status}: ${res.text}`)
  return res.body.results as Result[]
}

const entries = {
  vacation: { title: 'Vacation policy', content: 'Employees receive thirty days of paid vacation per year. Vacation requests go through the HR portal.' },
  expenses: { title: 'Expense reports', content: 'Submit expense reports with receipts within a month. Meals are reimbursed up to fifty euros.' },
}
const documents = {
  security: { name: 'Security handbook', content: '# Accounts\n\nPasswords must be rotated every ninety days. Enable two-factor authentication on all accounts.' },
  office: { name: 'Office guide', content: 'The office kitchen is cleaned on Fridays. Parking spaces are assigned by the facilities team.' },
}

t.test('the knowledge search', async (t) => {
  const { service, seeded, olive, eddie, max, gina, alpha, beta } = await world(t, { worker: true, store: true })
  const ids: Record<string, string> = {}
  for (const [key, body] of Object.entries(entries)) ids[key] = (await eddie.post('/api/v1/knowledge-entries', body)).body.id
  for (const [key, body] of Object.entries(documents)) ids[key] = (await eddie.post('/api/v1/documents', body)).body.id
  // A file of Beta (owners and admins only) and one of Alpha (max reads it).
  const betaFile = await uploadFile(olive, beta, 'roadmap.md', '# Roadmap\n\nLaunch the zeppelin fleet in March.', { skipRagIndexing: false })
  const alphaFile = await uploadFile(olive, alpha, 'notes.md', '# Notes\n\nThe zeppelin museum visit is on Tuesday.', { skipRagIndexing: false })
  const skipped = await uploadFile(olive, alpha, 'skipped.md', 'A zeppelin file nobody indexed.')
  ids.beta = betaFile.body.file.id
  ids.alpha = alphaFile.body.file.id
  // Everything indexed.
  await eventually(async () => Promise.all([
    ...['vacation', 'expenses'].map((k) => olive.get(`/api/v1/knowledge-entries/${ids[k]}`).then((r) => r.body.indexing.status)),
    ...['security', 'office'].map((k) => olive.get(`/api/v1/documents/${ids[k]}`).then((r) => r.body.indexing.status)),
    olive.get(`/api/v1/projects/${beta}/files/${ids.beta}`).then((r) => r.body.file.indexing.status),
    olive.get(`/api/v1/projects/${alpha}/files/${ids.alpha}`).then((r) => r.body.file.indexing.status),
  ]), (statuses) => statuses.every((s) => s === 'indexed'))

  t.test('each query ranks its labelled source first', async (t) => {
    const labelled: [string, string][] = [
      ['paid vacation days', 'vacation'],
      ['expense receipts reimbursed', 'expenses'],
      ['two-factor authentication passwords', 'security'],
      ['parking spaces', 'office'],
      ['"kitchen is cleaned"', 'office'],
      ['vacaton', 'vacation'],
    ]
    for (const [query, expected] of labelled) {
      const results = await search(max, { query })
      t.equal(results[0]?.source.id, ids[expected], `"${query}" ranks ${expected} first (${results.map((r) => r.source.name).join(', ')})`)
    }
  })

  t.test('results carry their passage, score and source', async (t) => {
    const [entry] = await search(max, { query: 'paid vacation days', topK: 1 })
    t.same(entry!.source, { type: 'knowledge_entry', id: ids.vacation, name: 'Vacation policy' })
    t.match(entry!.content, /thirty days of paid vacation/)
    t.equal(entry!.score, 1, 'ranked first by every signal scores 1')
    const [document] = await search(max, { query: 'two-factor authentication', topK: 1 })
    t.same(document!.source, { type: 'document', id: ids.security, name: 'Security handbook' })
    const [file] = await search(olive, { query: 'zeppelin fleet', topK: 1 })
    t.same(file!.source, { type: 'file', id: ids.beta, name: 'roadmap.md', projectId: beta })
    t.equal(file!.heading, 'Roadmap', 'the heading the passage sits under')
    t.match(file!.content, /zeppelin fleet/)
  })

  t.test('topK bounds the results, the threshold drops weaker ones, scores descend', async (t) => {
    const all = await search(olive, { query: 'zeppelin', topK: 50 })
    t.ok(all.length >= 2)
    for (let n = 1; n < all.length; n++) t.ok(all[n - 1]!.score >= all[n]!.score, 'scores descend')
    t.equal((await search(olive, { query: 'zeppelin', topK: 1 })).length, 1)
    const strong = await search(olive, { query: 'zeppelin', similarityThreshold: all[0]!.score })
    t.ok(strong.length >= 1 && strong.every((r) => r.score >= all[0]!.score), 'only scores at the threshold or above')
    t.ok(strong.length < all.length, 'weaker ones are dropped')
    t.same(await search(olive, { query: 'quantum chromodynamics' }), [], 'nothing matches: no results')
  })

  t.test('a member never gets a passage of a project they cannot see; the owner does', async (t) => {
    const asMax = await search(max, { query: 'zeppelin', topK: 50 })
    t.notOk(asMax.some((r) => r.source.id === ids.beta), 'no passage of the Beta file for max')
    t.notOk(asMax.some((r) => /fleet/.test(r.content)), 'nor its text')
    t.ok(asMax.some((r) => r.source.id === ids.alpha), 'the Alpha file, which max reads, is found')
    const asOlive = await search(olive, { query: 'zeppelin', topK: 50 })
    t.ok(asOlive.some((r) => r.source.id === ids.beta), 'olive finds the Beta file')
    t.notOk(asOlive.some((r) => r.source.id === skipped.body.file.id), 'a file opted out of indexing is never found')
  })

  t.test('the index store itself keeps the passage out: app.search_chunks on the request role, with every file asked', async (t) => {
    const requests = requestPool(service.db.url, 1)
    t.teardown(() => requests.end())
    const acme = seeded.organizations.acme!.id
    const chunksOf = (email: string, role: string) => asCaller(requests, { userId: seeded.users[email]!.id, orgId: acme, role },
      (sql) => sql<{ document_id: string | null }[]>`select document_id from app.search_chunks('zeppelin', null, 50, null, null, 'english', ${acme})`)
    t.notOk((await chunksOf('max@acme.test', 'member')).some((c) => c.document_id === ids.beta), 'max: no Beta passage')
    t.ok((await chunksOf('olive@acme.test', 'owner')).some((c) => c.document_id === ids.beta), 'olive: the Beta passage')
    const [visible] = await asCaller(requests, { userId: seeded.users['max@acme.test']!.id, orgId: acme, role: 'member' },
      (sql) => sql`select count(*)::int as n from app.index_chunks where document_id = ${ids.beta!}`)
    t.equal(visible!.n, 0, 'nor is it readable from the table')
  })

  t.test('another organization never sees acme\'s passages', async (t) => {
    for (const query of ['zeppelin', 'paid vacation', 'two-factor authentication', 'parking']) {
      t.same(await search(gina, { query, topK: 50 }), [], `gina: "${query}"`)
    }
  })

  t.test('projectId narrows project files to that project, which must be visible', async (t) => {
    const inAlpha = await search(olive, { query: 'zeppelin', topK: 50, projectId: alpha })
    t.ok(inAlpha.some((r) => r.source.id === ids.alpha))
    t.notOk(inAlpha.some((r) => r.source.id === ids.beta), 'no file of another project')
    const withEntries = await search(olive, { query: 'paid vacation', projectId: alpha })
    t.equal(withEntries[0]?.source.id, ids.vacation, 'entries and hub documents are still searched')
    refused(t, await max.post('/api/v1/knowledge/search', { query: 'zeppelin', projectId: beta }), 404, 'NOT_FOUND', 'a project max cannot see')
  })

  t.test('a deleted document\'s passages are gone at once', async (t) => {
    const doomed = (await eddie.post('/api/v1/documents', { name: 'Doomed', content: 'Flamingo migration schedule.' })).body
    await eventually(() => olive.get(`/api/v1/documents/${doomed.id}`), (r) => r.body.indexing.status === 'indexed')
    t.equal((await search(max, { query: 'flamingo' }))[0]?.source.id, doomed.id)
    await eddie.del(`/api/v1/documents/${doomed.id}`)
    t.same(await search(max, { query: 'flamingo' }), [])
  })

  t.test('the request is checked', async (t) => {
    refused(t, await max.post('/api/v1/knowledge/search', { query: '' }), 400, 'INVALID_BODY', 'an empty query')
    refused(t, await max.post('/api/v1/knowledge/search', { query: 'x'.repeat(2001) }), 400, 'INVALID_BODY', 'a query over 2000')
    refused(t, await max.post('/api/v1/knowledge/search', { query: 'x', topK: 51 }), 400, 'INVALID_BODY', 'topK over 50')
    refused(t, await max.post('/api/v1/knowledge/search', { query: 'x', topK: 0 }), 400, 'INVALID_BODY', 'topK 0')
    refused(t, await max.post('/api/v1/knowledge/search', { query: 'x', similarityThreshold: 1.5 }), 400, 'INVALID_BODY', 'a threshold over 1')
    refused(t, await max.post('/api/v1/knowledge/search', { query: 'x', language: 'klingon' }), 400, 'INVALID_BODY', 'an unknown language')
    t.equal((await max.post('/api/v1/knowledge/search', { query: 'vacation', language: 'simple' })).status, 200, 'another configuration')
  })
})
