import { defineConfig } from 'drizzle-kit'

// PostgreSQL mode's migrations, kept apart from SQLite's (drizzle/): `bun run db:generate:postgres`.
export default defineConfig({
  dialect: 'postgresql',
  schema: ['./src/storage/postgres/schema.ts', './src/storage/postgres/coordination-schema.ts'],
  out: './drizzle/postgres',
})
