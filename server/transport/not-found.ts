// The one 404 of a path that is itself a secret (a webhook URL holds its token):
// an unknown or disabled token, another verb and a path beneath it all answer this,
// so no answer tells which part was wrong.
import { HttpError } from './errors.ts'

export const opaqueNotFound = () => new HttpError(404, 'NOT_FOUND', 'Not found.')
