/**
 * `bun test` needs Bun alone: no file it runs drives a browser. Browser tests live in e2e/
 * (`bun run test:browser`, which `.ci/run` runs after installing Chromium).
 */
import { expect, test } from 'bun:test'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..', '..')

test('no test under test/ imports Playwright or launches Chromium', async () => {
  const offenders: string[] = []
  let scanned = 0
  for await (const file of new Bun.Glob('test/**/*.{ts,tsx}').scan({ cwd: ROOT })) {
    if (file === 'test/codebase/codebase.no-browser.test.ts') continue
    scanned++
    const text = await Bun.file(join(ROOT, file)).text()
    if (/from '@playwright\/test'|from 'playwright|chromium\.launch|CHROMIUM_PATH/.test(text)) offenders.push(file)
  }
  expect(scanned).toBeGreaterThan(100)
  expect(offenders).toEqual([])
})

test('the browser suite finds its tests where bun test does not look', async () => {
  const e2e = await Array.fromAsync(new Bun.Glob('e2e/*.e2e.ts').scan({ cwd: ROOT }))
  expect(e2e.sort()).toContain('e2e/openapi-page.e2e.ts')
  // bun test picks up *.test.* and *.spec.* files only; an e2e file named so would run under it.
  expect(e2e.filter((file) => /\.(test|spec)\./.test(file))).toEqual([])
})
