/**
 * Runs before every test file (bunfig.toml). Integration tests start servers and child
 * processes; on a shared two-core machine with other work running that alone can take
 * seconds, so Bun's default deadline of 5 s failed tests that were merely waiting for a
 * core. A deadline catches a hang, it is not a speed bound (speeds are bench/'s job):
 * 20 s unless a file or a test sets its own.
 */
import { setDefaultTimeout } from 'bun:test'

setDefaultTimeout(20_000)
