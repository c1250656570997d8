/**
 * How one setting is declared and parsed: its kind (the value's type and bounds), its
 * default, and the error that names the variable. The list of settings is src/config.ts.
 */

type Kind =
  | { type: 'int'; min: number; max: number }
  | { type: 'string'; pattern?: RegExp; hint?: string }
  | { type: 'url' }
  | { type: 'enum'; values: readonly string[] }

/** The TypeScript type a kind parses to. */
export type ValueOf<K extends Kind> = K extends { type: 'int' }
  ? number
  : K extends { type: 'enum'; values: readonly (infer V)[] }
    ? V
    : string

/** A default computed from settings parsed before it, with the text the configuration table shows. */
interface DerivedDefault {
  from: (parsed: Readonly<Record<string, unknown>>) => string
  shown: string
}

export interface Setting {
  env: string
  /** The property of Config (or of Config.limits, for group `limits`) that holds the value. */
  key: string
  group?: 'limits'
  kind: Kind
  default: string | DerivedDefault
  description: string
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

function parseValue(setting: Setting, raw: string): unknown {
  const { kind } = setting
  switch (kind.type) {
    case 'int': {
      if (!/^[0-9]+$/.test(raw)) throw new ConfigError(setting.env, `expected an integer, got "${raw}"`)
      const value = Number(raw)
      if (value < kind.min || value > kind.max)
        throw new ConfigError(setting.env, `must be between ${kind.min} and ${kind.max}, got ${raw}`)
      return value
    }
    case 'enum':
      if (!kind.values.includes(raw))
        throw new ConfigError(setting.env, `must be one of ${kind.values.join(', ')}, got "${raw}"`)
      return raw
    case 'url': {
      let url: URL
      try {
        url = new URL(raw)
      } catch {
        throw new ConfigError(setting.env, `expected an http(s) URL, got "${raw}"`)
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        throw new ConfigError(setting.env, `expected an http(s) URL, got "${raw}"`)
      return raw.replace(/\/+$/, '')
    }
    case 'string':
      if (kind.pattern && !kind.pattern.test(raw))
        throw new ConfigError(setting.env, `expected ${kind.hint ?? kind.pattern}, got "${raw}"`)
      return raw
  }
}

/** Parses every setting from `env` (unset or empty: its default), split into the top level and the `limits` group. */
export function parseSettings(
  settings: readonly Setting[],
  env: Record<string, string | undefined>,
): Record<'top' | 'limits', Record<string, unknown>> {
  const parsed: Record<string, unknown> = {}
  const groups: Record<'top' | 'limits', Record<string, unknown>> = { top: {}, limits: {} }
  for (const setting of settings) {
    const given = env[setting.env]
    const raw =
      given !== undefined && given !== ''
        ? given
        : typeof setting.default === 'string'
          ? setting.default
          : setting.default.from(parsed)
    parsed[setting.key] = parseValue(setting, raw)
    groups[setting.group ?? 'top'][setting.key] = parsed[setting.key]
  }
  return groups
}

/** Markdown table of every variable with its default and meaning. */
export function settingsTable(settings: readonly Setting[]): string {
  const rows = settings.map((s) => {
    const fallback = typeof s.default === 'string' ? s.default : s.default.shown
    return `| \`${s.env}\` | ${fallback === '' ? '(empty)' : `\`${fallback}\``} | ${s.description} |`
  })
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n')
}

/**
 * Runs a config read at start-up; a ConfigError ends the process with one line and EX_CONFIG
 * (78). An async read (the start itself, which reads the TLS files) is covered the same way.
 */
export function exitOnConfigError<T>(read: () => T): T {
  const exit = (error: unknown): never => {
    if (!(error instanceof ConfigError)) throw error
    console.error(`Invalid configuration: ${error.message}`)
    process.exit(78)
  }
  try {
    const result = read()
    return (result instanceof Promise ? result.catch(exit) : result) as T
  } catch (error) {
    return exit(error)
  }
}
