// Contacts (docs/records.md): create by natural key (a repeat updates), read, change,
// delete; the list by updatedAt then id, descending; the bulk import with per-row
// results, its 8 MiB body and its pace; the contact events starting event triggers;
// the contact.upsert action step in a live run; who may write; other organizations.
import t from 'tap'
import { world, type World } from '../lib/world.ts'
import { refused, header } from '../lib/assert.ts'
import { deploy, waitForRun } from '../lib/automations.ts'
import { eventually } from '../lib/wait.ts'
import { pinClock, unpinClock } from '../lib/db.ts'
import { rawExchange } from '../lib/raw.ts'
import { limit } from '../../server/core/limits.ts'
import { ownerPool } from '../../server/core/db/connection.ts'

const BASE = '/api/v1/contacts'
const BULK = `${BASE}/bulk`
const BULK_MAX_BYTES = limit('contact.bulkMaxBytes')

type Contact = { id: string; externalId: string | null; email: string | null; name: string | null; updatedAt: number; createdAt: number; [k: string]: unknown }

/** The events of a name in the outbox, one per event whether raised alone or in an import's batch, in order. */
const outbox = async (w: World, name: string) => w.service.db.owner<{ payload: any; source_run_id: string | null; actor_user_id: string | null }[]>`
  select p.payload, e.source_run_id, e.actor_user_id
    from app.events e cross join app.event_payloads(e) p
   where e.name = ${name} order by e.id, p.event_position`

/** Every contact of the list, page by page, with the pages' sizes. */
async function listAll(w: World, query = '', limitRows = 2) {
  const seen: Contact[] = []
  const sizes: number[] = []
  let cursor: string | null = null
  for (let i = 0; i < 100; i++) {
    const path: string = `${BASE}?limit=${limitRows}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
    const res = await w.max.get(path)
    if (res.status !== 200) throw new Error(`list failed: ${res.status} ${res.text}`)
    seen.push(...res.body.page)
    sizes.push(res.body.page.length)
    if (res.body.isDone) {
      if (res.body.continueCursor !== '') throw new Error('the last page carries a cursor')
      return { seen, sizes }
    }
    cursor = res.body.continueCursor
  }
  throw new Error('the list never ended')
}

const newestChangeFirst = (a: Contact, b: Contact) =>
  b.updatedAt - a.updatedAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)

t.test('a contact is created, repeated by its externalId (an update), read, changed and deleted', async (t) => {
  const w = await world(t)
  const created = await w.eddie.post(BASE, { externalId: ' crm-1 ', email: ' Ada@Example.test ', name: 'Ada', attributes: { tier: 'gold' } })
  t.equal(created.status, 201, 'an editor creates')
  t.equal(created.body.created, true)
  const ada = created.body.contact as Contact
  t.equal(header(created, 'location'), `${BASE}/${ada.id}`)
  t.match(ada, { externalId: 'crm-1', email: 'Ada@Example.test', name: 'Ada', phone: null, company: null, attributes: { tier: 'gold' } })
  t.equal(ada.createdAt, ada.updatedAt)

  const repeat = await w.eddie.post(BASE, { externalId: 'crm-1', phone: '+49 30 1234', attributes: { since: 2020 } })
  t.equal(repeat.status, 200, 'a repeat of the natural key answers 200')
  t.equal(repeat.body.created, false)
  t.equal(header(repeat, 'location'), null, 'no Location when nothing was created')
  t.equal(repeat.body.contact.id, ada.id, 'the same contact')
  t.match(repeat.body.contact, { name: 'Ada', email: 'Ada@Example.test', phone: '+49 30 1234' }, 'omitted fields are kept')
  t.same(repeat.body.contact.attributes, { tier: 'gold', since: 2020 }, 'attributes are merged key by key')

  const same = await w.eddie.post(BASE, { externalId: 'crm-1', name: 'Ada' })
  t.equal(same.status, 200)
  t.equal(same.body.contact.updatedAt, repeat.body.contact.updatedAt, 'a repeat that changes nothing writes nothing')

  const read = await w.max.get(`${BASE}/${ada.id}`)
  t.equal(read.status, 200, 'a member reads')
  t.same(read.body, { contact: repeat.body.contact })

  const patched = await w.eddie.patch(`${BASE}/${ada.id}`, { company: 'Acme', phone: null, attributes: { fresh: true } })
  t.equal(patched.status, 200)
  t.match(patched.body.contact, { company: 'Acme', phone: null, name: 'Ada' })
  t.same(patched.body.contact.attributes, { fresh: true }, 'a change replaces the attributes whole')

  const nameless = await w.eddie.patch(`${BASE}/${ada.id}`, { email: null, name: null })
  t.match(refused(t, nameless, 400, 'INVALID_BODY').data.issues, [{ path: 'email', message: /email or a name/ }])

  const other = await w.eddie.post(BASE, { externalId: 'crm-2', name: 'Bob' })
  const taken = await w.eddie.patch(`${BASE}/${other.body.contact.id}`, { externalId: 'crm-1' })
  t.same(refused(t, taken, 409, 'CONTACT_DUPLICATE_EXTERNAL_ID').data, { externalId: 'crm-1', contactId: ada.id })

  const keyless1 = await w.eddie.post(BASE, { email: 'same@example.test' })
  const keyless2 = await w.eddie.post(BASE, { email: 'same@example.test' })
  t.same([keyless1.status, keyless2.status], [201, 201], 'without an externalId every create creates')
  t.not(keyless1.body.contact.id, keyless2.body.contact.id)

  const gone = await w.eddie.del(`${BASE}/${ada.id}`)
  t.equal(gone.status, 204)
  refused(t, await w.eddie.get(`${BASE}/${ada.id}`), 404, 'CONTACT_NOT_FOUND')
  refused(t, await w.eddie.del(`${BASE}/${ada.id}`), 404, 'CONTACT_NOT_FOUND', 'deleting it again')
  const again = await w.eddie.post(BASE, { externalId: 'crm-1', name: 'Ada again' })
  t.equal(again.status, 201, 'its natural key is free again')
})

t.test('the fields of a contact are checked', async (t) => {
  const w = await world(t)
  const issues = async (body: unknown) => refused(t, await w.eddie.post(BASE, body), 400, 'INVALID_BODY').data.issues
  t.match(await issues({ email: 'not an email' }), [{ path: 'email' }])
  t.match(await issues({ name: '   ' }), [{ path: 'name' }])
  t.match(await issues({ name: 'x'.repeat(limit('contact.nameMaxUnits') + 1) }), [{ path: 'name' }])
  t.match(await issues({ name: 'Ada', attributes: [1] }), [{ path: 'attributes' }])
  t.match(await issues({ name: 'Ada', attributes: { pad: 'x'.repeat(limit('contact.attributesMaxBytes')) } }), [{ path: 'attributes' }])
  t.match(await issues({ name: 'Ada', title: 'Dr' }), [{ path: 'title', message: /unknown key/ }])
  t.match(await issues({ phone: '+1 555' }), [{ path: 'email', message: /email or a name/ }], 'a contact names someone')
  t.equal((await w.eddie.post(BASE, { name: 'x'.repeat(limit('contact.nameMaxUnits')) })).status, 201, 'a name at the limit')
  t.equal((await w.eddie.post(BASE, { email: 'a@b' })).status, 201, 'emails are checked loosely')
})

t.test('attributes keep every key a client names, constructor and prototype included', async (t) => {
  const w = await world(t)
  // Parsed, as a client's JSON is: an object literal cannot hold an own __proto__ key.
  const attributes = JSON.parse('{"constructor":"Bob the Builder","prototype":1,"toString":"x","__proto__":{"admin":true}}')
  const created = await w.eddie.post(BASE, { name: 'Bob', attributes })
  t.same(created.body.contact.attributes, attributes, 'a single create keeps them')
  const imported = await w.eddie.post(BULK, { contacts: [{ name: 'Bob', attributes }, { name: 'Bob', constructor: 'x' }] })
  t.same(imported.body.results.map((r: { status: string }) => r.status), ['created', 'error'])
  t.same((await w.max.get(`${BASE}/${imported.body.results[0].id}`)).body.contact.attributes, attributes, 'and so does an import')
  t.match(imported.body.results[1].error, { issues: [{ path: 'constructor', message: /unknown key/ }] },
    'a row\'s own key of that name is unknown, not left out')
})

t.test('the list: newest change first by updatedAt then id, paged by a cursor that carries both', async (t) => {
  const w = await world(t)
  const at = (second: number) => pinClock(w.service.db.owner, Date.UTC(2026, 0, 1, 0, 0, second))
  await at(1)
  const first = await w.eddie.post(BASE, { externalId: 'c-0', name: 'First' })
  await at(2)
  await w.eddie.post(BASE, { externalId: 'c-1', name: 'Second' })
  // Five in one import share one updatedAt: only the id orders them.
  await at(3)
  const bulk = await w.eddie.post(BULK, { contacts: [1, 2, 3, 4, 5].map((n) => ({ externalId: `b-${n}`, name: `Bulk ${n}` })) })
  t.equal(bulk.status, 200)
  await at(4)
  await w.eddie.post(BASE, { externalId: 'c-2', name: 'Third' })
  // The oldest changes last: it leads the list.
  await at(5)
  await w.eddie.patch(`${BASE}/${first.body.contact.id}`, { name: 'First, changed' })
  await unpinClock(w.service.db.owner)

  const { seen, sizes } = await listAll(w)
  t.equal(seen.length, 8, 'every contact once')
  t.equal(new Set(seen.map((c) => c.id)).size, 8, 'no contact twice across pages')
  t.same(sizes, [2, 2, 2, 2])
  t.equal(seen[0]!.name, 'First, changed', 'the last change first, whatever the creation order')
  t.same(seen.map((c) => c.id), [...seen].sort(newestChangeFirst).map((c) => c.id), 'updatedAt, then id, both descending')
  const tied = seen.filter((c) => c.externalId?.startsWith('b-'))
  t.equal(new Set(tied.map((c) => c.updatedAt)).size, 1, 'the import shares one updatedAt')
  t.same(tied.map((c) => c.id), tied.map((c) => c.id).sort().reverse(), 'ties go by id, descending, across page breaks')

  const byKey = await w.max.get(`${BASE}?externalId=b-3`)
  t.same(byKey.body.page.map((c: Contact) => c.name), ['Bulk 3'])
  await w.eddie.post(BASE, { email: 'Case@Example.test', name: 'Case' })
  const byEmail = await w.max.get(`${BASE}?email=case@EXAMPLE.test`)
  t.same(byEmail.body.page.map((c: Contact) => c.name), ['Case'], 'email matched ignoring case')

  const page = await w.max.get(`${BASE}?limit=2`)
  refused(t, await w.max.get(`${BASE}?limit=2&cursor=`), 400, 'INVALID_QUERY', 'the empty end cursor')
  refused(t, await w.max.get(`${BASE}?limit=2&email=x@y&cursor=${encodeURIComponent(page.body.continueCursor)}`), 400,
    'INVALID_CURSOR', 'a cursor of another filter')
  refused(t, await w.olive.get(`${BASE}?limit=2&cursor=${encodeURIComponent(page.body.continueCursor)}`), 400,
    'INVALID_CURSOR', 'a cursor of another caller')
  const clamped = await w.max.get(`${BASE}?limit=100000`)
  t.equal(clamped.status, 200, 'a limit above the ceiling is clamped')
})

t.test('members read; editors and above write; another organization sees none of it', async (t) => {
  const w = await world(t)
  const id = (await w.olive.post(BASE, { externalId: 'crm-9', name: 'Owned' })).body.contact.id
  t.equal((await w.dev.post(BASE, { name: 'By a developer' })).status, 201)
  t.equal((await w.max.get(BASE)).status, 200)
  refused(t, await w.max.post(BASE, { name: 'No' }), 403, 'ROLE_FORBIDDEN', 'a member creates')
  refused(t, await w.max.patch(`${BASE}/${id}`, { name: 'No' }), 403, 'ROLE_FORBIDDEN', 'a member changes')
  refused(t, await w.max.del(`${BASE}/${id}`), 403, 'ROLE_FORBIDDEN', 'a member deletes')
  refused(t, await w.max.post(BULK, { contacts: [{ name: 'No' }] }), 403, 'ROLE_FORBIDDEN', 'a member imports')
  t.equal((await w.olive.get(`${BASE}/${id}`)).body.contact.name, 'Owned', 'nothing changed')

  refused(t, await w.gina.get(`${BASE}/${id}`), 404, 'CONTACT_NOT_FOUND', 'another organization reads')
  refused(t, await w.gina.patch(`${BASE}/${id}`, { name: 'Mine' }), 404, 'CONTACT_NOT_FOUND', 'another organization changes')
  refused(t, await w.gina.del(`${BASE}/${id}`), 404, 'CONTACT_NOT_FOUND', 'another organization deletes')
  t.same((await w.gina.get(BASE)).body.page, [], 'another organization lists none')
  const theirs = await w.gina.post(BASE, { externalId: 'crm-9', name: 'Theirs' })
  t.equal(theirs.status, 201, 'natural keys are per organization')
  t.equal((await w.olive.get(`${BASE}/${id}`)).body.contact.name, 'Owned')
})

t.test('bulk: one transaction, each row answered, the valid rows land', async (t) => {
  const w = await world(t)
  const existing = (await w.eddie.post(BASE, { externalId: 'crm-1', email: 'old@example.test', name: 'Old' })).body.contact
  const unchanged = (await w.eddie.post(BASE, { externalId: 'crm-2', name: 'Same' })).body.contact
  const res = await w.eddie.post(BULK, { contacts: [
    { externalId: 'new-1', email: 'new1@example.test', name: 'New 1' },
    { email: 'keyless@example.test' },
    { externalId: 'bad-1', email: 'no email' },
    { externalId: 'new-1', name: 'Repeats row 0' },
    { externalId: 'crm-1', name: 'Renamed', attributes: { via: 'import' } },
    { externalId: 'nobody', phone: '+1 555' },
    { name: 'Extra', title: 'Dr' },
    { externalId: 'crm-2', name: 'Same' },
  ] })
  t.equal(res.status, 200, 'an import answers 200')
  t.equal(header(res, 'location'), null, 'with no Location')
  const results = res.body.results
  t.same(results.map((r: { index: number }) => r.index), [0, 1, 2, 3, 4, 5, 6, 7])
  t.same(results.map((r: { status: string }) => r.status), ['created', 'created', 'error', 'error', 'updated', 'error', 'error', 'updated'])
  t.same([res.body.created, res.body.updated, res.body.failed], [2, 2, 4])
  t.match(results[2].error, { code: 'INVALID_BODY', issues: [{ path: 'email' }] })
  t.match(results[3].error, { code: 'INVALID_BODY', issues: [{ path: 'externalId', message: /contacts\.0/ }] })
  t.match(results[5].error, { issues: [{ path: 'email', message: /email or a name/ }] })
  t.match(results[6].error, { issues: [{ path: 'title', message: /unknown key/ }] })
  t.equal(results[4].id, existing.id, 'the natural key names the existing contact')
  t.equal(results[7].id, unchanged.id)

  const created = (await w.max.get(`${BASE}/${results[0].id}`)).body.contact
  t.match(created, { externalId: 'new-1', name: 'New 1', email: 'new1@example.test' }, 'the first row of a key is applied')
  const keyless = (await w.max.get(`${BASE}/${results[1].id}`)).body.contact
  t.match(keyless, { externalId: null, email: 'keyless@example.test' })
  const renamed = (await w.max.get(`${BASE}/${existing.id}`)).body.contact
  t.match(renamed, { name: 'Renamed', email: 'old@example.test', attributes: { via: 'import' } }, 'an update keeps what the row omits')
  t.equal((await w.max.get(`${BASE}?externalId=bad-1`)).body.page.length, 0, 'an invalid row writes nothing')
  t.equal((await w.max.get(`${BASE}/${unchanged.id}`)).body.contact.updatedAt, unchanged.updatedAt, 'an unchanged row writes nothing')

  t.strictSame((await outbox(w, 'contact.created')).slice(2).map((e) => e.payload), [{ contact: created }, { contact: keyless }],
    'each created contact raised contact.created, holding the contact as GET shows it')
  const updates = await outbox(w, 'contact.updated')
  t.equal(updates.length, 1, 'only the changed contact raised contact.updated')
  t.strictSame(updates[0]!.payload, { contact: renamed, changes: ['name', 'attributes'] }, 'holding the contact as GET shows it and what changed')

  refused(t, await w.eddie.post(BULK, { contacts: Array.from({ length: limit('contact.bulkMaxRows') + 1 }, () => ({ name: 'x' })) }),
    400, 'INVALID_BODY', 'more rows than an import takes')
  refused(t, await w.eddie.post(BULK, { contacts: [1] }), 400, 'INVALID_BODY', 'a row that is not an object')
  const empty = await w.eddie.post(BULK, { contacts: [] })
  t.same(empty.body, { results: [], created: 0, updated: 0, failed: 0 })
})

t.test('a natural key is its trimmed NFC text, whether it comes one at a time or by import', async (t) => {
  const w = await world(t)
  const composed = 'caf\u00e9-1' // é as one code point
  const decomposed = 'cafe\u0301-1' // e and a combining acute accent
  const imported = await w.eddie.post(BULK, { contacts: [{ externalId: ` ${decomposed}\u00a0`, name: 'Imported' }, { externalId: 'plain-1', name: 'Plain' }] })
  t.same(imported.body.results.map((r: { status: string }) => r.status), ['created', 'created'])
  const [id, plain] = imported.body.results.map((r: { id: string }) => r.id)
  t.equal((await w.max.get(`${BASE}/${id}`)).body.contact.externalId, composed, 'stored trimmed and composed')
  const single = await w.eddie.post(BASE, { externalId: composed, company: 'Acme' })
  t.same([single.status, single.body.contact.id], [200, id], 'a create naming the composed key updates the imported contact')
  const again = await w.eddie.post(BULK, { contacts: [{ externalId: decomposed, phone: '+1 555' }, { externalId: ' plain-1 ', company: 'Acme' }] })
  t.same(again.body.results.map((r: { status: string; id: string }) => [r.status, r.id]), [['updated', id], ['updated', plain]],
    'an import naming either form, or the ASCII key with white space, updates the same contacts')
  t.same((await w.max.get(`${BASE}?externalId=${encodeURIComponent(decomposed)}`)).body.page.map((c: Contact) => c.id), [id])
})

t.test('bulk: a row repeating an existing contact\'s externalId is refused, and the change raises one event', async (t) => {
  const w = await world(t)
  const existing = (await w.eddie.post(BASE, { externalId: 'crm-1', name: 'Old' })).body.contact
  const res = await w.eddie.post(BULK, { contacts: [{ externalId: 'crm-1', name: 'New' }, { externalId: 'crm-1', name: 'Again' }] })
  t.same(res.body.results.map((r: { status: string }) => r.status), ['updated', 'error'])
  t.equal((await w.max.get(`${BASE}/${existing.id}`)).body.contact.name, 'New', 'the first row is applied')
  const updates = await outbox(w, 'contact.updated')
  t.equal(updates.length, 1, 'one contact.updated for the one change')
})

t.test('bulk: imports of the same contacts at once take turns, and neither loses the other\'s changes', async (t) => {
  const w = await world(t)
  const keys = Array.from({ length: 300 }, (_, i) => `crm-${i}`)
  const seeded = await w.eddie.post(BULK, { contacts: keys.map((externalId) => ({ externalId, name: externalId })) })
  t.equal(seeded.body.created, keys.length)
  for (let round = 0; round < 3; round++) {
    // Opposite orders, each changing a field the other leaves alone: were the rows
    // locked as they come, the two would deadlock; were a row read before the other
    // import's change committed, that change would be written over.
    // Both are held at the first contact in key order until both have begun, so they
    // are in flight together whatever the machine's pace.
    const holder = await w.service.db.owner.reserve()
    await holder`begin`
    await holder`select 1 from app.contacts where external_id = 'crm-0' for update`
    const imports = Promise.all([
      w.eddie.post(BULK, { contacts: keys.map((externalId) => ({ externalId, company: `Company ${round}` })) }),
      w.eddie.post(BULK, { contacts: [...keys].reverse().map((externalId) => ({ externalId, phone: `+1 555 ${round}` })) }),
    ])
    await eventually(() => w.service.db.owner<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
    (rows) => rows[0]!.n >= 2)
    await holder`commit`
    holder.release()
    const [companies, phones] = await imports
    t.same([companies.status, companies.body.updated, phones.status, phones.body.updated], [200, keys.length, 200, keys.length],
      `round ${round}: both imports land whole`)
    const [mixed] = await w.service.db.owner<{ n: number }[]>`
      select count(*)::int as n from app.contacts
       where external_id like 'crm-%' and (company is distinct from ${`Company ${round}`} or phone is distinct from ${`+1 555 ${round}`})`
    t.equal(mixed!.n, 0, `round ${round}: every contact holds both changes`)
  }
  t.equal((await outbox(w, 'contact.updated')).length, 6 * keys.length, 'each change raised its event')
})

t.test('bulk: imports creating the same new contacts at once take turns; every row is created once', async (t) => {
  const w = await world(t)
  for (let round = 0; round < 6; round++) {
    const keys = Array.from({ length: 300 }, (_, i) => `new-${round}-${i}`)
    const [forward, backward] = await Promise.all([
      w.eddie.post(BULK, { contacts: keys.map((externalId) => ({ externalId, name: 'Ada', company: 'Forward' })) }),
      w.eddie.post(BULK, { contacts: [...keys].reverse().map((externalId) => ({ externalId, name: 'Ada', phone: '+1 555 0100' })) }),
    ])
    t.same([forward.status, backward.status], [200, 200], `round ${round}: both imports answer 200`)
    t.equal(forward.body.created + backward.body.created, keys.length, `round ${round}: each contact created once`)
    t.equal(forward.body.updated + backward.body.updated, keys.length, `round ${round}: and updated by the other import`)
    const [stored] = await w.service.db.owner<{ n: number; whole: number }[]>`
      select count(*)::int as n, count(*) filter (where company = 'Forward' and phone = '+1 555 0100')::int as whole
        from app.contacts where external_id like ${`new-${round}-%`}`
    t.same(stored, { n: keys.length, whole: keys.length }, `round ${round}: one contact per key, holding both imports' fields`)
    // Each key: one contact.created by the import that created it, one contact.updated by the other.
    const keyOf = (e: { payload: any }) => e.payload.contact.externalId as string
    const ofRound = (events: { payload: any }[]) => events.map(keyOf).filter((key) => key.startsWith(`new-${round}-`)).sort()
    t.same(ofRound(await outbox(w, 'contact.created')), [...keys].sort(), `round ${round}: each contact's creation raised once`)
    t.same(ofRound(await outbox(w, 'contact.updated')), [...keys].sort(), `round ${round}: and its change by the other import once`)
  }
})

t.test('bulk: a new key another writer creates while the import inserts is updated by it, and the import\'s other rows are created once', async (t) => {
  const w = await world(t)
  const keys = Array.from({ length: 40 }, (_, i) => `race-${String(i).padStart(2, '0')}`)
  // Another writer's contact of one of the new keys, uncommitted until the import waits on it.
  const holder = await w.service.db.owner.reserve()
  await holder`begin`
  const [held] = await holder<{ id: string }[]>`
    insert into app.contacts (organization_id, external_id, name, created_by)
    select o.id, 'race-20', 'Held', u.id from app.organizations o, app.users u
     where o.slug = 'acme' and u.email = 'eddie@acme.test'
    returning id`
  const pending = w.eddie.post(BULK, { contacts: keys.map((externalId) => ({ externalId, name: 'Imported' })) })
  await eventually(() => w.service.db.owner<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
  (rows) => rows[0]!.n >= 1)
  await holder`commit`
  holder.release()
  const res = await pending
  t.equal(res.status, 200)
  t.same([res.body.created, res.body.updated, res.body.failed], [keys.length - 1, 1, 0])
  const statuses = res.body.results.map((r: { status: string }) => r.status)
  t.same(statuses, keys.map((key) => (key === 'race-20' ? 'updated' : 'created')), 'the other writer\'s key is answered updated')
  t.equal(res.body.results[20].id, held!.id, 'and names the other writer\'s contact')
  const [stored] = await w.service.db.owner<{ n: number; imported: number }[]>`
    select count(*)::int as n, count(*) filter (where name = 'Imported')::int as imported
      from app.contacts where external_id like 'race-%'`
  t.same(stored, { n: keys.length, imported: keys.length }, 'one contact per key, each holding the import\'s name')
  // The first attempt's inserts and events were undone with it: each raised once.
  const keyOf = (e: { payload: any }) => e.payload.contact.externalId as string
  t.same((await outbox(w, 'contact.created')).map(keyOf).sort(), keys.filter((key) => key !== 'race-20'))
  t.same((await outbox(w, 'contact.updated')).map(keyOf), ['race-20'])
})

t.test('bulk: a key a third writer creates while the import runs again is left to a single create; every row lands once', async (t) => {
  const w = await world(t)
  const keys = Array.from({ length: 30 }, (_, i) => `third-${String(i).padStart(2, '0')}`)
  // Two other writers' contacts of two of the new keys, each uncommitted until the
  // import waits on it (on connections of their own: the owner pool has two).
  const writers = ownerPool(w.service.db.url, 2)
  t.teardown(() => writers.end())
  const writer = async (key: string) => {
    const sql = await writers.reserve()
    await sql`begin`
    const [row] = await sql<{ pid: number }[]>`
      insert into app.contacts (organization_id, external_id, name, created_by)
      select o.id, ${key}, 'Held', u.id from app.organizations o, app.users u
       where o.slug = 'acme' and u.email = 'eddie@acme.test'
      returning pg_backend_pid() as pid`
    return { sql, pid: row!.pid }
  }
  const waitsOn = (pid: number) => eventually(() => w.service.db.owner<{ n: number }[]>`
    select count(*)::int as n from pg_locks l, pg_stat_activity a
     where a.pid = ${pid} and not l.granted and l.locktype = 'transactionid' and l.transactionid = a.backend_xid`,
  (rows) => rows[0]!.n >= 1)
  const first = await writer('third-10')
  const second = await writer('third-20')
  const pending = w.eddie.post(BULK, { contacts: keys.map((externalId) => ({ externalId, name: 'Imported' })) })
  // The import's insert meets the first writer's key, fails once it commits and runs
  // again; running again, it meets the second writer's key and leaves it alone.
  await waitsOn(first.pid)
  await first.sql`commit`
  first.sql.release()
  await waitsOn(second.pid)
  await second.sql`commit`
  second.sql.release()
  const res = await pending
  t.equal(res.status, 200)
  t.same(res.body.results.map((r: { status: string }) => r.status),
    keys.map((key) => (key === 'third-10' || key === 'third-20' ? 'updated' : 'created')))
  t.same([res.body.created, res.body.updated, res.body.failed], [keys.length - 2, 2, 0])
  const [stored] = await w.service.db.owner<{ n: number; imported: number }[]>`
    select count(*)::int as n, count(*) filter (where name = 'Imported')::int as imported
      from app.contacts where external_id like 'third-%'`
  t.same(stored, { n: keys.length, imported: keys.length }, 'one contact per key, each holding the import\'s name')
  const keyOf = (e: { payload: any }) => e.payload.contact.externalId as string
  t.same((await outbox(w, 'contact.created')).map(keyOf).sort(), keys.filter((key) => key !== 'third-10' && key !== 'third-20'))
  t.same((await outbox(w, 'contact.updated')).map(keyOf).sort(), ['third-10', 'third-20'])
})

/** A POST over a raw socket: the body sent whole, or only a declared Content-Length. */
function rawPost(w: World, path: string, body?: string, contentLength?: string) {
  const lines = [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', `Authorization: Bearer ${w.keyOf('eddie@acme.test')}`,
    'Content-Type: application/json', `Content-Length: ${contentLength ?? Buffer.byteLength(body ?? '')}`]
  const head = Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1')
  return rawExchange(w.service.url, body === undefined ? head : Buffer.concat([head, Buffer.from(body)]))
}

/** A bulk body of exactly `bytes` bytes of ASCII JSON. */
function bulkBody(bytes: number): string {
  const rows: { email: string; attributes: { pad: string } }[] = []
  const size = () => JSON.stringify({ contacts: rows }).length
  while (size() < bytes - 14_000) rows.push({ email: `p${rows.length}@example.test`, attributes: { pad: 'x'.repeat(12_000) } })
  rows.push({ email: `p${rows.length}@example.test`, attributes: { pad: '' } })
  rows[rows.length - 1]!.attributes.pad = 'x'.repeat(bytes - size())
  const body = JSON.stringify({ contacts: rows })
  if (Buffer.byteLength(body) !== bytes) throw new Error(`sized ${Buffer.byteLength(body)}, not ${bytes}`)
  return body
}

t.test('bulk: a body of 8 MiB is taken, one byte more answers 413', async (t) => {
  const w = await world(t)
  t.equal(BULK_MAX_BYTES, 8 * 1024 * 1024)
  const atLimit = bulkBody(BULK_MAX_BYTES)
  const taken = await w.eddie.request('POST', BULK, { rawBody: atLimit, headers: { 'content-type': 'application/json' } })
  t.equal(taken.status, 200, `${BULK_MAX_BYTES} bytes are taken`)
  const rows = JSON.parse(atLimit).contacts.length
  t.same([taken.body.created, taken.body.failed], [rows, 0])
  // Sent whole over a socket: the server answers 413 and closes while bytes still arrive.
  const over = await rawPost(w, BULK, bulkBody(BULK_MAX_BYTES + 1))
  t.equal(refused(t, over, 413, 'BODY_TOO_LARGE').data.limitBytes, BULK_MAX_BYTES)
  const declared = await rawPost(w, BULK, undefined, String(BULK_MAX_BYTES + 1))
  refused(t, declared, 413, 'BODY_TOO_LARGE', 'a declared length one byte over, refused before the body')
  const single = await rawPost(w, BASE, bulkBody(2 * 1024 * 1024))
  refused(t, single, 413, 'BODY_TOO_LARGE', 'a single create keeps the default limit')
  const [count] = await w.service.db.owner<{ n: number }[]>`select count(*)::int as n from app.contacts`
  t.equal(count!.n, rows, 'only the taken import wrote')
})

// Correctness at the row cap; the import's speed is npm run bench's to measure.
t.test('bulk: 10,000 contacts land in one import, updated in the next, with their events', async (t) => {
  t.setTimeout(120_000)
  const w = await world(t)
  // A first small import warms the request connections, as a running service has them.
  await w.eddie.post(BULK, { contacts: [{ name: 'Warm-up' }] })
  const rows = (prefix: string) => Array.from({ length: 10_000 }, (_, i) => ({
    externalId: `${prefix}-${i}`, email: `person${i}@example.test`, name: `Person ${i}`, company: 'Acme',
    attributes: { plan: i % 2 ? 'free' : 'pro', seats: i },
  }))
  for (const [prefix, expect] of [['a', 'created'], ['a', 'updated'], ['b', 'created']] as const) {
    const body = prefix === 'a' && expect === 'updated'
      ? rows('a').map((r) => ({ ...r, company: 'Globex' }))
      : rows(prefix)
    // Over a raw socket: a 10,000-row answer is large for the test client's schema check.
    const res = await rawPost(w, BULK, JSON.stringify({ contacts: body }))
    t.equal(res.status, 200)
    t.equal(JSON.parse(res.text)[expect], 10_000, `10,000 ${expect}`)
  }
  const [count] = await w.service.db.owner<{ n: number }[]>`select count(*)::int as n from app.contacts where name <> 'Warm-up'`
  t.equal(count!.n, 20_000)
  const [events] = await w.service.db.owner<{ n: number }[]>`
    select count(*)::int as n from app.events e cross join app.event_payloads(e) p
     where e.name like 'contact.%' and p.payload->'contact'->>'name' <> 'Warm-up'`
  t.equal(events!.n, 30_000, 'every created and changed contact raised its event')
  const [batches] = await w.service.db.owner<{ n: number }[]>`
    select count(*)::int as n from app.events where name like 'contact.%' and event_count = 10000`
  t.equal(batches!.n, 3, 'each import wrote its events as one outbox row')
})

async function bind(w: World, name: string, event: string) {
  await deploy(await w.dev.mcp(), { name, description: `Hears ${event}`, steps: [
    { slug: 'end', type: 'output', config: { mapping: { event: '{{ input.event }}', id: '{{ input.payload.contact.id }}', name: '{{ input.payload.contact.name }}' } } },
  ] })
  const put = await w.dev.put(`/api/v1/automations/${name.replaceAll('/', '__')}/triggers`, { kind: 'event', event })
  if (put.status !== 200) throw new Error(`binding ${name} to ${event} failed: ${put.status} ${put.text}`)
}

t.test('contact events start the runs of event triggers, from single writes and imports alike', async (t) => {
  const w = await world(t, { worker: true })
  await bind(w, 'hear/created', 'contact.created')
  await bind(w, 'hear/updated', 'contact.updated')
  await bind(w, 'hear/deleted', 'contact.deleted')
  const id = (await w.eddie.post(BASE, { externalId: 'crm-1', name: 'Ada' })).body.contact.id
  await w.eddie.post(BASE, { externalId: 'crm-1', name: 'Ada Lovelace' })
  await w.eddie.post(BASE, { externalId: 'crm-1', name: 'Ada Lovelace' })
  await w.eddie.del(`${BASE}/${id}`)
  await w.eddie.post(BULK, { contacts: [{ externalId: 'crm-2', name: 'Bob' }, { externalId: 'crm-3', name: 'Cy' }, { name: '' }] })

  const runs = await eventually(
    () => w.service.db.owner<{ id: string; automation_name: string }[]>`select id, automation_name from app.runs order by created_at, id`,
    (rows) => rows.length >= 5)
  const outputs: [string, string][] = []
  for (const run of runs) {
    const done = await waitForRun(w.olive.get, run.id)
    t.match(done, { status: 'completed', startedVia: 'event' }, run.automation_name)
    outputs.push([run.automation_name, done.output.name])
  }
  t.same(outputs.sort(), [['hear/created', 'Ada'], ['hear/created', 'Bob'], ['hear/created', 'Cy'],
    ['hear/deleted', 'Ada Lovelace'], ['hear/updated', 'Ada Lovelace']].sort(),
  'a create, a change, a delete, two imported rows; a repeat that changed nothing and an invalid row started none')
  const [updated] = await outbox(w, 'contact.updated')
  t.same(updated!.payload.changes, ['name'])
  t.equal(updated!.actor_user_id, w.seeded.users['eddie@acme.test']!.id)
})

t.test('contact.upsert in a live run writes by externalId or email and is listed in the run\'s effects', async (t) => {
  const w = await world(t, { worker: true })
  await deploy(await w.dev.mcp(), { name: 'crm/upsert', description: 'Upserts', steps: [
    { slug: 'up', type: 'action', next: { success: 'end' }, config: { action: 'contact.upsert', params: {
      externalId: '{{ input.externalId }}', email: '{{ input.email }}', name: '{{ input.name }}', attributes: { source: 'run' } } } },
    { slug: 'end', type: 'output', config: { mapping: { id: '{{ steps.up.output.contactId }}', created: '{{ steps.up.output.created }}' } } },
  ] })
  const run = async (input: Record<string, unknown>) => {
    const started = await w.dev.post('/api/v1/automations/crm__upsert/runs', { input })
    t.equal(started.status, 202)
    return waitForRun(w.dev.get, started.body.runId)
  }
  const keyless = (await w.eddie.post(BASE, { email: 'Grace@Example.test', name: 'Grace' })).body.contact

  const first = await run({ externalId: null, email: 'ada@example.test', name: 'Ada' })
  t.match(first, { status: 'completed', output: { created: true } })
  t.same(first.effects, [{ step: 'up', type: 'contact.upsert', contactId: first.output.id, created: true, changed: true }])
  t.match((await w.max.get(`${BASE}/${first.output.id}`)).body.contact,
    { externalId: null, email: 'ada@example.test', name: 'Ada', attributes: { source: 'run' } })

  const byEmail = await run({ externalId: null, email: 'ADA@example.test', name: 'Ada Lovelace' })
  t.match(byEmail, { status: 'completed', output: { id: first.output.id, created: false } }, 'the email names the contact')
  t.equal((await w.max.get(`${BASE}/${first.output.id}`)).body.contact.name, 'Ada Lovelace')

  const attached = await run({ externalId: 'crm-7', email: 'grace@example.test', name: 'Grace' })
  t.match(attached, { output: { id: keyless.id, created: false } }, 'an unknown externalId attaches to the contact of that email')
  t.equal((await w.max.get(`${BASE}/${keyless.id}`)).body.contact.externalId, 'crm-7')
  const byKey = await run({ externalId: 'crm-7', email: 'other@example.test', name: 'Grace H.' })
  t.match(byKey, { output: { id: keyless.id, created: false } }, 'the externalId names the contact first')

  const refusedRun = await run({ externalId: null, email: 'not an email', name: 'X' })
  t.match(refusedRun, { status: 'failed', failureCode: 'node_error', detail: /contact\.upsert: .*email.*INVALID_BODY/ })
  t.same(refusedRun.effects, [])

  const created = await outbox(w, 'contact.created')
  t.equal(created.length, 2, 'the person\'s contact and the run\'s')
  t.equal(created[1]!.source_run_id, first.runId, 'the run\'s event names the run')
  t.equal(created[1]!.actor_user_id, null)

  // A step the worker repeats after a crash finds what it wrote and writes nothing more.
  const owner = w.service.db.owner
  await owner`update app.runs set status = 'running', finished_at = null, seq = 7 where id = ${first.runId}`
  const [org] = await owner<{ id: string }[]>`select organization_id as id from app.runs where id = ${first.runId}`
  const act = async () => (await owner<{ result: any }[]>`
    select app.worker_action(${org!.id}::uuid, ${first.runId}::uuid, 'contact.upsert',
      ${owner.json({ email: 'once@example.test', name: 'Once' } as never)}) as result`)[0]!.result
  const one = await act()
  const two = await act()
  t.same([one.output.created, two.output.created, two.effect.changed], [true, false, false])
  t.equal(two.output.contactId, one.output.contactId)
})
