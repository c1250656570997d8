/**
 * The goal for big messages in parallel, at full size: 200 senders of 9 MiB messages to a
 * server process inside a 512 MiB memory cgroup (the deployed machine's size). Every message
 * is stored, none is refused for memory, the process peaks at 384 MiB RSS at most with no
 * OOM kill, and a small message sent in the middle of the flood gets its 250 (committed)
 * within a second of connecting, and /health, asked from a process of its own throughout,
 * answers every time within a second. The goal is 100 ms on a quiet machine; on this shared
 * one the slowest answer was 100 ms at a load average of 4.8, 239 ms at 14.8 and 419 ms at
 * 10.3 (it follows the machine's load, not the flood), so the bound only catches the stalls of
 * seconds seen before. The spec's limits are raised for it through LIMIT_*.
 *
 * It moves about 1.8 GB over loopback and writes several GB to disk, which takes minutes on
 * a shared two-core machine, so `bun test` skips it; `bun run test:flood` (called by
 * .ci/run) runs it. Without root or a memory controller it is skipped with the reason. The
 * same run, with the disk's own write speed beside it, is the bench's "big-mail flood".
 */
import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { memoryCgroup, runBigMailFlood } from '../../bench/lib/big-mail-flood.ts'

const MiB = 1024 * 1024
const ROOT = join(import.meta.dir, '..', '..')
const requested = process.env.PIGEONHOLE_FLOOD_TEST === '1'
const cgroup = requested ? memoryCgroup(512 * MiB) : { skip: 'takes minutes; run it with `bun run test:flood`' }
const skip = 'skip' in cgroup ? cgroup.skip : null
if (skip) console.error(`big-mail flood skipped: ${skip}`)

test.skipIf(skip !== null)(
  '200 parallel 9 MiB messages in a 512 MiB cgroup: all stored, none refused for memory, peak RSS <= 384 MiB, a small one stored within 1 s, /health within 1 s',
  async () => {
    if ('skip' in cgroup) return
    try {
      const result = await runBigMailFlood({
        root: ROOT,
        entry: 'src/index.ts',
        cgroup,
        senders: 200,
        messageBytes: 9 * MiB,
        log: (line) => console.error(`[flood] ${line}`),
      })
      console.error(`[flood] ${JSON.stringify(result)}`)
      expect(result.server_alive).toBe(true)
      expect(result.oom_kills).toBe(0)
      expect(result.other_replies).toEqual({})
      expect(result.stored_replies).toBe(200)
      expect(result.refused_for_memory).toBe(0)
      expect(result.messages_listed).toBe(201) // the flood and the small message
      expect(result.peak_rss_mib).toBeLessThanOrEqual(384)
      expect(result.small_message_code).toBe(250)
      expect(result.small_message_ms).toBeLessThanOrEqual(1000)
      expect(result.spool_files_after).toBe(0)
      expect(result.slowest_health_ms).toBeGreaterThan(0) // the probe answered
      expect(result.slowest_health_ms).toBeLessThanOrEqual(1000)
    } finally {
      cgroup.remove()
    }
  },
  30 * 60_000,
)
