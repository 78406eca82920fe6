// Contacts (/api/v1/contacts): the organization's people by an optional natural key
// (externalId), one at a time or by bulk import (docs/records.md). Rules in
// db/functions/0140_contacts.sql; SQL holds the same field rules for the import's rows
// and a run's contact.upsert step, which do not come through these shapes.
import * as v from 'valibot'
import type { Route } from './route.ts'
import { integerParam, jsonObject, uuidParam } from '../transport/validation.ts'
import { component } from '../openapi/components.ts'
import { limit } from '../core/limits.ts'

/** The largest bulk import body, in bytes; more answers 413 BODY_TOO_LARGE. */
export const BULK_MAX_BYTES = limit('contact.bulkMaxBytes')
const BULK_MAX_ROWS = limit('contact.bulkMaxRows')
const EXTERNAL_ID_MAX = limit('contact.externalIdMaxUnits')
const EMAIL_MAX = limit('contact.emailMaxUnits')
const NAME_MAX = limit('contact.nameMaxUnits')
const PHONE_MAX = limit('contact.phoneMaxUnits')
const ATTRIBUTES_MAX_BYTES = limit('contact.attributesMaxBytes')

const timestamp = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))
const units = (max: number) => v.maxLength<string, number, string>(max, `at most ${max} UTF-16 code units`)
const text = (max: number) => v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be blank (send null to clear it)'), units(max))
const clearable = (max: number) => v.optional(v.nullable(text(max)))

export const recordAttributes = v.pipe(jsonObject,
  v.check((value) => Buffer.byteLength(JSON.stringify(value)) <= ATTRIBUTES_MAX_BYTES, `must be at most ${ATTRIBUTES_MAX_BYTES} bytes as JSON`),
  v.description(`Any JSON object, at most ${ATTRIBUTES_MAX_BYTES} bytes as JSON`))

const contact = component('Contact', v.strictObject({
  id: v.string(),
  externalId: v.pipe(v.nullable(v.string()), v.description('The natural key: the contact\'s id in another system')),
  email: v.nullable(v.string()),
  name: v.nullable(v.string()),
  phone: v.nullable(v.string()),
  company: v.nullable(v.string()),
  attributes: v.record(v.string(), v.unknown()),
  createdAt: timestamp,
  updatedAt: timestamp,
}))

const fields = {
  externalId: v.optional(v.nullable(v.pipe(text(EXTERNAL_ID_MAX),
    v.description('The natural key: a create naming an externalId a contact holds updates that contact')))),
  email: v.optional(v.nullable(v.pipe(text(EMAIL_MAX), v.regex(/^[^@\s]+@[^@\s]+$/, 'must be an email address')))),
  name: clearable(NAME_MAX),
  phone: clearable(PHONE_MAX),
  company: clearable(NAME_MAX),
}
const createBody = v.pipe(v.strictObject({
  ...fields,
  attributes: v.optional(v.pipe(recordAttributes, v.description('Merged key by key into a contact the externalId names'))),
}), v.description('A contact names someone: an email or a name (once the fields sent are applied to the contact the externalId names)'))
const updateBody = v.strictObject({
  ...fields,
  attributes: v.optional(v.pipe(recordAttributes, v.description('Replaces the stored attributes'))),
})

const rowError = v.strictObject({
  code: v.picklist(['INVALID_BODY']),
  message: v.string(),
  issues: v.array(v.strictObject({ path: v.string(), message: v.string() })),
})
const bulkResult = component('ContactBulkResult', v.strictObject({
  index: v.pipe(v.number(), v.integer(), v.description('The row\'s position in contacts')),
  status: v.picklist(['created', 'updated', 'error']),
  id: v.optional(v.pipe(v.string(), v.description('The contact created or updated'))),
  error: v.optional(v.pipe(rowError, v.description('Why the row was not applied'))),
}))

const idParams = v.strictObject({ id: uuidParam })

export const contactRoutes: Route[] = [
  {
    kind: 'operation', method: 'GET', path: '/api/v1/contacts', tag: 'Contacts', operation: 'contacts_list', family: 'keyset',
    summary: 'List the organization\'s contacts, most recently changed first (updatedAt, then id, descending)', errors: [400],
    query: v.strictObject({
      limit: v.optional(integerParam(1)), cursor: v.optional(v.string()),
      externalId: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be blank'), units(EXTERNAL_ID_MAX),
        v.description('Only the contact of this natural key'))),
      email: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be blank'), units(EMAIL_MAX),
        v.description('Only contacts of this email, ignoring case'))),
    }),
    response: v.strictObject({ page: v.array(contact), isDone: v.boolean(), continueCursor: v.string() }),
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/contacts', tag: 'Contacts', operation: 'contact_create',
    summary: 'Create a contact (201), or update the contact its externalId names (200, created:false): the fields sent replace, the omitted are kept',
    errors: [400, 403], body: createBody,
    response: v.strictObject({ contact, created: v.boolean() }),
    status: (body) => (body.created ? 201 : 200),
    location: (body) => (body.created ? `/api/v1/contacts/${body.contact.id}` : undefined),
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/contacts/bulk', tag: 'Contacts', operation: 'contacts_bulk',
    summary: `Create or update up to ${BULK_MAX_ROWS} contacts in one transaction, each row by the rules of POST /contacts, answered row by row`,
    errors: [400, 403, 413], bodyLimit: BULK_MAX_BYTES,
    body: v.strictObject({
      contacts: v.pipe(v.array(jsonObject), v.maxLength(BULK_MAX_ROWS, `at most ${BULK_MAX_ROWS} contacts in one request`),
        v.description('Each row has the fields of POST /contacts; a row whose fields are invalid, or that repeats the externalId of an earlier row, is answered as that row\'s error while the other rows land')),
    }),
    response: v.strictObject({
      results: v.pipe(v.array(bulkResult), v.description('One per row, in the order sent')),
      created: v.pipe(v.number(), v.integer()),
      updated: v.pipe(v.number(), v.integer()),
      failed: v.pipe(v.number(), v.integer()),
    }),
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/contacts/:id', tag: 'Contacts', operation: 'contact_get',
    summary: 'Read a contact', errors: [404], params: idParams, response: v.strictObject({ contact }),
  },
  {
    kind: 'operation', method: 'PATCH', path: '/api/v1/contacts/:id', tag: 'Contacts', operation: 'contact_update',
    summary: 'Change a contact: the fields sent replace the stored ones (null clears; attributes are replaced whole)',
    errors: [400, 403, 404, 409], params: idParams, body: updateBody, response: v.strictObject({ contact }),
  },
  {
    kind: 'operation', method: 'DELETE', path: '/api/v1/contacts/:id', tag: 'Contacts', operation: 'contact_delete',
    summary: 'Delete a contact', status: 204, errors: [403, 404], params: idParams,
  },
]
