/**
 * The largest legal message (9.86 MiB raw, about 17 MiB of blob rows) holds no turn of the
 * event loop for more than 15 ms of main-thread CPU (the goal: 25 ms on a quiet machine;
 * LARGEST_MESSAGE_TURN_BOUND_MS says why the test holds less) while the server receives and stores it,
 * and `/health` answers meanwhile: its blobs are written on the stager's thread before the
 * message's transaction (src/storage/sqlite/blob-stager.ts), which left that transaction at
 * 20–40 ms when it wrote them itself. The stored source is the bytes sent. The server runs in
 * a fresh process of its own (test/support/largest-message-probe.ts); a try over the bound
 * is made again, as in the corpus test (`measureWithin`).
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { LARGEST_MESSAGE_TURN_BOUND_MS, RESPONSIVE_BOUND_MS } from '../support/event-loop.ts'
import { describeForBackends } from '../support/harness.ts'

setDefaultTimeout(60_000)

describeForBackends(
  ['sqlite'],
  'the stager is the SQLite adapter’s; PostgreSQL writes its blobs in its own way',
  'the largest legal message',
  () => {
    test(`holds no event-loop turn over ${LARGEST_MESSAGE_TURN_BOUND_MS} ms of CPU, and is stored whole`, async () => {
      const probe = Bun.spawn(['bun', join(import.meta.dir, '..', 'support', 'largest-message-probe.ts')], {
        stdout: 'pipe',
        stderr: 'pipe',
        env: { ...process.env, PIGEONHOLE_TEST_BACKEND: 'sqlite' },
      })
      const [out, err, code] = await Promise.all([
        new Response(probe.stdout).text(),
        new Response(probe.stderr).text(),
        probe.exited,
      ])
      const line = out.split('\n').find((l) => l.startsWith('{'))
      if (code !== 0 || !line) throw new Error(`probe failed (${code}): ${err}`)
      const result = JSON.parse(line)
      console.error(
        `largest legal message: worst turn ${result.cpuMs.toFixed(1)} ms CPU, held ${result.heldMs.toFixed(1)} ms, /health ${result.healthMs.toFixed(1)} ms, ${result.tries} ${result.tries === 1 ? 'try' : 'tries'}`,
      )
      expect(result.reply).toStartWith('250 ')
      expect(result.sourceMatches).toBe(true)
      expect(result.cpuMs).toBeLessThanOrEqual(LARGEST_MESSAGE_TURN_BOUND_MS)
      expect(result.heldMs).toBeLessThan(RESPONSIVE_BOUND_MS)
      expect(result.healthMs).toBeLessThan(RESPONSIVE_BOUND_MS)
    })
  },
)
