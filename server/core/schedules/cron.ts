// Schedule expressions: the classic five cron fields, parsed by cron-parser into the
// sets SQL matches occurrences against (app.cron_next). No expression is parsed in
// SQL, and none by hand here: this module only keeps out what the five-field form
// does not have (seconds, macros, L, W, #, ?, H) before the library expands it.
import { CronExpressionParser } from 'cron-parser'

/** The expanded fields, as app.cron_next reads them. */
export interface CronFields {
  minutes: number[]
  hours: number[]
  days: number[]
  months: number[]
  /** 0-6, Sunday 0. */
  weekdays: number[]
  /** The day-of-month field starts with '*': only the weekdays restrict the day. */
  anyDay: boolean
  /** The day-of-week field starts with '*': only the days of month restrict the day. */
  anyWeekday: boolean
}

export type ParsedCron = { cronFields: CronFields } | { cronProblem: string }

const MONTHS = new Set(['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'])
const WEEKDAYS = new Set(['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'])
const FIELD_NAMES = ['minute', 'hour', 'day of month', 'month', 'day of week'] as const

// What a field may hold: numbers, '*', lists, ranges and steps; names only in the
// month and day-of-week fields. Everything else cron-parser would take (L, W, #, ?,
// H) is an extension of the form the spec asks for.
const SYNTAX = /^[0-9A-Za-z*,/-]+$/

function fieldProblem(field: string, index: number): string | null {
  const name = FIELD_NAMES[index]!
  if (!SYNTAX.test(field)) {
    return `the ${name} field "${field}" may hold only numbers, names, "*", ",", "-" and "/"`
  }
  const names = index === 3 ? MONTHS : index === 4 ? WEEKDAYS : null
  for (const word of field.match(/[A-Za-z]+/g) ?? []) {
    if (!names) return `the ${name} field "${field}" takes numbers only`
    if (!names.has(word.toUpperCase())) return `"${word}" is not a ${index === 3 ? 'month' : 'weekday'} name`
  }
  return null
}

const sorted = (values: number[]) => [...new Set(values)].sort((a, b) => a - b)

/** Expands a five-field expression, or says in a short sentence why it is not one. */
export function parseCron(expression: string): ParsedCron {
  const fields = expression.trim().split(/\s+/).filter(Boolean)
  if (fields[0]?.startsWith('@')) return { cronProblem: `macros such as ${fields[0]} are not accepted; write the five fields` }
  if (fields.length !== 5) {
    return { cronProblem: `a cron expression has five fields (minute, hour, day of month, month, day of week), not ${fields.length}` }
  }
  for (const [index, field] of fields.entries()) {
    const problem = fieldProblem(field, index)
    if (problem) return { cronProblem: problem }
  }
  let parsed
  try {
    parsed = CronExpressionParser.parse(fields.join(' '))
  } catch (error) {
    const message = (error as Error).message
    return { cronProblem: message.charAt(0).toLowerCase() + message.slice(1) }
  }
  const numbers = (values: readonly unknown[]) => values.filter((v): v is number => typeof v === 'number')
  const { minute, hour, dayOfMonth, month, dayOfWeek } = parsed.fields
  return {
    cronFields: {
      minutes: sorted(numbers(minute.values)),
      hours: sorted(numbers(hour.values)),
      days: sorted(numbers(dayOfMonth.values)),
      months: sorted(numbers(month.values)),
      weekdays: sorted(numbers(dayOfWeek.values).map((day) => (day === 7 ? 0 : day))),
      anyDay: fields[2]!.startsWith('*'),
      anyWeekday: fields[4]!.startsWith('*'),
    },
  }
}
