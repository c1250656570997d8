/**
 * Preloaded by `bun test` (bunfig.toml) after parallel-run.ts. A preload's `afterAll` runs once
 * a test file's own hooks are done (after each file in a `--parallel` worker, at the end of a
 * serial run), so the scratch folders a file made go with it instead of piling up in /dev/shm.
 */
import { afterAll } from 'bun:test'
import { removeFileScratch } from './scratch.ts'

afterAll(removeFileScratch)
