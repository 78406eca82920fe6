// Applications of the identity issuer (SPEC "Identity issuer (OpenID Connect)"):
// owners and admins of an organization register them, rotate their secret and
// disable or restore them. App routes: a session cookie, never an API key, with the
// organization named by ?orgId= and an Origin of the service's own. Shapes are checked
// here; the rules (who may, the callback, a changed configuration) are in
// db/functions/0120_identity_clients.sql.
import * as v from 'valibot'
import type { Route } from './route.ts'
import { uuidParam } from '../transport/validation.ts'
import { component } from '../openapi/components.ts'

const epochMs = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))
const clientKey = v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1 to 64 letters, digits, ".", "_" or "-"'),
  v.description('The application\'s name within the organization, chosen by the registrant; names it in the URLs below'))

const fields = {
  client_id: v.pipe(v.string(), v.description('The OAuth client_id; the client is bound to this organization alone')),
  key: v.string(),
  name: v.string(),
  redirectUri: v.pipe(v.string(), v.description('The one callback address, matched exactly')),
  organizationId: v.string(),
  disabled: v.pipe(v.boolean(), v.description('A disabled client gets no authorization and no tokens')),
  createdAt: epochMs,
  updatedAt: epochMs,
}
const client = component('IdentityClient', v.strictObject(fields))
const clientWithSecret = component('IdentityClientWithSecret', v.strictObject({
  ...fields,
  client_secret: v.pipe(v.string(), v.description('Shown this once: only its hash is kept')),
}))

const orgId = v.pipe(uuidParam, v.description('The organization, by id; the session\'s person must be an owner or admin of it'))
const keyParams = v.strictObject({ key: clientKey })

export const identityClientRoutes: Route[] = [
  {
    kind: 'operation', auth: 'session', method: 'POST', path: '/api/app/identity/clients', tag: 'Identity issuer',
    operation: 'identity_client_register', operationId: 'registerIdentityClient', errors: [400, 403, 409],
    summary: 'Register an application with the identity issuer: 201 with its secret once; the same configuration again 200 without; '
      + 'another name or callback for the key 409 (Owner or Admin session; Origin required)',
    status: (body) => (body.created ? 201 : 200),
    location: (body) => (body.created ? `/api/app/identity/clients/${body.client.key}` : undefined),
    query: v.strictObject({ orgId }),
    body: v.strictObject({
      key: clientKey,
      name: v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be blank'), v.maxLength(200, 'at most 200 characters')),
      redirectUri: v.pipe(v.string(), v.maxLength(2000, 'at most 2000 characters'),
        v.description('An exact https:// address; http:// only on localhost, 127.0.0.1 or [::1]; no fragment')),
    }),
    args: (input) => ({ ...(input.body as object) }),
    response: v.union([
      v.strictObject({ created: v.literal(true), client: clientWithSecret }),
      v.strictObject({ created: v.literal(false), client }),
    ]),
  },
  {
    kind: 'operation', auth: 'session', method: 'POST', path: '/api/app/identity/clients/:key/rotate-secret',
    tag: 'Identity issuer', operation: 'identity_client_rotate_secret', operationId: 'rotateIdentityClientSecret',
    errors: [403, 404],
    summary: 'A new client secret, shown once; the previous one stops working at once (Owner or Admin session; Origin required)',
    params: keyParams, query: v.strictObject({ orgId }), body: v.strictObject({}),
    args: (input) => ({ key: input.params.key }),
    response: v.strictObject({ client: clientWithSecret }),
  },
  {
    kind: 'operation', auth: 'session', method: 'POST', path: '/api/app/identity/clients/:key/status',
    tag: 'Identity issuer', operation: 'identity_client_status', operationId: 'setIdentityClientStatus', errors: [403, 404],
    summary: 'Disable an application (no authorization, no tokens, its access tokens refused) or restore it '
      + '(Owner or Admin session; Origin required)',
    params: keyParams, query: v.strictObject({ orgId }), body: v.strictObject({ disabled: v.boolean() }),
    args: (input) => ({ key: input.params.key, ...(input.body as object) }),
    response: v.strictObject({ client }),
  },
]
