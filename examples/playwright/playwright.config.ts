/**
 * Playwright settings for the example. APP_URL is where the application under test listens
 * (default http://127.0.0.1:4000); CHROMIUM_PATH points at an installed Chromium (for
 * example Debian's /usr/bin/chromium) when Playwright's own browsers are not installed.
 * Copied into your project, it finds `*.spec.ts` files; here the example is named
 * `.example.ts` so that `bun test`, which runs every `*.spec.ts`, leaves it alone.
 */
import { defineConfig } from '@playwright/test'

export default defineConfig({
  testDir: '.',
  testMatch: ['*.spec.ts', '*.example.ts'],
  timeout: 30_000,
  reporter: 'list',
  use: {
    baseURL: process.env.APP_URL || 'http://127.0.0.1:4000',
    launchOptions: process.env.CHROMIUM_PATH ? { executablePath: process.env.CHROMIUM_PATH } : {},
  },
})
