/**
 * `bun run bench:smtp-memory`: peak RSS of the production server under 200 parallel DATA
 * streams, each from its own client address (127.0.1.x, so the per-address guards do not
 * thin the flood out), with the shipped limits:
 *   1. over-size: 200 × 12 MiB messages (the limit is 10 MiB);
 *   2. legal and heavy: 200 × 9.4 MiB messages with two base64 attachments (5 + 2 MiB
 *      decoded), the most parsing work one message may ask for.
 * RSS is sampled from /proc every 20 ms and checked against the kernel's own high-water mark
 * (VmHWM, reset before each run); /health is polled throughout and its slowest answer
 * reported. The figures go to docs/internals/smtp-guards.md. Not part of
 * `bun run bench`: it moves 4 GB over loopback.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { createConnection } from 'node:net'
import { PigeonholeApi } from './lib/pigeonhole-api.ts'
import { rssMiB, settledRss } from './lib/proc.ts'
import { startPigeonhole } from './lib/targets.ts'

const MiB = 1024 * 1024
const STREAMS = Number(process.env.STREAMS ?? 200)
const log = (message: string) => console.error(`[smtp-memory] ${message}`)

function lines(bytes: number, line: string): string {
  return (line + '\r\n').repeat(Math.ceil(bytes / (line.length + 2)))
}

function oversize(to: string): Buffer {
  return Buffer.from(
    `From: flood@example.com\r\nTo: ${to}\r\nSubject: over-size\r\n\r\n${lines(12 * MiB, 'x'.repeat(998))}`,
  )
}

function heavyLegal(to: string): Buffer {
  const part = (name: string, decoded: number) =>
    [
      `--b`,
      'Content-Type: application/octet-stream',
      `Content-Disposition: attachment; filename="${name}"`,
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.alloc(decoded, name).toString('base64').replace(/.{76}/g, '$&\r\n'),
    ].join('\r\n')
  return Buffer.from(
    [
      `From: heavy@example.com`,
      `To: ${to}`,
      'Subject: heavy',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      'two attachments',
      part('a.bin', 5 * MiB),
      part('b.bin', 2 * MiB),
      '--b--',
      '',
    ].join('\r\n'),
  )
}

/** One SMTP transaction from `localAddress`; resolves with the reply code to the message (or to the first refusal). */
function send(port: number, localAddress: string, to: string, body: Buffer): Promise<number> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1', localAddress })
    const steps = ['EHLO bench.local', 'MAIL FROM:<bench@example.com>', `RCPT TO:<${to}>`, 'DATA']
    let buffered = ''
    let step = 0
    const finish = (code: number) => {
      socket.end('QUIT\r\n')
      socket.destroySoon?.()
      resolve(code)
    }
    socket.setEncoding('latin1')
    socket.on('error', () => resolve(-1))
    socket.on('data', (chunk: string) => {
      buffered += chunk
      for (let end = buffered.indexOf('\r\n'); end >= 0; end = buffered.indexOf('\r\n')) {
        const line = buffered.slice(0, end)
        buffered = buffered.slice(end + 2)
        if (line[3] === '-') continue
        const code = Number(line.slice(0, 3))
        if (step < steps.length) {
          if (code >= 400) return finish(code)
          socket.write(`${steps[step++]}\r\n`)
        } else if (step === steps.length) {
          if (code !== 354) return finish(code)
          step++
          socket.write(body)
          socket.write('\r\n.\r\n')
        } else return finish(code)
      }
    })
  })
}

function resetHighWater(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
  } catch {
    // not permitted here: the sampled peak still stands
  }
}
const highWaterMiB = (pid: number) =>
  Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024

/** Polls /health one request at a time until stopped; returns the slowest answer in ms. */
function healthProbe(base: string): () => Promise<number> {
  let running = true
  let slowest = 0
  const loop = (async () => {
    while (running) {
      const started = performance.now()
      await (await fetch(`${base}/health`)).arrayBuffer()
      slowest = Math.max(slowest, performance.now() - started)
      await Bun.sleep(50)
    }
  })()
  return async () => {
    running = false
    await loop
    return slowest
  }
}

async function run(name: string, pid: number, port: number, base: string, body: Buffer, to: string) {
  const before = (await settledRss(pid)).rssMiB
  resetHighWater(pid)
  let peak = rssMiB(pid)
  const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 20)
  const stopProbe = healthProbe(base)
  const started = performance.now()
  const codes = await Promise.all(Array.from({ length: STREAMS }, (_, i) => send(port, `127.0.1.${i + 1}`, to, body)))
  clearInterval(sampler)
  const slowestHealthMs = await stopProbe()
  const replies: Record<string, number> = {}
  for (const code of codes) replies[code] = (replies[code] ?? 0) + 1
  const result = {
    name,
    streams: STREAMS,
    message_mib: +(body.length / MiB).toFixed(2),
    rss_before_mib: +before.toFixed(1),
    peak_rss_mib: +Math.max(peak, highWaterMiB(pid)).toFixed(1),
    seconds: +((performance.now() - started) / 1000).toFixed(1),
    slowest_health_ms: Math.round(slowestHealthMs),
    replies,
  }
  log(JSON.stringify(result))
  return result
}

const server = await startPigeonhole()
try {
  const inbox = await new PigeonholeApi(server.base, server.key).createInbox()
  const results = [
    await run(
      'over-size 12 MiB',
      server.child.pid,
      server.smtpPort,
      server.base,
      oversize(inbox.address),
      inbox.address,
    ),
    await run(
      'legal 9.4 MiB, two attachments',
      server.child.pid,
      server.smtpPort,
      server.base,
      heavyLegal(inbox.address),
      inbox.address,
    ),
  ]
  console.log(
    JSON.stringify(
      { smtp_data_memory_mib: Number(process.env.SMTP_DATA_MEMORY_BYTES ?? 32 * MiB) / MiB, results },
      null,
      2,
    ),
  )
} finally {
  await server.stop()
}
