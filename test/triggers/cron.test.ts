// The five-field cron form, expanded by cron-parser into the sets SQL matches.
import t from 'tap'
import { parseCron } from '../../server/core/schedules/cron.ts'

const fields = (expression: string) => {
  const parsed = parseCron(expression)
  if (!('cronFields' in parsed)) throw new Error(`${expression}: ${parsed.cronProblem}`)
  return parsed.cronFields
}
const problem = (expression: string) => {
  const parsed = parseCron(expression)
  return 'cronProblem' in parsed ? parsed.cronProblem : null
}

t.test('five fields expand into sorted sets', async (t) => {
  t.same(fields('*/15 9-17 * * MON-FRI'), {
    minutes: [0, 15, 30, 45], hours: [9, 10, 11, 12, 13, 14, 15, 16, 17],
    days: Array.from({ length: 31 }, (_, i) => i + 1), months: Array.from({ length: 12 }, (_, i) => i + 1),
    weekdays: [1, 2, 3, 4, 5], anyDay: true, anyWeekday: false,
  })
  t.same(fields('0 0 1,15 jan,Jul *').months, [1, 7], 'month names, any case')
  t.same(fields('  5  4   1 * *  ').minutes, [5], 'any white space between fields')
})

t.test('weekdays run 0-6 with Sunday 0, written 0 or 7', async (t) => {
  t.same(fields('0 0 * * 7').weekdays, [0])
  t.same(fields('0 0 * * 5-7').weekdays, [0, 5, 6])
  t.same(fields('0 0 * * SUN,sat').weekdays, [0, 6])
  t.same(fields('0 0 * * *').weekdays, [0, 1, 2, 3, 4, 5, 6], 'no 7 beside 0')
})

t.test('anyDay and anyWeekday: the field starts with *', async (t) => {
  t.match(fields('0 0 * * *'), { anyDay: true, anyWeekday: true })
  t.match(fields('0 0 */2 * 1'), { anyDay: true, anyWeekday: false, days: [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31] })
  t.match(fields('0 0 1 * */2'), { anyDay: false, anyWeekday: true, weekdays: [0, 2, 4, 6] })
  t.match(fields('0 0 1-7 * 1'), { anyDay: false, anyWeekday: false })
})

t.test('what is not the five-field form is a problem, not fields', async (t) => {
  t.match(problem('0 0 * * * *'), /five fields/, 'seconds')
  t.match(problem('* * * *'), /five fields/, 'four fields')
  t.match(problem(''), /five fields/, 'empty')
  for (const macro of ['@daily', '@hourly', '@reboot']) t.match(problem(macro), /macro/, macro)
  for (const extension of ['0 0 L * *', '0 0 15W * *', '0 0 * * 1L', '0 0 * * 1#2', '0 0 ? * *', 'H * * * *']) {
    t.type(problem(extension), 'string', `${extension} is refused`)
  }
  t.match(problem('0 0 * FOO *'), /month name/)
  t.match(problem('0 0 * * FUNDAY'), /weekday name/)
  t.match(problem('0 MON * * *'), /numbers only/, 'names only where cron has them')
  t.type(problem('61 * * * *'), 'string', 'out of range')
  t.type(problem('0 0 30 2 *'), 'string', 'a day no month named has (cron-parser refuses it)')
  t.type(problem('*/0 * * * *'), 'string', 'a zero step')
})
