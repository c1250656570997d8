/**
 * A stop closes its listeners, and closing a listening socket resets every connection whose
 * handshake the kernel completed but the process had not accepted. The stop accepts its
 * backlog first; a handshake completed after that last accept and before the close was still
 * reset: the sender saw the connection open, then lost it before any greeting, which no proxy
 * can move elsewhere (a rolling restart failed a send that way). Now the listeners stop
 * completing new handshakes before that last accept (src/app/handshake-filter.ts), so every
 * connection is either served or refused at the socket.
 *
 * SMTP clients in this process open connections in a tight loop across each stop of a child
 * process that runs the server's listeners and drain (test/support/draining-listeners.ts): a
 * connection that opens must get its greeting; one that does not open must be refused. Both
 * stops, SQLite mode's and PostgreSQL mode's patient one, a few times each: before the change,
 * most stops cut a few connections. The HTTP listener gets the same filter, but HTTP is not
 * asserted here: Bun's stop also closes an accepted connection whose request it has not read
 * yet, which a proxy sends again to another machine (docs/scaling.md), so an HTTP connection
 * closed without an answer is not, by itself, this race.
 */
import { afterEach, expect, setDefaultTimeout, test } from 'bun:test'
import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { until } from '../support/wait.ts'

setDefaultTimeout(60_000)

const CHILD = join(import.meta.dir, '..', 'support', 'draining-listeners.ts')
/** Loops, each opening its next connection as soon as the last one was greeted. */
const LOOPS = 40
const STOPS = 8
/** Beyond this one attempt hangs (a refused SYN is answered after the client's 1 s retransmission). */
const ATTEMPT_MS = 10_000

type Outcome = 'answered' | 'refused' | 'cut' | 'failed'

/** One connection: its first bytes, a refusal, or a close without a byte (the reset). */
function attempt(port: number): Promise<{ outcome: Outcome; detail: string }> {
  return new Promise((resolve) => {
    let received = ''
    const timer = setTimeout(() => settle('failed', `no answer in ${ATTEMPT_MS} ms`), ATTEMPT_MS)
    let settled = false
    const settle = (outcome: Outcome, detail: string) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve({ outcome, detail })
    }
    Bun.connect({
      hostname: '127.0.0.1',
      port,
      socket: {
        // The first bytes are the answer: the next connection opens at once, without waiting for the close.
        data: (socket, chunk) => {
          received += chunk.toString()
          settle('answered', received.split('\r\n')[0] ?? '')
          socket.end()
        },
        close: () => settle('cut', ''),
        error: () => {},
      },
    }).catch((error: NodeJS.ErrnoException) =>
      settle(error.code === 'ECONNREFUSED' ? 'refused' : 'failed', `${error.code}: ${error.message}`),
    )
  })
}

const children = new Set<ChildProcess>()
afterEach(() => {
  for (const child of children) child.kill('SIGKILL')
  children.clear()
})

async function stopUnderTraffic(mode: 'drain' | 'patient') {
  const started = spawn(process.execPath, [CHILD, mode], { stdio: ['ignore', 'pipe', 'inherit'] })
  children.add(started)
  const ports = await new Promise<{ http: number; smtp: number }>((resolve, reject) => {
    started.stdout!.once('data', (line: Buffer) => resolve(JSON.parse(line.toString())))
    started.once('exit', (code) => reject(new Error(`draining-listeners exited (${code}) before listening`)))
  })
  const outcomes: Record<Outcome, number> = { answered: 0, refused: 0, cut: 0, failed: 0 }
  const problems: string[] = []
  const loop = async (port: number, name: string) => {
    for (;;) {
      const { outcome, detail } = await attempt(port)
      outcomes[outcome]++
      if (outcome === 'cut' || outcome === 'failed') problems.push(`${name}: ${outcome} ${detail}`)
      if (outcome === 'refused' || outcome === 'failed') return
    }
  }
  const loops = Array.from({ length: LOOPS }, (_, i) => loop(ports.smtp, `loop ${i}`))
  // Traffic runs before the stop begins, so the stop lands among connections being opened.
  await until(() => outcomes.answered >= 2 * LOOPS, 'connections to be answered before the stop', {
    timeoutMs: 10_000,
    intervalMs: 5,
  })
  const exited = new Promise<number | null>((resolve) => started.once('exit', resolve))
  started.kill('SIGTERM')
  await Promise.all(loops)
  expect(await exited).toBe(0)
  return { outcomes, problems }
}

// The kernel is told to stop completing handshakes only on Linux (a socket filter); elsewhere
// the stop is as it was, and the race this file proves closed is still open.
const onLinux = process.platform === 'linux'
if (!onLinux) console.warn('skipped: the stop-handshakes tests (the socket filter they prove is Linux-only)')

for (const mode of ['drain', 'patient'] as const) {
  test.skipIf(!onLinux)(
    `${mode === 'drain' ? "SQLite mode's stop" : "PostgreSQL mode's patient stop"} greets or refuses every SMTP connection opened across it, cutting none before its greeting (${STOPS} stops)`,
    async () => {
      // Side by side: a connection the stop refuses is refused after the client's 1 s
      // retransmission, which the stops then wait out together.
      const stops = await Promise.all(Array.from({ length: STOPS }, () => stopUnderTraffic(mode)))
      for (const [stop, { outcomes, problems }] of stops.entries()) {
        expect(problems, `stop ${stop}: ${JSON.stringify(outcomes)}`).toEqual([])
        // Every loop ran until the listeners closed: each ended refused.
        expect(outcomes.refused).toBe(LOOPS)
      }
    },
  )
}
