/**
 * Playwright settings for the example, at your project's root so that `npx playwright test`
 * run there finds them (Playwright looks for playwright.config.ts in the folder it runs in).
 * Copy it with the client and the test folder, keeping their places (README.md, "In your
 * own project"):
 *
 *   cp -r path/to/pigeonhole/examples/{pigeonhole.ts,playwright.config.ts,playwright} .
 *   mv playwright/signup.example.ts playwright/signup.spec.ts
 *
 * APP_URL is where the application under test listens (default http://127.0.0.1:4000);
 * CHROMIUM_PATH points at an installed Chromium (for example Debian's /usr/bin/chromium)
 * when Playwright's own browsers are not installed. The test is named `.example.ts` here so
 * that `bun test`, which runs every `*.spec.ts`, leaves it alone.
 */
import { defineConfig } from '@playwright/test'

export default defineConfig({
  testDir: 'playwright',
  testMatch: ['*.spec.ts', '*.example.ts'],
  timeout: 30_000,
  reporter: 'list',
  use: {
    baseURL: process.env.APP_URL || 'http://127.0.0.1:4000',
    launchOptions: process.env.CHROMIUM_PATH ? { executablePath: process.env.CHROMIUM_PATH } : {},
  },
})
