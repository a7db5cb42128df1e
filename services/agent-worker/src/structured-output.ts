import { Ajv } from 'ajv';
import type { ResponseFormat } from '@agentq/shared/core';
import { FatalError, re2RegExp } from '@agentq/shared/core';

// The schema is the caller's and the answer the model's: its patterns run on RE2, never on a
// backtracking engine (see re2RegExp).
const ajv = new Ajv({ allErrors: true, strict: false, code: { regExp: re2RegExp } });
const compiled = new WeakMap<object, ReturnType<typeof ajv.compile>>();

/**
 * Parses the final content when the run asked for JSON; returns undefined when it did not.
 * Content that is not JSON, or does not match the json_schema, fails the run with
 * `invalid_structured_output` (no retry can make the stored answer valid).
 */
export function parseStructuredOutput(format: ResponseFormat | undefined, content: string | null): unknown {
  if (!format || format.type === 'text') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(content ?? '');
  } catch (err) {
    throw new FatalError(
      `the model's final answer is not valid JSON (${(err as Error).message}); ` +
        `response_format asked for ${format.type}`,
      'invalid_structured_output',
    );
  }
  if (format.type === 'json_schema' && format.json_schema.schema) {
    const schema = format.json_schema.schema;
    let validate = compiled.get(schema);
    if (!validate) {
      try {
        validate = ajv.compile(schema);
      } catch (err) {
        throw new FatalError(
          `response_format.json_schema.schema is not a usable JSON Schema: ${(err as Error).message}`,
          'invalid_response_format',
        );
      }
      compiled.set(schema, validate);
    }
    if (!validate(parsed)) {
      const why = (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
      throw new FatalError(
        `the model's final answer does not match the json_schema "${format.json_schema.name}": ${why}`,
        'invalid_structured_output',
      );
    }
  }
  return parsed;
}
