/**
 * How much of a paused sender's DATA the patched smtp-server parser keeps. Bun reads a socket
 * in chunks of up to 512 KiB, and the spool pauses the data stream while it writes one: the
 * parser must not take the next read while the stream is paused (upstream would park it in
 * the stream's buffer and let a third one in), and it must not keep a whole read alive
 * through the four bytes it holds back to find the final dot. With 200 senders waiting for
 * the disk, each extra read held is 100 MiB. The parser is driven directly: the listener
 * never shows how many reads it holds.
 */
import { describe, expect, test } from 'bun:test'
import { SMTPStream } from 'smtp-server/lib/smtp-stream.js'
import { until } from '../support/wait.ts'

const READ = 512 * 1024

/** A parser in data mode, as smtp-server drives it after `354`. */
function dataMode() {
  const parser = new SMTPStream()
  const stream = parser.startDataMode(Number.POSITIVE_INFINITY)
  return { parser, stream }
}

/** Writes `chunk` into the parser; the promise settles when the parser is ready for the next one. */
const write = (parser: SMTPStream, chunk: Buffer) => new Promise<void>((taken) => parser.write(chunk, () => taken()))

describe('smtp-server parser in data mode (patched)', () => {
  test('does not ask for the next read while the consumer has the data stream paused', async () => {
    const { parser, stream } = dataMode()
    const seen: number[] = []
    stream.on('data', (chunk: Buffer) => {
      seen.push(chunk.length)
      stream.pause() // as the spool does while it writes the chunk
    })
    let ready = false
    const first = write(parser, Buffer.alloc(READ, 0x61)).then(() => {
      ready = true
    })
    await until(() => seen.length > 0, 'the consumer to get the read')
    await Bun.sleep(50) // proves nothing happens: the write stays unfinished while the stream is paused
    expect(seen).toEqual([READ - 4]) // the consumer has the read, less the four bytes held back
    expect(ready).toBe(false) // so the socket stays paused: nothing else is read meanwhile
    stream.resume()
    await first
    expect(ready).toBe(true)
    parser.end()
  })

  test('a consumer that never pauses is fed read after read, and the message ends at the dot', async () => {
    const { parser, stream } = dataMode()
    let bytes = 0
    stream.on('data', (chunk: Buffer) => {
      bytes += chunk.length
    })
    const ended = new Promise((resolve) => stream.on('end', resolve))
    for (let i = 0; i < 4; i++) await write(parser, Buffer.alloc(READ, 0x62))
    // The dot's write completes only once the application lets the parser continue, as smtp-server does after its reply.
    const dot = write(parser, Buffer.from('\r\n.\r\n'))
    await ended
    expect(bytes).toBe(4 * READ + 2)
    parser.continue()
    await dot
    parser.end()
  })

  test('the bytes held back to find the final dot are a copy, not a view that keeps the whole read', async () => {
    const { parser, stream } = dataMode()
    stream.resume()
    const chunk = Buffer.alloc(READ, 0x63)
    await write(parser, chunk)
    const held = (parser as unknown as { _lastBytes: Buffer })._lastBytes
    expect(held.toString()).toBe('cccc')
    expect(held.buffer).not.toBe(chunk.buffer)
    parser.end()
  })
})
