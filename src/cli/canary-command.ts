/** `cli canary`: its options, one line per step on stdout, and an exit status naming the failed step. */
import { runCanary, STEP_EXIT } from './canary.ts'

export async function canaryCommand(
  args: string[],
  fail: (message: string, code?: number) => never,
  usage: string,
): Promise<never> {
  const options: Record<string, string> = {}
  for (let i = 0; i < args.length; i += 2) {
    const name = args[i]
    const value = args[i + 1]
    if (!name || !['--url', '--key', '--smtp', '--timeout', '--dns'].includes(name) || value === undefined)
      fail(usage, 64)
    options[name.slice(2)] = value
  }
  const url = options.url ?? process.env.PIGEONHOLE_URL ?? process.env.BASE_URL
  const key = options.key ?? process.env.PIGEONHOLE_KEY
  const smtp = options.smtp ?? (process.env.PIGEONHOLE_SMTP || undefined)
  const timeoutSeconds = options.timeout === undefined ? 60 : Number(options.timeout)
  if (!url || !/^https?:\/\//.test(url))
    fail(`canary: give the API's URL (--url or PIGEONHOLE_URL), e.g. https://pigeonhole.example.com\n${usage}`, 64)
  if (!key)
    fail(
      `canary: give an API key (--key or PIGEONHOLE_KEY) of an organisation the canary may make an inbox in\n${usage}`,
      64,
    )
  if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1 || timeoutSeconds > 3600)
    fail('canary: --timeout is whole seconds, 1 to 3600', 64)

  const started = performance.now()
  const dns = options.dns?.split(',')
  const result = await runCanary({ url, key, smtp, timeoutSeconds, dns }, (step) => {
    console.log(
      `${step.step.padEnd(12)}  ${step.ok ? 'ok    ' : 'FAILED'}  ${step.seconds.toFixed(2)} s  ${step.detail}`,
    )
  })
  const total = ((performance.now() - started) / 1000).toFixed(2)
  if (result.failed === null) {
    console.log(`ok: mail flowed end to end in ${total} s`)
    process.exit(0)
  }
  const failed = result.steps.find((s) => s.step === result.failed)!
  fail(`canary failed at ${failed.step}: ${failed.detail}`, STEP_EXIT[failed.step])
}
