/**
 * The browser suite: Playwright driving Debian's Chromium (CHROMIUM_PATH, else
 * /usr/bin/chromium), since Playwright's own browser download is not reachable from CI.
 * Run with `bun run test:browser`; each test file starts its own server (server.ts).
 */
import { defineConfig } from '@playwright/test'

export default defineConfig({
  testDir: '.',
  testMatch: /.*\.e2e\.ts$/,
  timeout: 60_000,
  workers: 1,
  reporter: [['list']],
  outputDir: '../test-results',
  use: {
    headless: true,
    launchOptions: { executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium' },
    trace: 'off',
  },
})
