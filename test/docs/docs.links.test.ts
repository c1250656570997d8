/**
 * The documentation stays inside the repository: every relative link in a Markdown file
 * resolves to a file here, every repository path named in text exists, other links go only
 * to public https sites, and no file refers to material outside the repository or to
 * tracker issues.
 */
import { expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { RESERVED_LOCAL_PARTS } from '../../src/core/inboxes/local-part.ts'

const ROOT = join(import.meta.dir, '..', '..')
const tracked = Bun.spawnSync(['git', 'ls-files', '--cached', '--others', '--exclude-standard'], { cwd: ROOT })
  .stdout.toString()
  .trim()
  .split('\n')
const markdown = tracked.filter((file) => file.endsWith('.md'))

test('relative links resolve inside the repository; others are public https sites', () => {
  expect(markdown).toContain('README.md')
  const broken: string[] = []
  for (const file of markdown) {
    const text = readFileSync(join(ROOT, file), 'utf8')
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (target!.startsWith('#')) continue
      if (/^[a-z]+:/i.test(target!)) {
        if (!/^https:\/\/(?!localhost|127\.)[a-z0-9.-]+\.[a-z]{2,}(\/|$)/i.test(target!))
          broken.push(`${file}: ${target}`)
        continue
      }
      const path = resolve(ROOT, dirname(file), target!.split('#')[0]!)
      if (!path.startsWith(ROOT + '/') || !existsSync(path)) broken.push(`${file}: ${target}`)
    }
  }
  expect(broken).toEqual([])
})

test('no file refers to material outside the repository or to tracker issues', () => {
  const offenders: string[] = []
  for (const file of tracked) {
    if (
      file === 'bun.lock' ||
      file.endsWith('.lock') ||
      file.startsWith('test/fixtures/') ||
      file === 'test/docs/docs.links.test.ts'
    )
      continue
    const text = readFileSync(join(ROOT, file), 'utf8')
    for (const pattern of [
      /\.\.\/shared\b/,
      /\bshared\/spec\b/,
      /\bDESIGN\.md\b/,
      /\bSTACK-NOTES\b/,
      /\bissue #?\d+\b/i,
    ]) {
      if (pattern.test(text)) offenders.push(`${file}: ${pattern}`)
    }
  }
  expect(offenders).toEqual([])
})

test('every repository path named in docs, READMEs and code comments exists', () => {
  // A path in text (a backticked `src/...`, a comment's "see docs/...") is a link a reader
  // follows, but no compiler checks it: a moved file leaves it pointing nowhere. Paths are
  // read from the repository root or, as test/README.md names its files, from the file's folder.
  const PATH = /(?<![\w./-])((?:src|docs|test|bench|e2e|examples|scripts|deploy|drizzle)\/[\w./-]*\w)/g
  const stale: string[] = []
  for (const file of tracked) {
    if (!/\.(md|ts|tsx|js|yml|toml)$/.test(file) || file.startsWith('test/fixtures/') || file.startsWith('drizzle/'))
      continue
    const text = readFileSync(join(ROOT, file), 'utf8')
    for (const [, path] of text.matchAll(PATH)) {
      if (/^bench\/results\b/.test(path!)) continue // written by `bun run bench`, not committed
      if (!existsSync(join(ROOT, path!)) && !existsSync(join(ROOT, dirname(file), path!)))
        stale.push(`${file}: ${path}`)
    }
  }
  expect(stale).toEqual([])
})

test('the API reference names every error code, reserved name and SMTP reply', () => {
  const reference = readFileSync(join(ROOT, 'docs', 'api.md'), 'utf8')
  const smtp = readFileSync(join(ROOT, 'src', 'smtp', 'replies.ts'), 'utf8')
  const errorCodes = [
    ...readFileSync(join(ROOT, 'src', 'core', 'common', 'errors.ts'), 'utf8').matchAll(/^ {2}\| '([a-z_]+)'/gm),
  ].map(([, code]) => code!)
  expect(errorCodes.length).toBeGreaterThan(20)
  const missing = [
    ...errorCodes.map((code) => `\`${code}\``),
    ...[...RESERVED_LOCAL_PARTS].map((name) => `\`${name}\``),
    ...[...smtp.matchAll(/code: (\d{3}), text: '([^']+)'/g)].map(([, code, text]) => `${code} ${text}`),
  ].filter((needle) => !reference.includes(needle))
  expect(missing).toEqual([])
})

test('the README stays a short guide', () => {
  expect(readFileSync(join(ROOT, 'README.md')).length).toBeLessThan(16_000)
})
