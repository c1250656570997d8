/**
 * What is dialect-neutral is written once (src/storage/columns.ts, src/storage/message-filters.ts,
 * the name lists of the port): an adapter picks its selections from those, so a column added to
 * a summary or to the limits reaches both dialects at once. The hot paths stay per adapter.
 */
import { expect, test } from 'bun:test'
import { join } from 'node:path'

const SRC = join(import.meta.dir, '..', '..', 'src')

async function adapterFiles(): Promise<Array<{ file: string; code: string }>> {
  const files: Array<{ file: string; code: string }> = []
  for await (const file of new Bun.Glob('storage/{sqlite,postgres}/**/*.ts').scan({ cwd: SRC }))
    files.push({ file, code: await Bun.file(join(SRC, file)).text() })
  return files
}

test('no adapter lists the limit or summary columns by hand', async () => {
  const files = await adapterFiles()
  expect(files.length).toBeGreaterThan(20)
  // A selection entry such as `limitActiveInboxes: organizations.limitActiveInboxes` or `preview: messages.preview`.
  const listing = files
    .filter(({ code }) => /\blimit\w+: organizations\.limit\w+|\bpreview: messages\.preview\b/.test(code))
    .map(({ file }) => file)
  expect(listing).toEqual([])
})

test('no adapter spells out the message filters: both hand their dialect to message-filters.ts', async () => {
  const files = await adapterFiles()
  // The console-only size terms are in no prepared statement: they appear in the shared builder alone.
  const spelling = files
    .filter(({ code }) => /\.(largerThan|smallerThan) !== undefined/.test(code))
    .map(({ file }) => file)
  const using = files.filter(({ code }) => code.includes("from '../../message-filters.ts'")).map(({ file }) => file)
  expect({ spelling, using: using.sort() }).toEqual({
    spelling: [],
    using: ['storage/postgres/store/messages.ts', 'storage/sqlite/store/messages.ts'],
  })
})

test('both adapters have one skeleton: schema, store, transaction, and a store file per area of the port', async () => {
  const areas: string[] = []
  for await (const file of new Bun.Glob('storage/port/*.ts').scan({ cwd: SRC })) {
    const code = await Bun.file(join(SRC, file)).text()
    // An area is a file of the port declaring one of Store's parts (`…Store` interface).
    if (/export interface \w+Store\b/.test(code)) areas.push(file.replace('storage/port/', ''))
  }
  expect(areas.length).toBe(5)
  for (const adapter of ['sqlite', 'postgres']) {
    const expected = ['schema.ts', 'store.ts', 'transaction.ts', ...areas.map((area) => `store/${area}`)]
    const missing = expected.filter((file) => !Bun.file(join(SRC, 'storage', adapter, file)).size)
    expect({ adapter, missing }).toEqual({ adapter, missing: [] })
  }
  // No schema left above the adapters: each dialect's lives beside its adapter.
  expect(await Bun.file(join(SRC, 'storage', 'schema.ts')).exists()).toBe(false)
})
