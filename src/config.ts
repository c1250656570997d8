/**
 * The operational contract: every environment variable the product reads, with its
 * default and meaning. Parsed once at boot; docs/configuration.md's table is printed
 * from this list (`bun run docs:config`), so the two cannot drift apart.
 */

const MiB = 1024 * 1024

type Kind =
  | { type: 'int'; min: number; max: number }
  | { type: 'string'; pattern?: RegExp; hint?: string }
  | { type: 'url' }
  | { type: 'enum'; values: readonly string[] }

interface Setting {
  env: string
  kind: Kind
  /** A literal default, or one computed from settings parsed before it. */
  default: string | ((partial: Record<string, unknown>) => string)
  description: string
}

const port = { type: 'int', min: 0, max: 65535 } as const
const positive = (max = 1_000_000_000) => ({ type: 'int', min: 1, max }) as const

export const SETTINGS = [
  { env: 'PORT', kind: port, default: '3000', description: 'HTTP port (0 asks the OS for a free one).' },
  { env: 'SMTP_PORT', kind: port, default: '2525', description: 'SMTP port. Fly maps public port 25 to it.' },
  { env: 'HOST', kind: { type: 'string' }, default: '0.0.0.0', description: 'Bind address for both listeners.' },
  { env: 'DATABASE_PATH', kind: { type: 'string' }, default: './data/pigeonhole.db', description: 'SQLite file; its folder is created.' },
  {
    env: 'RECEIVING_DOMAIN',
    kind: { type: 'string', pattern: /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/i, hint: 'a bare domain name' },
    default: 'pigeonhole.test',
    // A reserved .test name (RFC 2606): never a real domain, yet email validators accept it (most refuse @localhost).
    description: 'Inbox addresses are `<local_part>@RECEIVING_DOMAIN`. The default is a reserved `.test` name that sign-up forms accept.',
  },
  { env: 'BASE_URL', kind: { type: 'url' }, default: (c) => `http://localhost:${c.port}`, description: 'Public URL of the API.' },
  { env: 'FILES_URL', kind: { type: 'url' }, default: (c) => String(c.baseUrl), description: 'Public URL used in attachment `download_url`s.' },
  { env: 'EMAIL_ROUTING', kind: { type: 'enum', values: ['none', 'cloudflare'] }, default: 'none', description: 'Routing provider: `none` (this SMTP listener is the MX) or `cloudflare`.' },
  { env: 'CLOUDFLARE_API_TOKEN', kind: { type: 'string' }, default: '', description: 'API token with Email Routing rules edit permission (for `cloudflare`).' },
  { env: 'CLOUDFLARE_ZONE_ID', kind: { type: 'string' }, default: '', description: 'Zone id of `RECEIVING_DOMAIN` (for `cloudflare`).' },
  { env: 'CLOUDFLARE_API_BASE', kind: { type: 'url' }, default: 'https://api.cloudflare.com/client/v4', description: 'Cloudflare API base; tests point it at a local fake.' },
  {
    env: 'CLOUDFLARE_RULE_ACTION',
    kind: { type: 'enum', values: ['worker', 'forward'] },
    default: 'worker',
    description: 'Action of each inbox rule: `worker` hands the mail to an Email Worker (which relays it to this SMTP listener), `forward` sends it to a verified destination address.',
  },
  {
    env: 'CLOUDFLARE_RULE_DESTINATION',
    kind: { type: 'string', pattern: /^[^\s,]+$/, hint: 'one Worker name or one email address' },
    default: 'pigeonhole-relay',
    description: 'The Email Worker\'s name (action `worker`) or the verified destination address (action `forward`).',
  },
  {
    env: 'CLOUDFLARE_TIMEOUT_MS',
    // Bounded, because the key of a createInbox waiting on this call answers
    // idempotency_in_progress until it returns: two attempts of at most 30 s each.
    kind: { type: 'int', min: 100, max: 30_000 },
    default: '5000',
    description: 'Time allowed for one Cloudflare API call; a timed-out or failed call is retried once.',
  },
  { env: 'CORS_CONSOLE_ORIGIN', kind: { type: 'string', pattern: /^(https?:\/\/[^/*\s]+)?$/, hint: 'an origin such as https://console.example.com' }, default: '', description: 'Origin of the web console allowed by CORS (empty: none).' },
  { env: 'CORS_WILDCARD_ORIGIN', kind: { type: 'string', pattern: /^(https?:\/\/\*\.[^/*\s]+)?$/, hint: 'an origin pattern such as https://*.preview.example.com' }, default: '', description: 'One wildcard host family allowed by CORS (empty: none).' },
  { env: 'HTTP_BODY_TIMEOUT_MS', kind: { type: 'int', min: 100, max: 120_000 }, default: '10000', description: 'Time allowed to receive a request body, in all (not per byte); a slower one gets `408 request_timeout`.' },
  { env: 'LOG_LEVEL', kind: { type: 'enum', values: ['debug', 'info', 'warn', 'error', 'silent'] }, default: 'info', description: 'Lowest level written to stdout as JSON lines.' },
  { env: 'LIMIT_ACTIVE_INBOXES', kind: positive(), default: '11', description: 'Active inboxes per organisation.' },
  { env: 'LIMIT_MONTHLY_EMAILS', kind: positive(), default: '33', description: 'Inbound emails per organisation per UTC month.' },
  { env: 'LIMIT_REQUESTS_PER_KEY', kind: positive(), default: '120', description: 'HTTP requests per key per UTC minute.' },
  { env: 'LIMIT_REQUESTS_PER_ORG', kind: positive(), default: '600', description: 'HTTP requests per organisation per UTC minute.' },
  { env: 'LIMIT_LONG_POLLS_PER_KEY', kind: positive(), default: '10', description: 'Concurrent long polls per key.' },
  { env: 'LIMIT_LONG_POLLS_PER_ORG', kind: positive(), default: '30', description: 'Concurrent long polls per organisation.' },
  { env: 'LIMIT_INBOX_BURST', kind: positive(), default: '10', description: 'Messages per inbox per five-minute UTC bucket.' },
  { env: 'LIMIT_ORG_BURST', kind: positive(), default: '25', description: 'Messages per organisation per five-minute UTC bucket.' },
  { env: 'LIMIT_MESSAGE_BYTES', kind: positive(), default: String(10 * MiB), description: 'Raw message size (advertised as SMTP SIZE and enforced).' },
  { env: 'LIMIT_MESSAGE_LINES', kind: positive(), default: '300000', description: 'Lines per raw message (not a spec limit: a guard against mail crafted to stall the parser; a 10 MiB message in 76-column base64 has about 140,000).' },
  { env: 'LIMIT_ATTACHMENTS', kind: positive(10_000), default: '25', description: 'Attachments per message.' },
  { env: 'LIMIT_ATTACHMENT_BYTES', kind: positive(), default: String(5 * MiB), description: 'Decoded size of one attachment.' },
  { env: 'LIMIT_ATTACHMENTS_TOTAL_BYTES', kind: positive(), default: String(10 * MiB), description: 'Decoded size of all attachments of one message.' },
  { env: 'LIMIT_BODY_BYTES', kind: positive(), default: String(1 * MiB), description: 'Text body and HTML body, each (UTF-8 bytes).' },
  { env: 'RETENTION_DAYS', kind: positive(3650), default: '30', description: 'Days a message is kept (`expires_at`).' },
  { env: 'IDEMPOTENCY_HOURS', kind: positive(24 * 365), default: '24', description: 'Hours an `Idempotency-Key` is remembered.' },
  { env: 'SMTP_MAX_CLIENTS', kind: positive(100_000), default: '200', description: 'Concurrent SMTP connections; more get 421.' },
  // Read only by the start-up entry (src/entry.ts), which runs the server under Litestream.
  { env: 'LITESTREAM_REPLICA', kind: { type: 'enum', values: ['none', 'file', 's3'] }, default: 'none', description: 'Where `bun src/entry.ts` replicates the database: `none` (run the server directly), `file` (a local folder) or `s3` (S3-compatible storage such as Fly\'s Tigris; reads `BUCKET_NAME`, `AWS_ENDPOINT_URL_S3`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`).' },
  { env: 'LITESTREAM_REPLICA_PATH', kind: { type: 'string' }, default: '', description: 'For `file`: the replica folder (required). For `s3`: the key prefix inside the bucket (empty: `pigeonhole`).' },
  { env: 'LITESTREAM_BIN', kind: { type: 'string' }, default: '', description: 'Litestream 0.3 binary (empty: the one bundled by `@flydotio/litestream-linux-x64`, else `litestream` on PATH).' },
  { env: 'SERVER_SCRIPT', kind: { type: 'string' }, default: '', description: 'Script the entry (`src/entry.ts`) runs as the server (empty: `src/index.ts`; the Docker image sets the production bundle `dist/server.js` from `bun run build`).' },
  { env: 'RUN_AS', kind: { type: 'string', pattern: /^([0-9]+:[0-9]+)?$/, hint: 'uid:gid such as 1000:1000' }, default: '', description: 'When the entry starts as root: hand the database folder to this uid:gid and run Litestream and the server as it (the Docker image sets 1000:1000).' },
] as const satisfies readonly Setting[]

export interface Config {
  port: number
  smtpPort: number
  host: string
  databasePath: string
  receivingDomain: string
  baseUrl: string
  filesUrl: string
  emailRouting: 'none' | 'cloudflare'
  cloudflareApiToken: string
  cloudflareZoneId: string
  cloudflareApiBase: string
  cloudflareRuleAction: 'worker' | 'forward'
  cloudflareRuleDestination: string
  cloudflareTimeoutMs: number
  corsConsoleOrigin: string
  corsWildcardOrigin: string
  httpBodyTimeoutMs: number
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent'
  litestreamReplica: 'none' | 'file' | 's3'
  litestreamReplicaPath: string
  litestreamBin: string
  serverScript: string
  runAs: string
  limits: Limits
}

export interface Limits {
  activeInboxes: number
  monthlyEmails: number
  requestsPerKey: number
  requestsPerOrg: number
  longPollsPerKey: number
  longPollsPerOrg: number
  inboxBurst: number
  orgBurst: number
  messageBytes: number
  messageLines: number
  attachments: number
  attachmentBytes: number
  attachmentsTotalBytes: number
  bodyBytes: number
  retentionDays: number
  idempotencyHours: number
  smtpMaxClients: number
}

/** A bad value is reported with the variable's name so the operator can fix it at once. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`)
  }
}

const camel = (env: string) =>
  env
    .toLowerCase()
    .replace(/^limit_/, '')
    .replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())

function parseValue(setting: Setting, raw: string): unknown {
  const { kind } = setting
  switch (kind.type) {
    case 'int': {
      if (!/^[0-9]+$/.test(raw)) throw new ConfigError(setting.env, `expected an integer, got "${raw}"`)
      const value = Number(raw)
      if (value < kind.min || value > kind.max) throw new ConfigError(setting.env, `must be between ${kind.min} and ${kind.max}, got ${raw}`)
      return value
    }
    case 'enum':
      if (!kind.values.includes(raw)) throw new ConfigError(setting.env, `must be one of ${kind.values.join(', ')}, got "${raw}"`)
      return raw
    case 'url': {
      let url: URL
      try {
        url = new URL(raw)
      } catch {
        throw new ConfigError(setting.env, `expected an http(s) URL, got "${raw}"`)
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(setting.env, `expected an http(s) URL, got "${raw}"`)
      return raw.replace(/\/+$/, '')
    }
    case 'string':
      if (kind.pattern && !kind.pattern.test(raw)) throw new ConfigError(setting.env, `expected ${kind.hint ?? kind.pattern}, got "${raw}"`)
      return raw
  }
}

/** Reads the environment (or the given overrides, for tests) into a typed Config. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const flat: Record<string, unknown> = {}
  for (const setting of SETTINGS as readonly Setting[]) {
    const given = env[setting.env]
    const raw = given !== undefined && given !== '' ? given : typeof setting.default === 'function' ? setting.default(flat) : setting.default
    flat[camel(setting.env)] = parseValue(setting, raw)
  }
  if (flat.emailRouting === 'cloudflare') {
    for (const name of ['CLOUDFLARE_API_TOKEN', 'CLOUDFLARE_ZONE_ID']) {
      if (!flat[camel(name)]) throw new ConfigError(name, 'required when EMAIL_ROUTING=cloudflare')
    }
    if (flat.cloudflareRuleAction === 'forward' && !/^[^@\s]+@[^@\s]+$/.test(String(flat.cloudflareRuleDestination))) {
      throw new ConfigError('CLOUDFLARE_RULE_DESTINATION', `must be a verified destination email address when CLOUDFLARE_RULE_ACTION=forward, got "${flat.cloudflareRuleDestination}"`)
    }
  }
  if (flat.litestreamReplica === 'file' && !flat.litestreamReplicaPath) throw new ConfigError('LITESTREAM_REPLICA_PATH', 'required when LITESTREAM_REPLICA=file')
  const limitKeys = SETTINGS.filter((s) => s.env.startsWith('LIMIT_') || ['RETENTION_DAYS', 'IDEMPOTENCY_HOURS', 'SMTP_MAX_CLIENTS'].includes(s.env))
  const limits = Object.fromEntries(limitKeys.map((s) => [camel(s.env), flat[camel(s.env)]])) as unknown as Limits
  const config = Object.fromEntries(Object.entries(flat).filter(([key]) => !(key in limits))) as Omit<Config, 'limits'>
  return { ...config, receivingDomain: config.receivingDomain.toLowerCase(), limits }
}

/** Markdown table of every variable, for the README. */
export function configTable(): string {
  const rows = SETTINGS.map((s) => {
    const fallback = typeof s.default === 'function' ? (s.env === 'BASE_URL' ? 'http://localhost:PORT' : 'BASE_URL') : s.default
    return `| \`${s.env}\` | ${fallback === '' ? '(empty)' : `\`${fallback}\``} | ${s.description} |`
  })
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n')
}
