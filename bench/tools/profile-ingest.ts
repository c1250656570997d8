/**
 * Profiles one ingest shape: the server (from source, so names are readable) under Bun's
 * CPU profiler while 8 connections send that shape for a few seconds, and, separately,
 * parseMail in this process (the parse worker's work, which the server's profile does not
 * include). Writes Markdown profiles to BENCH_CPU_PROF_DIR (default: a temp dir).
 *
 *   bun bench/tools/profile-ingest.ts text_2kb 5
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config.ts'
import { parseMail } from '../../src/core/inbound/parse.ts'
import { headersFor, buildShapes, type ShapeName } from '../lib/messages.ts'
import { PigeonholeApi } from '../lib/pigeonhole-api.ts'
import { ingestRound } from '../phases/ingest.ts'
import { startPigeonhole } from '../lib/targets.ts'

const shapeName = (process.argv[2] ?? 'text_2kb') as ShapeName
const seconds = Number(process.argv[3] ?? 5)
const shape = buildShapes()[shapeName]
if (!shape) throw new Error(`unknown shape ${shapeName}`)
if (!process.argv.includes('--no-prof'))
  process.env.BENCH_CPU_PROF_DIR ??= mkdtempSync(join(tmpdir(), 'pigeonhole-profile-'))
process.env.BENCH_SERVER_ENTRY ??= 'src/index.ts'

if (process.argv.includes('--parse')) {
  // In-process parse loop (run this script itself with --cpu-prof to profile it).
  const limits = loadConfig({ RECEIVING_DOMAIN: 'bench.test' }).limits
  const raw = Buffer.from(headersFor(shape, 'x@bench.test') + shape.body + '\r\n')
  const deadline = performance.now() + seconds * 1000
  let n = 0
  while (performance.now() < deadline) {
    await parseMail(Buffer.from(raw), 'sender@bench.example', limits)
    n++
  }
  console.log(
    `parseMail ${shape.label}: ${((seconds * 1000) / n).toFixed(3)} ms per message (${n} in ${seconds} s, one thread)`,
  )
} else {
  const server = await startPigeonhole()
  const api = new PigeonholeApi(server.base, server.key)
  const target = {
    name: 'pigeonhole',
    pid: server.child.pid,
    smtpPort: server.smtpPort,
    async prepare() {
      const inbox = await api.createInbox()
      return { to: inbox.address, stored: () => api.countMessages(inbox.id) }
    },
  }
  const result = await ingestRound(target, shape, seconds * 1000)
  await server.stop()
  console.log(
    `${shape.label}: ${Math.round(result.perSecond)} msg/s, ${result.cpuMsPerMessage.toFixed(2)} ms CPU/msg (all threads), ${result.mainThreadCpuMsPerMessage.toFixed(2)} on the main thread; profile in ${process.env.BENCH_CPU_PROF_DIR}`,
  )
}
