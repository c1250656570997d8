/** The layers stay apart: the domain knows no transport, storage knows nothing above it. */
import { expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const SRC = join(import.meta.dir, '..', '..', 'src')

/**
 * Every import of every .ts and .tsx file under `folder` (relative to src/; '' for all of it), resolved to a src-relative path or left as a package name.
 * Static imports and re-exports, side-effect imports (`import './x.ts'`) and dynamic ones (`import('./x.ts')`): a module
 * loaded late or only for its effects is still a dependency.
 */
async function importsUnder(folder: string): Promise<Array<{ file: string; target: string }>> {
  const found: Array<{ file: string; target: string }> = []
  for await (const file of new Bun.Glob(`${folder ? `${folder}/` : ''}**/*.{ts,tsx}`).scan({ cwd: SRC })) {
    const text = await Bun.file(join(SRC, file)).text()
    const specifiers = [
      ...[...text.matchAll(/^(?:import|export)[^'"]*?from '([^']+)'/gm)].map((m) => m[1]!),
      ...[...text.matchAll(/^import '([^']+)'/gm)].map((m) => m[1]!),
      ...[...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].map((m) => m[1]!),
    ]
    for (const specifier of specifiers) {
      const target = specifier.startsWith('.') ? relative(SRC, resolve(SRC, dirname(file), specifier)) : specifier
      found.push({ file, target })
    }
  }
  return found
}

/**
 * Everything above core, by src-relative path: the transports (the /v1 API, SMTP, the console, the
 * CLI and the web helpers under the API and the console), metrics and email routing beside them,
 * the composition root and the entries (server, CLI, the Docker image's start and its banner).
 */
const ABOVE_CORE =
  /^((http|smtp|console|cli|web|app|metrics|routing|deploy)\/|(app|cli|index|entry|startup-banner)\.ts$)/

test('src/core imports neither a transport library nor anything above it', async () => {
  const imports = await importsUnder('core')
  expect(imports.length).toBeGreaterThan(50)
  const crossing = imports.filter(
    ({ target }) => /^(elysia|@elysiajs\/|smtp-server)/.test(target) || ABOVE_CORE.test(target),
  )
  expect(crossing).toEqual([])
})

/**
 * What core may see of storage: the port (its interface, the areas under port/), the row types
 * it speaks in and keyset paging's SQL. Never an adapter, the SQLite schema or a mechanism of
 * one dialect (the file, its lock, the spool): those are the composition root's to wire.
 */
const PORT = /^storage\/(port\.ts|port\/[^/]+\.ts|rows\.ts|keyset\.ts)$/

test('src/core imports of storage only the port, its row types and keyset paging', async () => {
  const imports = await importsUnder('core')
  const storage = imports.filter(({ target }) => target.startsWith('storage/'))
  expect(storage.length).toBeGreaterThan(10)
  expect(storage.filter(({ target }) => !PORT.test(target))).toEqual([])
  // Said outright for the two adapters, whatever the pattern above comes to allow.
  expect(imports.filter(({ target }) => /^storage\/(sqlite|postgres)\//.test(target))).toEqual([])
})

test("no Services.storage: core holds the port, never a dialect's handle", async () => {
  const reaching: string[] = []
  for await (const file of new Bun.Glob('core/**/*.ts').scan({ cwd: SRC })) {
    const code = (await Bun.file(join(SRC, file)).text()).replace(/^\s*(\/\/|\*|\/\*).*$/gm, '') // comments may name it
    if (/\.storage\b|\bstorage:/.test(code)) reaching.push(file)
  }
  expect(reaching).toEqual([])
})

test('the port imports nothing of an adapter but the row types it names after the SQLite schema', async () => {
  const imports = (await importsUnder('storage')).filter(({ file }) => PORT.test(file))
  const adapters = imports.filter(({ target }) => /^storage\/(sqlite|postgres)\//.test(target))
  // rows.ts: the rows have the SQLite schema's shapes in both dialects; a type, never code.
  expect(adapters).toEqual([{ file: 'storage/rows.ts', target: 'storage/sqlite/schema.ts' }])
  expect(await Bun.file(join(SRC, 'storage/rows.ts')).text()).toContain(
    "import type * as schema from './sqlite/schema.ts'",
  )
})

test("one place opens the database: src/app/backend.ts (with PostgreSQL mode's parts), for the server and the CLI alike", async () => {
  const OPENERS =
    /\b(openStorage|createSqliteStore|createPostgresStore|openPostgres|migratePostgres|lockServerDatabase|openPostgresParts)\b/
  const opening: string[] = []
  for await (const file of new Bun.Glob('**/*.{ts,tsx}').scan({ cwd: SRC })) {
    if (file.startsWith('storage/')) continue
    const code = (await Bun.file(join(SRC, file)).text()).replace(/^\s*(\/\/|\*|\/\*).*$/gm, '') // comments may name them
    if (OPENERS.test(code)) opening.push(file)
  }
  expect(opening.sort()).toEqual(['app/backend.ts', 'app/postgres/parts.ts'])
  // Both composition roots call it.
  for (const root of ['app/assemble.ts', 'cli.ts'])
    expect({ root, opens: /\bopenBackend\(/.test(await Bun.file(join(SRC, root)).text()) }).toEqual({
      root,
      opens: true,
    })
})

test('src/storage imports nothing above it: neither core nor anything over core', async () => {
  const imports = await importsUnder('storage')
  expect(imports.length).toBeGreaterThan(3)
  const crossing = imports.filter(({ target }) => target.startsWith('core/') || ABOVE_CORE.test(target))
  expect(crossing).toEqual([])
})

test('the layer patterns name real places (a renamed folder cannot slip out of the rules)', () => {
  for (const place of [
    'http/',
    'smtp/',
    'console/',
    'cli/',
    'web/',
    'app/',
    'metrics/',
    'routing/',
    'deploy/',
    'app.ts',
    'cli.ts',
    'index.ts',
    'entry.ts',
    'startup-banner.ts',
  ]) {
    expect({ place, above: ABOVE_CORE.test(place) }).toEqual({ place, above: true })
  }
  // Every folder of src/ is placed: core, storage, or above core.
  const folders = readdirSync(SRC, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `${entry.name}/`)
  expect(folders.filter((folder) => !['core/', 'storage/'].includes(folder) && !ABOVE_CORE.test(folder))).toEqual([])
})

test('src/core holds folders only, each of a kind a newcomer can place new code by', () => {
  const entries = readdirSync(join(SRC, 'core'), { withFileTypes: true })
  // A loose file has no kind: its rule belongs to the folder of what it is about, to limits/,
  // to runtime/ (watchers of the running machine) or to common/ (what every verb speaks).
  expect(entries.filter((entry) => !entry.isDirectory()).map((entry) => entry.name)).toEqual([])
  const kinds = [
    'api-keys',
    'attachments',
    'audit',
    'common',
    'inbound',
    'inboxes',
    'limits',
    'members',
    'messages',
    'organizations',
    'runtime',
    'sessions',
    'users',
  ]
  expect(entries.map((entry) => entry.name).sort()).toEqual(kinds)
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
  const crossing = [
    ...core.filter(({ target }) => target.startsWith('metrics/')),
    ...metrics.filter(({ target }) => target.startsWith('core/')),
  ]
  expect(crossing).toEqual([])
})

test('src/http and src/console import nothing from each other; what both need is in src/web', async () => {
  const http = await importsUnder('http')
  const consoleImports = await importsUnder('console')
  expect(consoleImports.length).toBeGreaterThan(50)
  const crossing = [
    ...http.filter(({ target }) => target.startsWith('console/')),
    ...consoleImports.filter(({ target }) => target.startsWith('http/')),
  ]
  expect(crossing).toEqual([])
  // src/web is the layer under both: it knows neither.
  const web = await importsUnder('web')
  expect(web.filter(({ target }) => /^(http|console|smtp)\//.test(target))).toEqual([])
})

test('src/smtp/self-signed.ts does not import tls.ts, which imports it', async () => {
  const smtp = await importsUnder('smtp')
  expect(smtp).toContainEqual({ file: 'smtp/tls.ts', target: 'smtp/self-signed.ts' })
  expect(smtp.filter(({ file, target }) => file === 'smtp/self-signed.ts' && target === 'smtp/tls.ts')).toEqual([])
})

/** The strongly connected groups of more than one file (Tarjan), each sorted: every group holds at least one cycle. */
function cyclicGroups(graph: Map<string, string[]>): string[][] {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const groups: string[][] = []
  const visit = (file: string) => {
    index.set(file, next)
    low.set(file, next)
    next++
    stack.push(file)
    onStack.add(file)
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target)
        low.set(file, Math.min(low.get(file)!, low.get(target)!))
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!))
    }
    if (low.get(file) !== index.get(file)) return
    const group: string[] = []
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      group.push(member)
    } while (member !== file)
    if (group.length > 1 || (graph.get(file) ?? []).includes(file)) groups.push(group.sort())
  }
  for (const file of graph.keys()) if (!index.has(file)) visit(file)
  return groups
}

/**
 * Every import that runs code when its module loads, src-relative: `import type` and
 * `export type` are left out. Services names the type of every part it holds, and those
 * parts name Services in turn, so type-only loops are the shape of the hub, not an order
 * in which modules load.
 */
async function valueImports(): Promise<Array<{ file: string; target: string }>> {
  const found: Array<{ file: string; target: string }> = []
  for await (const file of new Bun.Glob('**/*.{ts,tsx}').scan({ cwd: SRC })) {
    const text = await Bun.file(join(SRC, file)).text()
    for (const [, typeOnly, specifier] of text.matchAll(/^(?:import|export)(\s+type\b)?[^'"]*?from '([^']+)'/gm)) {
      if (!typeOnly && specifier!.startsWith('.'))
        found.push({ file, target: relative(SRC, resolve(SRC, dirname(file), specifier!)) })
    }
  }
  return found
}

test('no import cycle anywhere in src/ among the imports that load code', async () => {
  const imports = await valueImports()
  const graph = new Map<string, string[]>()
  for (const { file, target } of imports) graph.set(file, [...(graph.get(file) ?? []), target])
  expect(graph.size).toBeGreaterThan(100)
  expect(cyclicGroups(graph)).toEqual([])
})

test('the console and the CLI commands reach storage only through core verbs', async () => {
  // The CLI's entry (src/cli.ts) opens the database and so imports storage; its commands do not.
  const imports: Array<{ file: string; target: string }> = []
  for await (const file of new Bun.Glob('{console,cli}/**/*.{ts,tsx}').scan({ cwd: SRC })) {
    const text = await Bun.file(join(SRC, file)).text()
    for (const [, specifier] of text.matchAll(/^(?:import|export)[^'"]*?from '([^']+)'/gm)) {
      if (specifier!.startsWith('.'))
        imports.push({ file, target: relative(SRC, resolve(SRC, dirname(file), specifier!)) })
    }
  }
  expect(imports.filter(({ target }) => target.startsWith('core/')).length).toBeGreaterThan(20)
  expect(imports.filter(({ target }) => target.startsWith('storage/'))).toEqual([])
})

test('the console and the CLI commands reach the database only through core verbs (no .storage)', async () => {
  // The CLI's entry (src/cli.ts) opens and closes the database; the commands get it inside the services they pass on.
  const reaching: string[] = []
  for await (const file of new Bun.Glob('{console,cli}/**/*.{ts,tsx}').scan({ cwd: SRC })) {
    const code = (await Bun.file(join(SRC, file)).text()).replace(/^\s*(\/\/|\*|\/\*).*$/gm, '') // comments may name it
    if (/\.storage\b/.test(code)) reaching.push(file)
  }
  expect(reaching).toEqual([])
})

test('only core and storage open a transaction: a transport or the composition root calls a verb, which opens its own', async () => {
  const opening: string[] = []
  for await (const file of new Bun.Glob('**/*.{ts,tsx}').scan({ cwd: SRC })) {
    if (file.startsWith('core/') || file.startsWith('storage/')) continue
    const code = (await Bun.file(join(SRC, file)).text()).replace(/^\s*(\/\/|\*|\/\*).*$/gm, '') // comments may name it
    // transaction(s, ...), transactionInGroup(...), storage.writeInGroup(...), storage.write((tx) => ...)
    if (/\b(transaction|transactionInGroup|writeInGroup)\(|\.write\(\s*\(?tx\b/.test(code)) opening.push(file)
  }
  expect(opening).toEqual([])
})
