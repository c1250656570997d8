/**
 * A few tests drive a second, independent client that is not Bun: curl (the README's and
 * the console's commands, the curl example) and Python's smtplib (STARTTLS). `bun test`
 * must pass with Bun alone, so where one is missing those tests are skipped with one line
 * saying why; .ci/run installs both, so CI always runs them.
 */
import { test } from 'bun:test'

const reported = new Set<string>()

/** `test`, or `test.skip` when `program` is not on the PATH (said once per program). */
export function testNeeding(program: 'curl' | 'python3') {
  const present = Bun.which(program) !== null
  if (!present && !reported.has(program)) {
    reported.add(program)
    console.warn(`skipped: the tests that drive ${program} (not installed here; .ci/run installs it)`)
  }
  return test.skipIf(!present)
}
