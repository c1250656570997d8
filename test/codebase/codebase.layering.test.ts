/** The layers stay apart: the domain knows no transport, storage knows nothing above it. */
import { expect, test } from 'bun:test'
import { dirname, join, relative, resolve } from 'node:path'

const SRC = join(import.meta.dir, '..', '..', 'src')

/** Every import of every .ts file under `folder` (relative to src/), resolved to a src-relative path or left as a package name. */
async function importsUnder(folder: string): Promise<Array<{ file: string; target: string }>> {
  const found: Array<{ file: string; target: string }> = []
  for await (const file of new Bun.Glob(`${folder}/**/*.ts`).scan({ cwd: SRC })) {
    const text = await Bun.file(join(SRC, file)).text()
    for (const [, specifier] of text.matchAll(/^(?:import|export)[^'"]*?from '([^']+)'/gm)) {
      const target = specifier!.startsWith('.') ? relative(SRC, resolve(SRC, dirname(file), specifier!)) : specifier!
      found.push({ file, target })
    }
  }
  return found
}

test('src/core imports neither a transport library nor the transports', async () => {
  const imports = await importsUnder('core')
  expect(imports.length).toBeGreaterThan(50)
  const crossing = imports.filter(({ target }) => /^(elysia|@elysiajs\/|smtp-server)/.test(target) || /^(http|smtp)\//.test(target) || target === 'app.ts')
  expect(crossing).toEqual([])
})

test('src/storage imports nothing above it', async () => {
  const imports = await importsUnder('storage')
  expect(imports.length).toBeGreaterThan(3)
  const crossing = imports.filter(({ target }) => /^(core|http|smtp|routing)\//.test(target) || target === 'app.ts')
  expect(crossing).toEqual([])
})

/** The /v1 and inbound transports, with the web helpers they share with the console. */
const V1_AND_SMTP = ['http', 'smtp', 'web']

test('src/http and src/smtp import nothing from src/storage, not even a type', async () => {
  const imports = (await Promise.all(V1_AND_SMTP.map(importsUnder))).flat()
  expect(imports.length).toBeGreaterThan(50)
  const crossing = imports.filter(({ target }) => target.startsWith('storage/'))
  expect(crossing).toEqual([])
})

test('src/http and src/smtp reach the database only through core verbs (no services.storage)', async () => {
  const reaching: string[] = []
  for (const folder of V1_AND_SMTP) {
    for await (const file of new Bun.Glob(`${folder}/**/*.ts`).scan({ cwd: SRC })) {
      const code = (await Bun.file(join(SRC, file)).text()).replace(/^\s*(\/\/|\*|\/\*).*$/gm, '') // comments may name it
      // `.storage` as a whole word: s.storage.db, services.storage; s.storageHealth is core's.
      if (/\.storage\b/.test(code)) reaching.push(file)
    }
  }
  expect(reaching).toEqual([])
})

test('src/core and src/metrics import nothing from each other', async () => {
  const core = await importsUnder('core')
  const metrics = await importsUnder('metrics')
  expect(metrics.length).toBeGreaterThan(3)
  const crossing = [...core.filter(({ target }) => target.startsWith('metrics/')), ...metrics.filter(({ target }) => target.startsWith('core/'))]
  expect(crossing).toEqual([])
})
