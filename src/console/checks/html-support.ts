/**
 * How well the major email clients support a message's HTML and CSS, from caniemail.com's
 * data (the `caniemail` package's JSON; its own checker is not used: it throws on the
 * clients its data lacks, such as `display` on Thunderbird for Windows).
 *
 * Each feature the message uses (html-features.ts) is looked up for each platform of each
 * client family, at the platform's newest tested version: `y` supported, `a` partial, `n`
 * not supported, `u` unknown. A family's score is the share of (feature, platform) pairs
 * supported, a partial one counting half and unknown ones left out, as caniemail.com
 * scores a feature. Every feature not fully supported somewhere is listed with where it
 * occurs in the message and the platforms that lack it.
 */
import data from 'caniemail/caniemail.json' with { type: 'json' }
import { findFeatures, MAX_CHECKED_CHARS } from './html-features.ts'

type Support = 'y' | 'a' | 'n' | 'u'

interface RawFeature {
  slug: string
  title: string
  url: string
  stats: Record<string, Record<string, Record<string, string>>>
  notes_by_num?: Record<string, string> | null
}

/** The families shown, in this order: the clients most test mail is read in. */
const FAMILIES = [
  'gmail',
  'apple-mail',
  'outlook',
  'yahoo',
  'samsung-email',
  'thunderbird',
  'aol',
  'protonmail',
  'fastmail',
  'hey',
] as const

const NICE = data.nicenames as { family: Record<string, string>; platform: Record<string, string> }
const FEATURES = new Map((data.data as unknown as RawFeature[]).map((feature) => [feature.slug, feature]))
const SLUGS: ReadonlySet<string> = new Set(FEATURES.keys())

/** When caniemail's data was last updated (shown with the result). */
const DATA_DATE: string = data.last_update_date

interface FamilyScore {
  family: string
  name: string
  /** 0–100, or null when no feature used has data for this family. */
  score: number | null
}

interface Shortfall {
  platform: string
  support: 'a' | 'n'
  notes: string[]
}

interface FeatureReport {
  slug: string
  title: string
  url: string
  lines: number[]
  count: number
  /**
   * Per family, the platforms where it is partial or missing (families
   * with none are left out), and how many platforms have data.
   */
  shortfalls: { family: string; name: string; platforms: Shortfall[]; tested: number }[]
}

export interface HtmlSupportReport {
  scores: FamilyScore[]
  /** Features not fully supported somewhere, the worst first. */
  issues: FeatureReport[]
  /** Features used that every listed client supports. */
  supported: number
  truncated: boolean
  dataDate: string
}

/** The newest tested version's support and its note numbers (`"a #1 #3"`). */
function newest(versions: Record<string, string>): { support: Support; notes: string[] } {
  const keys = Object.keys(versions)
  const raw = versions[keys[keys.length - 1]!] ?? 'u'
  const support = (['y', 'a', 'n'].includes(raw[0]!) ? raw[0] : 'u') as Support
  return { support, notes: [...raw.matchAll(/#(\d+)/g)].map((m) => m[1]!) }
}

export function checkHtmlSupport(html: string): HtmlSupportReport {
  const used = findFeatures(html, SLUGS)
  const totals = new Map<string, { points: number; counted: number }>(
    FAMILIES.map((family) => [family, { points: 0, counted: 0 }]),
  )
  const issues: FeatureReport[] = []
  let supported = 0
  for (const use of used) {
    const feature = FEATURES.get(use.slug)!
    const report: FeatureReport = {
      slug: use.slug,
      title: feature.title,
      url: feature.url,
      lines: use.lines,
      count: use.count,
      shortfalls: [],
    }
    for (const family of FAMILIES) {
      const platforms = feature.stats[family]
      if (!platforms) continue
      const total = totals.get(family)!
      const short: Shortfall[] = []
      let tested = 0
      for (const [platform, versions] of Object.entries(platforms)) {
        const { support, notes } = newest(versions)
        if (support === 'u') continue
        tested++
        total.counted++
        total.points += support === 'y' ? 1 : support === 'a' ? 0.5 : 0
        if (support !== 'y')
          short.push({
            platform: NICE.platform[platform] ?? platform,
            support,
            notes: notes.map((n) => feature.notes_by_num?.[n]).filter((n): n is string => !!n),
          })
      }
      if (short.length > 0)
        report.shortfalls.push({ family, name: NICE.family[family] ?? family, platforms: short, tested })
    }
    if (report.shortfalls.length > 0) issues.push(report)
    else supported++
  }
  const missing = (r: FeatureReport) =>
    r.shortfalls.reduce((sum, f) => sum + f.platforms.filter((p) => p.support === 'n').length, 0)
  issues.sort((a, b) => missing(b) - missing(a) || a.title.localeCompare(b.title))
  const scores = FAMILIES.map((family) => {
    const total = totals.get(family)!
    return {
      family,
      name: NICE.family[family] ?? family,
      score: total.counted === 0 ? null : Math.round((100 * total.points) / total.counted),
    }
  })
  return { scores, issues, supported, truncated: html.length > MAX_CHECKED_CHARS, dataDate: DATA_DATE }
}
