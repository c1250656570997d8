/**
 * Runs every example against a real server, as a user would: starts `bun src/index.ts` on
 * a fresh database and free ports, makes an organisation and key with the admin CLI, starts
 * the demo sign-up app, then runs the curl flow, the recommended flow, the bun test example
 * and the Playwright example, the last copied into a new project as README.md says and run
 * there with `npx playwright test` (CHROMIUM_PATH names the browser, e.g. /usr/bin/chromium).
 *
 *   CHROMIUM_PATH=/usr/bin/chromium bun scripts/run-examples.ts
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnDemoApp } from '../examples/demo-app/spawn.ts'
import { copyAsReadmeSays, newProject } from '../test/support/example-project.ts'

const ROOT = join(import.meta.dir, '..')
const dir = mkdtempSync(join(tmpdir(), 'pigeonhole-examples-'))
const env = { ...process.env, PORT: '0', SMTP_PORT: '0', HOST: '127.0.0.1', DATABASE_PATH: join(dir, 'pigeonhole.db') }

const server = Bun.spawn([process.execPath, 'src/index.ts'], { cwd: ROOT, env, stdout: 'pipe', stderr: 'ignore' })
const ports: Record<string, number> = {}
const reader = server.stdout.getReader()
let buffered = ''
while (!ports.smtp_listening) {
  const { value, done } = await reader.read()
  if (done) throw new Error('the server exited before listening')
  buffered += new TextDecoder().decode(value)
  for (const line of buffered.split('\n').slice(0, -1)) {
    const event = JSON.parse(line)
    if (event.event?.endsWith('_listening')) ports[event.event] = event.port
  }
  buffered = buffered.slice(buffered.lastIndexOf('\n') + 1)
}
// Keep draining the log, or a full pipe would stall the server.
void (async () => {
  while (!(await reader.read()).done);
})()

const cli = (...args: string[]) => {
  const run = Bun.spawnSync([process.execPath, 'src/cli.ts', ...args], { cwd: ROOT, env })
  if (run.exitCode !== 0) throw new Error(`cli ${args.join(' ')}: ${run.stderr}`)
  return run.stdout.toString().trim().split('\n').at(-1)!
}
const key = cli('keys', 'create', cli('orgs', 'create', 'examples', '--local'))
const demo = await spawnDemoApp(ports.smtp_listening!)
const exampleEnv = {
  ...process.env,
  PIGEONHOLE_URL: `http://127.0.0.1:${ports.http_listening}`,
  PIGEONHOLE_KEY: key,
  PIGEONHOLE_SMTP: `127.0.0.1:${ports.smtp_listening}`,
  APP_URL: demo.url,
}

const userProject = newProject()
copyAsReadmeSays(userProject, 'playwright')
const examples: Array<[string, string[], string]> = [
  ['curl flow', ['bash', 'examples/curl-flow.sh'], ROOT],
  ['recommended flow', [process.execPath, 'examples/recommended-flow.ts'], ROOT],
  ['bun test', [process.execPath, 'test', './examples/bun-signup.example.ts'], ROOT],
  ['Playwright, copied into a new project', ['npx', 'playwright', 'test'], userProject.dir],
]
let failed = 0
try {
  for (const [name, cmd, cwd] of examples) {
    const run = Bun.spawnSync(cmd, { cwd, env: exampleEnv, stdout: 'inherit', stderr: 'inherit' })
    console.log(`example ${name}: ${run.exitCode === 0 ? 'passed' : `FAILED (exit ${run.exitCode})`}`)
    if (run.exitCode !== 0) failed++
  }
} finally {
  await demo.stop()
  server.kill('SIGTERM')
  await server.exited
  rmSync(dir, { recursive: true, force: true })
  userProject.cleanup()
}
console.log(
  failed === 0 ? `examples: all ${examples.length} passed` : `examples: ${failed} of ${examples.length} FAILED`,
)
process.exit(failed === 0 ? 0 : 1)
