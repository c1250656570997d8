/**
 * The examples where a user puts them: copied into a new project exactly as README.md (and
 * the example's own header) says, then run from that project's root with the user's own
 * command. Playwright must find the copied config there, or it runs with none: no browser
 * path from the environment, so it asks to download a browser. The `bun test` example must
 * find the client beside it. `bun test` drives no browser (test/codebase/codebase.no-browser.test.ts): here
 * Playwright only lists what it would run, with which settings; scripts/run-examples.ts
 * (.ci/run, with Chromium) runs the copied project in the browser.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type DemoApp, spawnDemoApp } from '../../examples/demo-app/spawn.ts'
import { copyAsReadmeSays, newProject } from '../support/example-project.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { testNeeding } from '../support/tools.ts'

// Each test runs a tool as a process (Playwright loading its config takes seconds on a busy machine): a deadline, not a speed.
setDefaultTimeout(60_000)

const ROOT = join(import.meta.dir, '..', '..')
let server: TestServer
let demo: DemoApp
beforeAll(async () => {
  server = await startTestServer()
  demo = await spawnDemoApp(server.app.smtpPort)
})
afterAll(async () => {
  await demo.stop()
  await server.stop()
})

/**
 * The user's shell, not this test's process: under `bun test --parallel` a worker carries
 * JEST_WORKER_ID (and BUN_TEST_WORKER_ID), and Playwright refuses to run inside what it then
 * takes for a Jest worker.
 */
const { JEST_WORKER_ID: _jest, BUN_TEST_WORKER_ID: _bun, ...userEnv } = process.env

async function run(cmd: string[], cwd: string, env: Record<string, string>) {
  const child = Bun.spawn(cmd, { cwd, env: { ...userEnv, ...env }, stdout: 'pipe', stderr: 'pipe' })
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ])
  return { code, stdout, stderr }
}

testNeeding('npx')(
  "the Playwright example copied as the README says: `npx playwright test` in the project's root uses its config",
  async () => {
    const project = newProject()
    try {
      copyAsReadmeSays(project, 'playwright')
      const listed = await run(['npx', 'playwright', 'test', '--list', '--reporter=json'], project.dir, {
        APP_URL: demo.url,
      })
      expect(`${listed.code}\n${listed.stderr}`).toBe('0\n')
      const report = JSON.parse(listed.stdout)
      expect(report.config.configFile).toBe(join(project.dir, 'playwright.config.ts'))
      // The copied config's settings: its test folder, its timeout, and the application from APP_URL.
      expect(report.config.filteredProjects[0]).toMatchObject({
        testDir: join(project.dir, 'playwright'),
        timeout: 30_000,
        use: { baseURL: demo.url },
      })
      expect(report.suites.map((suite: { file: string }) => suite.file)).toEqual(['signup.spec.ts'])
      expect(report.suites[0].specs.map((spec: { title: string }) => spec.title)).toEqual([
        'sign up, receive the welcome mail, confirm the address',
      ])
    } finally {
      project.cleanup()
    }
  },
)

test("the bun test example copied as its header says, beside the client: `bun test` in the project's root passes", async () => {
  const project = newProject()
  try {
    mkdirSync(join(project.dir, 'tests')) // the user's suite folder
    // The header's own copy lines, as a user pastes them.
    const header = readFileSync(join(ROOT, 'examples', 'bun-signup.example.ts'), 'utf8')
    const steps = [...header.matchAll(/^ \* {3}(cp .*)$/gm)].map(([, line]) =>
      line!.replaceAll('path/to/pigeonhole', ROOT),
    )
    expect(steps).toHaveLength(2)
    for (const step of steps) expect((await run(['sh', '-c', step], project.dir, {})).code).toBe(0)

    const tenant = await server.tenant()
    const result = await run(['bun', 'test'], project.dir, {
      PIGEONHOLE_URL: server.url,
      PIGEONHOLE_KEY: tenant.key,
      APP_URL: demo.url,
    })
    expect(`${result.code}\n${result.stderr}`).toContain('0\n')
    expect(result.stderr).toContain('tests/signup.test.ts')
    expect(result.stderr).toContain(' 2 pass')
    expect((await server.get('/v1/inboxes', tenant.key)).body.data).toEqual([])
  } finally {
    project.cleanup()
  }
})
