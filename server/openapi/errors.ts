// The error envelope as the document publishes it, with every code the service
// raises. A test compares this list with the codes raised in db/functions and
// server/, so a new refusal cannot reach the wire undeclared.
import * as v from 'valibot'
import { component } from './components.ts'

export const ERROR_CODES = [
  'APPROVAL_DECIDED', 'ASK_ANSWERED', 'AUTOMATION_DELIVERY_SCOPE_MISMATCH', 'AUTOMATION_HAS_ACTIVE_RUNS',
  'AUTOMATION_INPUT_INVALID', 'AUTOMATION_NAME_TAKEN', 'AUTOMATION_NOT_DEPLOYED', 'AUTOMATION_NOT_FOUND',
  'AUTOMATION_NOT_INSTALLED', 'AUTOMATION_PROJECT_FORBIDDEN', 'AUTOMATION_PROJECT_SCOPE_REQUIRED',
  'AUTOMATION_TRIGGER_INVALID', 'AUTOMATION_VERSION_UNKNOWN',
  'BLOB_NOT_FOUND', 'BODY_TOO_LARGE',
  // Browser sessions (the spec names no codes for them): an unknown id; an import on a
  // deployment without BROWSER_SESSION_KEY, which stores no cookie unsealed.
  'BROWSER_SESSION_NOT_FOUND', 'BROWSER_SESSION_KEY_UNCONFIGURED',
  'COMPETENCE_ALREADY_GRANTED', 'COMPETENCE_CAPABILITY_UNKNOWN',
  'COMPETENCE_EXPIRY_IN_PAST', 'COMPETENCE_FORBIDDEN', 'COMPETENCE_USER_NOT_MEMBER',
  // Contacts and products (the spec names no codes for them): an unknown or another
  // organization's id; a PATCH moving to an externalId another record holds (as
  // PROJECT_DUPLICATE_EXTERNAL_ID does for projects, the holder's id in data).
  'CONTACT_DUPLICATE_EXTERNAL_ID', 'CONTACT_NOT_FOUND', 'PRODUCT_DUPLICATE_EXTERNAL_ID', 'PRODUCT_NOT_FOUND',
  // Hub documents and knowledge entries (the spec names no codes for them): an unknown,
  // invisible or trashed id, as FILE_NOT_FOUND is for project files.
  'DOCUMENT_NOT_FOUND', 'KNOWLEDGE_ENTRY_NOT_FOUND',
  'FILE_NOT_FOUND', 'FILE_TOO_LARGE',
  // The indexing service: an upload or delete naming a file_id the platform's own
  // documents and knowledge entries hold.
  'FILE_ID_RESERVED', 'FOLDER_DEPTH_EXCEEDED', 'FOLDER_NAME_INVALID',
  'FOLDER_NOT_FOUND', 'GENERATION_IN_PROGRESS',
  // The identity issuer's client registration (the spec says 409 for a changed callback
  // or policy and names no codes).
  'IDENTITY_CLIENT_CALLBACK_INVALID', 'IDENTITY_CLIENT_CONFLICT', 'IDENTITY_CLIENT_NOT_FOUND',
  'INTERNAL_ERROR', 'INVALID_BODY', 'INVALID_CURSOR', 'INVALID_HEADER', 'INVALID_LIMIT', 'INVALID_QUERY',
  'METHOD_NOT_ALLOWED',
  // The API's /metrics/rag and /metrics/crawler when the service they are read from does
  // not answer (the spec's 503 is for what the platform depends on being unavailable).
  'METRICS_SOURCE_UNAVAILABLE',
  'NOT_FOUND', 'OBJECT_STORE_UNAVAILABLE', 'OBJECT_STORE_UNCONFIGURED', 'ORG_FORBIDDEN',
  // The app's session routes (server/auth/session.ts, app.authenticate): a write from
  // another site; an organization requiring a second factor the session has not proven.
  'ORIGIN_FORBIDDEN', 'MFA_REQUIRED',
  'ORG_SLUG_INVALID', 'ORG_SLUG_REQUIRED', 'PROJECT_ARCHIVED', 'PROJECT_DUPLICATE_EXTERNAL_ID',
  'PROJECT_AGENT_HARNESS_INVALID',
  // Beyond the spec's codes: a project's agents are capped (agent.maxPerProject), and no
  // code of the spec says so; NAME_TAKEN would send a client renaming in vain.
  'PROJECT_AGENT_LIMIT_REACHED',
  'PROJECT_AGENT_MODEL_INVALID', 'PROJECT_AGENT_NAME_TAKEN', 'PROJECT_AGENT_PROVIDER_UNKNOWN',
  'PROJECT_AGENT_SECRET_UNKNOWN', 'PROJECT_AGENT_STALE', 'PROJECT_AGENT_TOOL_UNKNOWN',
  // An agent's skills name skills the caller can see (as the tool and secret codes do
  // for their lists); the spec names no code for it.
  'PROJECT_AGENT_SKILL_UNKNOWN',
  'PROJECT_HAS_BOUND_AUTOMATIONS', 'PROJECT_KEY_TAKEN', 'PROJECT_LEGAL_HOLD', 'PURGE_INCOMPLETE', 'RATE_LIMITED',
  'REQUEST_TIMEOUT', 'ROLE_FORBIDDEN', 'RUN_FINISHED', 'RUN_IN_FLIGHT', 'SETUP_FOLDER_MISSING',
  // SKILL_PUBLISH_FORBIDDEN is the spec's; SKILL_NOT_FOUND ours (no skill of the slug the caller can see).
  'SKILL_NOT_FOUND', 'SKILL_PUBLISH_FORBIDDEN', 'UNAUTHORIZED', 'UNSUPPORTED_FILE_TYPE',
  'UPLOAD_POLICY_REJECTED', 'URI_TOO_LONG',
  // Websites (the spec names no codes for them): an unknown or another organization's id.
  'WEBSITE_NOT_FOUND',
] as const

export const errorCode = component('ErrorCode', v.picklist(ERROR_CODES))

const issue = component('Issue', v.strictObject({ path: v.string(), message: v.string() }))

export const errorEnvelope = component('Error', v.strictObject({
  error: v.pipe(v.string(), v.description('For people; branch on the status and the code')),
  code: errorCode,
  // Each refusal adds its own keys (limitBytes, automations, retryAfter...).
  data: v.looseObject({ issues: v.optional(v.array(issue)) }),
  requestId: v.optional(v.pipe(v.string(), v.description('On 413, 414, 429 and 500'))),
}))
