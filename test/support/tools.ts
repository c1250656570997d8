/**
 * A few tests drive a second, independent client that is not Bun: curl (the README's and
 * the console's commands, the curl example), Python's smtplib (STARTTLS) and npx (the
 * README's `npx playwright test`). `bun test` must pass with Bun alone, so where one is
 * missing those tests are skipped with one line saying why; .ci/run has all three (npm,
 * which brings npx, is how it installs Bun), so CI always runs them.
 */
import { test } from 'bun:test'

const reported = new Set<string>()

/** `test`, or `test.skip` when `program` is not on the PATH (said once per program). */
export function testNeeding(program: 'curl' | 'python3' | 'npx') {
  const present = Bun.which(program) !== null
  if (!present && !reported.has(program)) {
    reported.add(program)
    console.warn(`skipped: the tests that drive ${program} (not installed here; .ci/run installs it)`)
  }
  return test.skipIf(!present)
}
