import type { z } from 'zod';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '@agentq/shared/core';
import { HttpError } from './http-error.js';

export { MAX_JSON_DEPTH, nestedDeeperThan };

const MAX_DETAILS = 50;
const MAX_FIELD_CHARS = 200;

/** Parses with a zod schema or throws a 400 whose details name each bad field (the first 50). */
export function parseOr400<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  // At most 50 problems, each field named in at most 200 characters: a body of a million unknown
  // (or very long) keys gets an answer of a few KB, not one larger than itself.
  const name = (s: string) => (s.length > MAX_FIELD_CHARS ? `${s.slice(0, MAX_FIELD_CHARS)}…` : s);
  const details = r.error.issues
    .slice(0, MAX_DETAILS)
    .flatMap((i) => {
      const at = i.path.map(String).join('.');
      // zod reports unknown keys on the object that holds them: name each key as its own field.
      if (i.code === 'unrecognized_keys')
        return i.keys
          .slice(0, MAX_DETAILS)
          .map((k) => ({ field: name(at ? `${at}.${k}` : k), message: 'unknown field' }));
      return [{ field: name(at || '(body)'), message: i.message }];
    })
    .slice(0, MAX_DETAILS);
  const summary = details
    .slice(0, 5)
    .map((d) => `${d.field}: ${d.message}`)
    .join('; ');
  throw new HttpError(400, 'validation_error', `invalid ${what}: ${summary}`, details);
}

/** Reads a JSON body, or throws a 400 that says what is wrong with it. */
export async function readJson(req: {
  text(): Promise<string>;
  header(name: string): string | undefined;
}): Promise<unknown> {
  const type = req.header('content-type') ?? '';
  if (type && !/^application\/([\w.+-]*\+)?json\b/i.test(type)) {
    throw new HttpError(
      415 as never,
      'unsupported_media_type',
      `send the body as JSON with "Content-Type: application/json" (got "${type.slice(0, 100)}")`,
    );
  }
  const text = await req.text();
  if (!text.trim()) throw new HttpError(400, 'invalid_json', 'the request body is empty; send a JSON object');
  if (nestedDeeperThan(text, MAX_JSON_DEPTH))
    throw new HttpError(400, 'invalid_json', `the request body nests deeper than ${MAX_JSON_DEPTH} levels`);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, 'invalid_json', `the request body is not valid JSON: ${(err as Error).message}`);
  }
}
