import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { MAX_JSON_DEPTH, nestedDeeperThan } from './json-depth.js';
import { re2RegExp } from './re2-regexp.js';
import type { Logger } from 'pino';

const MAX_SCHEMA_ERRORS = 10;

/** What a tool's arguments are checked against: its name (for logs) and its inputSchema. */
export interface ToolSchema {
  name: string;
  input_schema: Record<string, unknown>;
}

/** Parses the model's arguments; returns the problem as a string when they are unusable. */
export function parseArguments(raw: string | Record<string, unknown>): Record<string, unknown> | string {
  let value: unknown = raw;
  if (typeof raw === 'string') {
    if (raw.trim() === '') return {};
    // Checked before parsing: a parser, a validator or a serializer walks the structure recursively.
    if (nestedDeeperThan(raw, MAX_JSON_DEPTH)) return `arguments nest deeper than ${MAX_JSON_DEPTH} levels`;
    try {
      value = JSON.parse(raw);
    } catch (err) {
      return `arguments are not valid JSON: ${(err as Error).message}`;
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const kind = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
    return `arguments must be a JSON object, got ${kind}`;
  }
  return value as Record<string, unknown>;
}

/** ajv's errors as one line for the model: `/company must be string; must have required property 'id'`. */
export function formatSchemaErrors(errors: ErrorObject[]): string {
  const lines = errors.slice(0, MAX_SCHEMA_ERRORS).map((e) => {
    const extra = e.keyword === 'additionalProperties' ? ` '${String(e.params.additionalProperty)}'` : '';
    return `${e.instancePath ? `${e.instancePath} ` : ''}${e.message ?? 'is invalid'}${extra}`;
  });
  if (errors.length > MAX_SCHEMA_ERRORS) lines.push(`… (${errors.length - MAX_SCHEMA_ERRORS} more)`);
  return lines.join('; ');
}

/**
 * Checks tool arguments against their inputSchema with ajv, in the schema's own dialect
 * (draft-07, 2019-09 or 2020-12); compiles each schema once.
 */
export class SchemaValidators {
  readonly #validators = new Map<string, ValidateFunction | null>();
  #ajv?: { draft7: Ajv; draft2019: Ajv2019; draft2020: Ajv2020 };

  constructor(private readonly logger: Logger) {}

  /** The problems with `args`, or undefined when they are valid (or the schema is unusable). */
  check(tool: ToolSchema, args: Record<string, unknown>): string | undefined {
    const key = JSON.stringify(tool.input_schema);
    let validate = this.#validators.get(key);
    if (validate === undefined) {
      validate = this.#compile(tool);
      this.#validators.set(key, validate);
    }
    if (!validate || validate(args)) return undefined;
    return formatSchemaErrors(validate.errors ?? []);
  }

  #compile(tool: ToolSchema): ValidateFunction | null {
    // The arguments are the model's (a caller can steer them): a schema's patterns run on RE2,
    // never on a backtracking engine (see re2RegExp).
    const options = {
      allErrors: true,
      strict: false,
      validateFormats: false,
      logger: false as const,
      code: { regExp: re2RegExp },
    };
    this.#ajv ??= { draft7: new Ajv(options), draft2019: new Ajv2019(options), draft2020: new Ajv2020(options) };
    const { $schema, ...schema } = tool.input_schema;
    const dialect = String($schema ?? '');
    const ajv = dialect.includes('2020-12')
      ? this.#ajv.draft2020
      : dialect.includes('2019-09')
        ? this.#ajv.draft2019
        : this.#ajv.draft7;
    try {
      return ajv.compile(schema);
    } catch (err) {
      // A schema we cannot compile is the server's to enforce; the call still goes through.
      this.logger.warn(
        { tool: tool.name, err: err instanceof Error ? err.message : String(err) },
        'cannot compile MCP tool inputSchema; not validating',
      );
      return null;
    }
  }
}
