/** The console's dates and times (its filter form and its search line), read the same way in both. */
import { parseRfc3339 } from './list-messages.ts'

/**
 * A date or date and time, UTC unless an offset is written. `end` reads it as the end of
 * what it names (inclusive "until"): 2026-11-25 is through 23:59:59.999 of that day,
 * 14:30 through 14:30:59.999, 14:30:05 through 14:30:05.999. Returns epoch ms
 * (exclusive when `end`), or null.
 */
export function parseFilterTime(value: string, end: boolean): number | null {
  let text = value.replace(' ', 'T')
  let step = 1 // ms: an instant with a fraction names that millisecond
  if (/^\d{4}-\d\d-\d\d$/.test(text)) {
    text += 'T00:00:00'
    step = 86_400_000
  } else if (/T\d\d:\d\d(Z|[+-]\d\d:\d\d)?$/i.test(text)) {
    text = text.replace(/(T\d\d:\d\d)/i, '$1:00')
    step = 60_000
  } else if (/T\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)?$/i.test(text)) step = 1000
  if (!/(Z|[+-]\d\d:\d\d)$/i.test(text)) text += 'Z'
  const at = parseRfc3339(text)
  if (at === null) return null
  return end ? at + step : at
}
