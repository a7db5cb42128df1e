// The CLI's settings from its environment: the one module of the CLI that reads process.env.
// Checked by hand rather than with zod: three variables do not justify the client's first
// dependency.

/** What the `agentq` command takes from its environment. */
export interface CliConfig {
  /** The API's base URL (`AGENTQ_URL`). @defaultValue "http://127.0.0.1:3000" */
  url: string;
  /** An API key (`AGENTQ_API_KEY`); none is sent when unset. */
  apiKey?: string;
  /** False when `NO_COLOR` is set to anything (no-color.org). */
  color: boolean;
}

/** One or more bad variables: `problems` holds one line for each. */
export class CliConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
    this.name = new.target.name;
  }
}

export const DEFAULT_URL = 'http://127.0.0.1:3000';

/** Why `url` cannot be the API's base URL, or null when it can. */
export function urlProblem(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be an http:// or https:// URL';
  }
  return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? null : 'must be an http:// or https:// URL';
}

/**
 * Why `key` cannot be sent as a bearer key, or null when it can. It goes into a header, where
 * fetch refuses control characters with a TypeError that would read as "cannot reach the API".
 */
export const apiKeyProblem = (key: string): string | null =>
  /^[\x21-\x7e]+$/.test(key) ? null : 'must be printable ASCII without spaces';

/**
 * Reads the CLI's settings from `env`; throws CliConfigError with one line per bad variable
 * (`NAME: what is wrong (got "value")`, a tenant's value never shown). Empty counts as unset.
 */
export function loadCliConfig(env: Record<string, string | undefined> = process.env): CliConfig {
  const problems: string[] = [];
  const url = env.AGENTQ_URL || DEFAULT_URL;
  const badUrl = urlProblem(url);
  if (badUrl) problems.push(`AGENTQ_URL: ${badUrl} (got ${JSON.stringify(url.slice(0, 80))})`);
  const apiKey = env.AGENTQ_API_KEY || undefined;
  const badKey = apiKey === undefined ? null : apiKeyProblem(apiKey);
  if (badKey) problems.push(`AGENTQ_API_KEY: ${badKey} (value hidden)`);
  if (problems.length) throw new CliConfigError(problems);
  return { url, ...(apiKey ? { apiKey } : {}), color: !env.NO_COLOR };
}
