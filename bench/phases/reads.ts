/**
 * API reads with one load tool and one concurrency against every target, alternating
 * the targets round by round: Pigeonhole's list of 50 and getInbox, maildev's list of
 * the same 50 messages, and a bare Bun.serve returning the same bodies byte for byte.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { httpLoad, type LoadResult } from '../lib/http-load.ts'
import { headersFor, type Shape } from '../lib/messages.ts'
import type { PigeonholeApi } from '../lib/pigeonhole-api.ts'
import { waitQuiet } from '../lib/proc.ts'
import { SmtpClient } from '../lib/smtp-client.ts'
import { startBareHttp, tempDir, type MaildevProcess } from '../lib/targets.ts'

export const CONCURRENCY = 16
export const LIST_SIZE = 50

export interface ReadRound extends LoadResult {
  target: string
  endpoint: 'list' | 'get_inbox'
  round: number
}

async function sendMany(smtpPort: number, to: string, shape: Shape, count: number): Promise<void> {
  const client = await SmtpClient.connect(smtpPort)
  for (let i = 0; i < count; i++) {
    const reply = await client.send('sender@bench.example', to, headersFor(shape, to), shape.body)
    if (reply.code !== 250) throw new Error(`reads: SMTP ${reply.code} ${reply.text}`)
  }
  client.close()
}

export async function readsPhase(
  pigeonhole: { api: PigeonholeApi; smtpPort: number; pid: number },
  maildev: MaildevProcess,
  shape: Shape,
  options: { rounds: number; durationMs: number; warmUpMs: number },
): Promise<ReadRound[]> {
  const { api } = pigeonhole
  const inbox = await api.createInbox()
  await sendMany(pigeonhole.smtpPort, inbox.address, shape, LIST_SIZE)
  await maildev.clear()
  await sendMany(maildev.smtpPort, 'reads@bench.test', shape, LIST_SIZE)
  await waitQuiet(maildev.child.pid)
  if ((await maildev.count()) !== LIST_SIZE) throw new Error('reads: maildev does not hold exactly the 50 messages')

  const listUrl = `${api.base}/v1/inboxes/${inbox.id}/messages?limit=${LIST_SIZE}`
  const getUrl = `${api.base}/v1/inboxes/${inbox.id}`
  // The ceiling serves exactly the bytes Pigeonhole answered with.
  const dir = tempDir('bodies')
  const files = await Promise.all(
    [listUrl, getUrl].map(async (url, i) => {
      const response = await fetch(url, { headers: api.headers })
      const body = await response.text()
      if (response.status !== 200) throw new Error(`reads: ${url} answered ${response.status}`)
      if (i === 0 && (JSON.parse(body) as { data: unknown[] }).data.length !== LIST_SIZE)
        throw new Error('reads: list did not return 50 messages')
      const file = join(dir, `${i}.json`)
      writeFileSync(file, body)
      return file
    }),
  )
  const bare = await startBareHttp(files)
  const runs: Array<{
    target: string
    endpoint: ReadRound['endpoint']
    url: string
    headers?: Record<string, string>
  }> = [
    { target: 'pigeonhole', endpoint: 'list', url: listUrl, headers: api.headers },
    { target: 'maildev', endpoint: 'list', url: `${maildev.base}/email` },
    { target: 'bare_bun_serve', endpoint: 'list', url: `${bare.base}/0` },
    { target: 'pigeonhole', endpoint: 'get_inbox', url: getUrl, headers: api.headers },
    { target: 'bare_bun_serve', endpoint: 'get_inbox', url: `${bare.base}/1` },
  ]
  const results: ReadRound[] = []
  try {
    for (let round = 1; round <= options.rounds; round++) {
      for (const run of runs) {
        await httpLoad(run.url, { concurrency: CONCURRENCY, durationMs: options.warmUpMs, headers: run.headers })
        const result = await httpLoad(run.url, {
          concurrency: CONCURRENCY,
          durationMs: options.durationMs,
          headers: run.headers,
        })
        if (result.errors > 0)
          throw new Error(`reads: ${result.errors} failed requests against ${run.target} ${run.endpoint}`)
        results.push({ target: run.target, endpoint: run.endpoint, round, ...result })
        console.error(`  reads round ${round} ${run.target} ${run.endpoint}: ${Math.round(result.perSecond)} req/s`)
      }
    }
  } finally {
    await bare.stop()
  }
  return results
}
