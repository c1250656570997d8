/**
 * List reads alone, for trying a change quickly: a fresh server (the bundle, as
 * `bun run bench` runs it) with one inbox of 50 stored messages, then
 * `GET /v1/inboxes/{id}/messages?limit=50` at the bench's concurrency, in rounds.
 *
 *   bun run build && bun bench/tools/list-reads.ts 5
 */
import { httpLoad } from '../lib/http-load.ts'
import { buildShapes, headersFor } from '../lib/messages.ts'
import { PigeonholeApi } from '../lib/pigeonhole-api.ts'
import { SmtpClient } from '../lib/smtp-client.ts'
import { startPigeonhole } from '../lib/targets.ts'
import { CONCURRENCY, LIST_SIZE } from '../phases/reads.ts'

const rounds = Number(process.argv[2] ?? 5)
const server = await startPigeonhole()
try {
  const api = new PigeonholeApi(server.base, server.key)
  const inbox = await api.createInbox()
  const shape = buildShapes().text_2kb
  const client = await SmtpClient.connect(server.smtpPort)
  for (let i = 0; i < LIST_SIZE; i++)
    await client.send('sender@bench.example', inbox.address, headersFor(shape, inbox.address), shape.body)
  client.close()
  const url = `${api.base}/v1/inboxes/${inbox.id}/messages?limit=${LIST_SIZE}`
  await httpLoad(url, { headers: api.headers, concurrency: CONCURRENCY, durationMs: 1000 })
  const rates: number[] = []
  for (let round = 0; round < rounds; round++)
    rates.push((await httpLoad(url, { headers: api.headers, concurrency: CONCURRENCY, durationMs: 2000 })).perSecond)
  console.log(
    `list ${LIST_SIZE} messages: ${rates.map((r) => Math.round(r)).join(', ')} req/s (median ${Math.round(rates.toSorted((a, b) => a - b)[Math.floor(rates.length / 2)]!)})`,
  )
} finally {
  await server.child.stop()
}
