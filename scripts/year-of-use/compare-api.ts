/**
 * Reads every inbox the year-of-use database holds through the API of a server started in
 * this process, once on the SQLite file and once on its PostgreSQL copy: every page of every
 * list, every message in full, every attachment's bytes, hashed in order. Equal hashes mean
 * the copy serves exactly what the original served (download links, which name the serving
 * address, made host-free).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/log.ts'
import type { YearOfUse } from './generate.ts'

export interface ApiReading {
  messages: number
  attachments: number
  sha256: string
}

const hostFree = (text: string) => text.replace(/http:\/\/(localhost|127\.0\.0\.1):\d+/g, 'BASE')

/** `databaseUrl` empty: the SQLite file itself; otherwise that PostgreSQL database. */
export async function readThroughApi(year: YearOfUse, databaseUrl: string): Promise<ApiReading> {
  const dir = mkdtempSync(join(tmpdir(), 'pigeonhole-year-read-'))
  const databasePath = databaseUrl ? join(dir, 'unused.db') : year.databasePath
  const config = loadConfig({
    ...year.env,
    DATABASE_PATH: databasePath,
    DATABASE_URL: databaseUrl,
    PORT: '0',
    SMTP_PORT: '0',
    HOST: '127.0.0.1',
  })
  const app = await startApp({ config, logger: createLogger('error', () => {}) })
  const hash = new Bun.CryptoHasher('sha256')
  const reading = { messages: 0, attachments: 0 }
  try {
    for (const inbox of year.inboxes) {
      const get = async (path: string) => {
        const response = await fetch(`${app.httpUrl}${path}`, {
          headers: { authorization: `Bearer ${year.keys[inbox.organizationId]}` },
        })
        if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}`)
        return response
      }
      let cursor: string | null = null
      do {
        const text = hostFree(
          await (await get(`/v1/inboxes/${inbox.id}/messages?limit=100${cursor ? `&cursor=${cursor}` : ''}`)).text(),
        )
        hash.update(text)
        const page = JSON.parse(text) as { data: { id: string }[]; next_cursor: string | null }
        for (const { id } of page.data) {
          const message = hostFree(await (await get(`/v1/messages/${id}`)).text())
          hash.update(message)
          reading.messages++
          for (const attachment of (JSON.parse(message) as { data: { attachments: { id: string }[] } }).data
            .attachments) {
            hash.update(new Uint8Array(await (await get(`/v1/attachments/${attachment.id}`)).arrayBuffer()))
            reading.attachments++
          }
        }
        cursor = page.next_cursor
      } while (cursor)
    }
  } finally {
    await app.stop()
    rmSync(dir, { recursive: true, force: true })
  }
  return { ...reading, sha256: hash.digest('hex') }
}
