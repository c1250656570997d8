/**
 * RSS of a fresh server (the bundle, as `bun run bench` runs it) idle, then after N stored
 * messages of one shape, split into anonymous and file-backed pages, and per thread CPU.
 * The memory phase of `bun run bench` alone, for trying a change quickly.
 *
 *   bun run build && bun bench/tools/rss-after-ingest.ts html_30kb 10000
 */
import { buildShapes, type ShapeName } from '../lib/messages.ts'
import { PigeonholeApi } from '../lib/pigeonhole-api.ts'
import { settledRss, waitQuiet } from '../lib/proc.ts'
import { sleep } from '../lib/stats.ts'
import { startPigeonhole } from '../lib/targets.ts'
import { fill } from '../phases/ingest.ts'

const shapeName = (process.argv[2] ?? 'html_30kb') as ShapeName
const total = Number(process.argv[3] ?? 10_000)
const shape = buildShapes()[shapeName]
if (!shape) throw new Error(`unknown shape ${shapeName}`)

const server = await startPigeonhole()
try {
  await sleep(1000)
  const idle = await settledRss(server.child.pid)
  const api = new PigeonholeApi(server.base, server.key)
  const inboxes = await Promise.all(Array.from({ length: 10 }, () => api.createInbox()))
  const stored = await fill(
    server.smtpPort,
    shape,
    inboxes.map((inbox) => inbox.address),
    total,
  )
  await waitQuiet(server.child.pid)
  const after = await settledRss(server.child.pid)
  const show = (label: string, r: typeof idle) =>
    `${label} ${r.rssMiB.toFixed(1)} MiB (${r.anonMiB.toFixed(1)} anonymous + ${r.fileMiB.toFixed(1)} file-backed)`
  console.log(`${shape.label}: ${show('idle', idle)}; after ${stored} messages ${show('', after)}`)
} finally {
  await server.child.stop()
}
