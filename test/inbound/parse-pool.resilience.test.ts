/**
 * The parse pool: bytes move to the worker and back without a copy, a message past its
 * time budget is refused and its worker replaced, a worker that dies is replaced, and a
 * worker script that cannot start fails messages instead of respawning forever.
 */
import { afterEach, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config.ts'
import { ParsePool } from '../../src/core/inbound/parse-pool.ts'
import { InboundRefusal } from '../../src/core/inbound/refusal.ts'
import { createLogger } from '../../src/log.ts'

const { limits } = loadConfig({})
const MISBEHAVING = new URL('../support/fakes/misbehaving-parse-worker.ts', import.meta.url)
let pool: ParsePool | undefined
afterEach(() => pool?.close())

function newPool(options: { size?: number; timeoutMs?: number; workerUrl?: URL } = {}) {
  const logs: Array<Record<string, unknown>> = []
  pool = new ParsePool({
    size: options.size ?? 2,
    timeoutMs: options.timeoutMs ?? 5_000,
    workerUrl: options.workerUrl,
    logger: createLogger('debug', (line) => logs.push(JSON.parse(line))),
  })
  return { pool, logs }
}

const refusalOf = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (error: unknown) => (error instanceof InboundRefusal ? error.reason : `not a refusal: ${error}`),
  )

test('the raw bytes are transferred to the worker and come back intact, attachments included', async () => {
  const { pool } = newPool()
  const text =
    'From: a@example.com\r\nSubject: moved\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nhello\r\n--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename="x.bin"\r\nContent-Transfer-Encoding: base64\r\n\r\nAAECAw==\r\n--b--\r\n'
  const raw = Buffer.from(new TextEncoder().encode(text))
  const outcome = await pool.parse(raw, 'env@example.com', limits)
  expect(raw.byteLength).toBe(0) // handed over: the caller's view is detached, not copied
  expect(outcome.raw.toString('latin1')).toBe(text)
  expect(outcome.mail).toMatchObject({ subject: 'moved', fromAddress: 'a@example.com', preview: 'hello' })
  expect(Buffer.isBuffer(outcome.mail.attachments[0]!.content)).toBe(true)
  expect([...outcome.mail.attachments[0]!.content]).toEqual([0, 1, 2, 3])
})

test('a view into a larger buffer is copied, leaving the rest of that buffer usable', async () => {
  const { pool } = newPool()
  const backing = Buffer.from('xxFrom: a@example.com\r\nSubject: sliced\r\n\r\nbody\r\nyy')
  const outcome = await pool.parse(backing.subarray(2, -2), '', limits)
  expect(outcome.mail.subject).toBe('sliced')
  expect(backing.toString()).toStartWith('xxFrom')
})

test('content refusals cross the thread boundary as refusals', async () => {
  const { pool } = newPool()
  const big = Buffer.from(`Subject: big\r\n\r\n${'z'.repeat(limits.bodyBytes + 1)}\r\n`)
  expect(await refusalOf(pool.parse(big, '', limits))).toBe('body_too_large')
})

test('at most `size` workers, started on demand; messages beyond wait their turn in order', async () => {
  const { pool } = newPool({ size: 2, workerUrl: MISBEHAVING })
  expect(pool.workers).toBe(0)
  const outcomes = await Promise.all(
    Array.from({ length: 7 }, (_, i) => pool.parse(Buffer.alloc(i + 1), `s${i}`, limits)),
  )
  expect(outcomes.map((o) => o.mail.fromAddress)).toEqual(['s0', 's1', 's2', 's3', 's4', 's5', 's6'])
  expect(outcomes.map((o) => o.raw.byteLength)).toEqual([1, 2, 3, 4, 5, 6, 7])
  expect(pool.workers).toBe(2)
})

test('a message past its time budget is refused with parse_timeout; a fresh worker takes the slot', async () => {
  const { pool, logs } = newPool({ size: 1, timeoutMs: 100, workerUrl: MISBEHAVING })
  const hung = pool.parse(Buffer.alloc(3), 'hang', limits)
  const next = pool.parse(Buffer.alloc(4), 'after', limits) // queued behind the hung one
  expect(await refusalOf(hung)).toBe('parse_timeout')
  expect((await next).mail.fromAddress).toBe('after')
  expect(pool.workers).toBe(1)
  expect(logs.filter((line) => line.event === 'parse_timeout')).toEqual([
    expect.objectContaining({ size_bytes: 3, timeout_ms: 100 }),
  ])
})

test.each(['crash', 'exit'])(
  'a worker that dies (%s) fails only its message, as unparseable, and is replaced',
  async (how) => {
    const { pool, logs } = newPool({ size: 1, workerUrl: MISBEHAVING })
    const [dead, next] = [pool.parse(Buffer.alloc(1), how, limits), pool.parse(Buffer.alloc(2), 'after', limits)]
    expect(await refusalOf(dead)).toBe('unparseable')
    expect((await next).mail.fromAddress).toBe('after')
    expect(pool.workers).toBe(1)
    expect(logs.filter((line) => line.event === 'parse_worker_died')).toHaveLength(1)
  },
)

test('a worker script that cannot load fails the waiting messages with an error (a temporary failure), without respawning in a loop', async () => {
  const { pool, logs } = newPool({ workerUrl: new URL('./fixtures/no-such-worker.ts', import.meta.url) })
  const failed = await pool.parse(Buffer.alloc(1), '', limits).catch((error: unknown) => error)
  expect(failed).toBeInstanceOf(Error)
  expect(failed).not.toBeInstanceOf(InboundRefusal)
  expect(pool.workers).toBe(0) // a respawn would have started one at once
  expect(logs.filter((line) => line.event === 'parse_worker_died')).toHaveLength(1)
})

test('close fails what is queued and running, and refuses new work', async () => {
  const { pool } = newPool({ size: 1, workerUrl: MISBEHAVING })
  const running = pool.parse(Buffer.alloc(1), 'hang', limits).catch((error: unknown) => error)
  const queued = pool.parse(Buffer.alloc(1), 'queued', limits).catch((error: unknown) => error)
  pool.close()
  expect(await running).toBeInstanceOf(Error)
  expect(await queued).toBeInstanceOf(Error)
  expect(await pool.parse(Buffer.alloc(1), '', limits).catch((error: unknown) => error)).toBeInstanceOf(Error)
  expect(pool.workers).toBe(0)
})
