// Skills (/api/v1/skills): markdown instructions saved by slug, personal or shared with
// the organization (docs/skills.md). Shapes and the body's size are checked here; the
// rules (who may share, which skill a slug names) are in db/functions/0150_skills.sql.
import * as v from 'valibot'
import type { Route } from './route.ts'
import { component } from '../openapi/components.ts'
import { limit } from '../core/limits.ts'

/** A save's whole body, content included; more answers 413 BODY_TOO_LARGE. */
export const SKILL_BODY_LIMIT = limit('skill.maxBodyBytes')
const NAME_MAX_UNITS = limit('skill.nameMaxUnits')
const DESCRIPTION_MAX_UNITS = limit('skill.descriptionMaxUnits')

const timestamp = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))
const visibility = v.pipe(v.picklist(['personal', 'organization']),
  v.description('personal: its owner\'s alone; organization: every member reads it, skillPublish holders write it'))

const summaryFields = {
  slug: v.string(),
  visibility,
  name: v.string(),
  description: v.string(),
  size: v.pipe(v.number(), v.integer(), v.description('The content\'s length in UTF-8 bytes')),
  createdBy: v.pipe(v.nullable(v.string()), v.description('Who created it (a personal skill\'s owner)')),
  updatedBy: v.pipe(v.nullable(v.string()), v.description('Who saved it last')),
  createdAt: timestamp,
  updatedAt: timestamp,
}
const summary = component('SkillSummary', v.strictObject(summaryFields))
const skill = component('Skill', v.strictObject({
  ...summaryFields,
  content: v.pipe(v.string(), v.description('Markdown instructions')),
}))

// Any text: a slug that cannot be one names no skill (404 SKILL_NOT_FOUND), and a save
// to it answers 400 from SQL, rather than the transport's bare 404 for a bad parameter.
const slugParams = v.strictObject({
  slug: v.pipe(v.string(), v.minLength(1), v.maxLength(200),
    v.description('1 to 63 lowercase letters, digits or hyphens, starting with a letter or digit')),
})
const pick = v.strictObject({
  visibility: v.optional(v.pipe(visibility,
    v.description('Which of the two skills of the slug: without it, your personal one when you have one, else the organization\'s'))),
})

export const skillRoutes: Route[] = [
  {
    kind: 'operation', method: 'GET', path: '/api/v1/skills', tag: 'Skills', operation: 'skills_list', family: 'unpaginated',
    summary: 'Your personal skills and the organization\'s, by slug (personal first); without their content',
    response: v.strictObject({ skills: v.array(summary) }),
  },
  {
    kind: 'operation', method: 'PUT', path: '/api/v1/skills/:slug', tag: 'Skills', operation: 'skill_save',
    summary: 'Save a skill: 201 when it is created, 200 when it replaces the one of that slug and visibility; '
      + 'sharing with the organization needs the skillPublish capability',
    errors: [400, 403, 413], params: slugParams, bodyLimit: SKILL_BODY_LIMIT,
    body: v.strictObject({
      name: v.pipe(v.string(), v.trim(), v.normalize('NFC'), v.minLength(1, 'must not be blank'),
        v.maxLength(NAME_MAX_UNITS, `at most ${NAME_MAX_UNITS} UTF-16 code units`)),
      description: v.optional(v.pipe(v.string(), v.maxLength(DESCRIPTION_MAX_UNITS, `at most ${DESCRIPTION_MAX_UNITS} UTF-16 code units`),
        v.description('Empty when not sent'))),
      content: v.pipe(v.string(), v.check((text) => text.trim() !== '', 'must not be blank'),
        v.description(`Markdown instructions; the whole body is at most ${SKILL_BODY_LIMIT} bytes (413 BODY_TOO_LARGE beyond)`)),
      visibility: v.optional(v.pipe(visibility, v.description('personal when not sent'))),
    }),
    status: (body) => (body.created ? 201 : 200),
    location: (body) => (body.created
      ? `/api/v1/skills/${body.skill.slug}${body.skill.visibility === 'organization' ? '?visibility=organization' : ''}`
      : undefined),
    response: v.strictObject({
      created: v.pipe(v.boolean(), v.description('true when the save created the skill (201)')),
      skill,
    }),
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/skills/:slug', tag: 'Skills', operation: 'skill_get',
    summary: 'Read a skill: your personal one of the slug, else the organization\'s, unless visibility picks',
    errors: [404], params: slugParams, query: pick, response: v.strictObject({ skill }),
  },
  {
    kind: 'operation', method: 'DELETE', path: '/api/v1/skills/:slug', tag: 'Skills', operation: 'skill_delete',
    summary: 'Delete a skill (resolved as a read is); an organization skill needs the skillPublish capability',
    status: 204, errors: [403, 404], params: slugParams, query: pick,
  },
]
