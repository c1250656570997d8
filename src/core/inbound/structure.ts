/**
 * The parser's time grows with the number of lines and its memory with the number of MIME
 * parts (figures in bench/README.md). Real mail stays far below both; one cheap scan counts
 * them before any parsing starts. A line starting with `--` is counted as a possible part
 * delimiter.
 */
import type { Limits } from '../../config.ts'
import { InboundRefusal } from './refusal.ts'

export interface Structure {
  lines: number
  /** Lines starting with `--`: no part can begin without one. */
  delimiters: number
}

/** Counts `bytes`; stops early, with a refusal, once either count passes its limit. */
export function scanStructure(
  bytes: Uint8Array,
  limits: Pick<Limits, 'messageLines' | 'messageParts'>,
): Structure & { refusal: InboundRefusal | null } {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let lines = 0
  let delimiters = 0
  for (let start = 0; ; ) {
    if (view[start] === 0x2d && view[start + 1] === 0x2d && ++delimiters > limits.messageParts) {
      return { lines, delimiters, refusal: new InboundRefusal('too_many_parts', `at most ${limits.messageParts}`) }
    }
    const end = view.indexOf(0x0a, start)
    if (end === -1) return { lines, delimiters, refusal: null }
    if (++lines > limits.messageLines)
      return { lines, delimiters, refusal: new InboundRefusal('too_many_lines', `at most ${limits.messageLines}`) }
    start = end + 1
  }
}

/**
 * Met while parsing on the event loop: a nested message's body may be encoded, hiding any
 * number of parts from the scan above, so the message goes to a worker instead.
 */
export class NestedMessageFound extends Error {
  constructor() {
    super('a nested message is parsed in a worker')
    this.name = 'NestedMessageFound'
  }
}
