/**
 * The patched smtp-server parser hands each socket read of a message to the consumer where it
 * lies, instead of a copy joined to the four bytes it held back from the read before (a copy
 * of every byte of DATA, a large share of the main thread's time under a flood of big mail).
 * The bytes must stay exact: dot-unstuffing and the final dot wherever the reads split them,
 * and the byte count. The parser is driven directly: the listener never shows its copies.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { SMTPStream } from 'smtp-server/lib/smtp-stream.js'

const READ = 512 * 1024

/** Writes `chunk` into the parser; the promise settles when the parser is ready for the next one. */
const write = (parser: SMTPStream, chunk: Buffer) => new Promise<void>((taken) => parser.write(chunk, () => taken()))

/** Feeds `reads` to a parser in data mode; answers what the data stream emitted, chunk by chunk, and its byte count. */
async function receive(reads: Buffer[]): Promise<{ chunks: Buffer[]; byteLength: number }> {
  const parser = new SMTPStream()
  const stream = parser.startDataMode(Number.POSITIVE_INFINITY)
  const chunks: Buffer[] = []
  stream.on('data', (chunk: Buffer) => chunks.push(chunk))
  const ended = new Promise<void>((resolve) => stream.on('end', () => resolve()))
  for (const read of reads) {
    const taken = write(parser, read)
    // the read holding the final dot completes only once the application lets the parser go on
    await Promise.race([taken, ended])
  }
  await ended
  parser.continue()
  parser.end()
  return { chunks, byteLength: (stream as unknown as { byteLength: number }).byteLength }
}

/** `lines` as sent over SMTP: a line starting with a dot gets another, then the final dot. */
const onTheWire = (lines: string[]) =>
  Buffer.from(`${lines.map((line) => (line.startsWith('.') ? `.${line}` : line)).join('\r\n')}\r\n.\r\n`, 'latin1')
/** What the consumer must receive for `lines`. */
const content = (lines: string[]) => Buffer.from(`${lines.join('\r\n')}\r\n`, 'latin1')

/** `bytes` cut at `cuts` (sorted, deduplicated, within its length). */
function split(bytes: Buffer, cuts: number[]): Buffer[] {
  const at = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b)
  const reads: Buffer[] = []
  let start = 0
  for (const cut of [...at, bytes.length]) {
    if (cut > start) reads.push(bytes.subarray(start, cut))
    start = Math.max(start, cut)
  }
  return reads
}

describe('smtp-server parser in data mode (patched): no copy of the reads', () => {
  test('every read after the first reaches the consumer as a view of the read itself', async () => {
    const reads = [0x61, 0x62, 0x63, 0x64].map((byte) => Buffer.alloc(READ, byte))
    const { chunks, byteLength } = await receive([...reads, Buffer.from('\r\n.\r\n')])
    for (const read of reads.slice(1)) {
      // upstream joined the four held-back bytes to the read: a new buffer, a copy of 512 KiB
      expect(chunks.some((chunk) => chunk.buffer === read.buffer && chunk.length === READ - 4)).toBe(true)
    }
    expect(Buffer.concat(chunks).equals(Buffer.concat([...reads, Buffer.from('\r\n')]))).toBe(true)
    expect(byteLength).toBe(4 * READ + 2)
  })

  test('dot-stuffed lines and the final dot, split by the reads anywhere: the exact content and count', async () => {
    const line = fc.oneof(
      fc.constantFrom('', '.', '..', '.x', 'a.', '\r', '.\r', 'x\ny'),
      fc.stringMatching(/^[.a\r\n]{0,6}$/).filter((text) => !/\r\n|\n\./.test(text) && !text.endsWith('\r')),
    )
    await fc.assert(
      fc.asyncProperty(
        fc.array(line, { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        async (lines, cuts) => {
          const wire = onTheWire(lines)
          const { chunks, byteLength } = await receive(split(wire, cuts))
          const got = Buffer.concat(chunks)
          expect(got.toString('latin1')).toBe(content(lines).toString('latin1'))
          expect(byteLength).toBe(got.length)
        },
      ),
      { numRuns: 400 },
    )
  })
})
