/**
 * Playwright settings for the example. CHROMIUM_PATH points at an installed Chromium
 * (for example Debian's /usr/bin/chromium) when Playwright's own browsers are not installed.
 */
import { defineConfig } from '@playwright/test'

export default defineConfig({
  testDir: '.',
  testMatch: '*.example.ts',
  timeout: 30_000,
  reporter: 'list',
  use: {
    baseURL: process.env.APP_URL ?? 'http://127.0.0.1:4000',
    launchOptions: process.env.CHROMIUM_PATH ? { executablePath: process.env.CHROMIUM_PATH } : {},
  },
})
