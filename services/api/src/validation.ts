import type { z } from 'zod';
import { HttpError } from './http-error.js';

/** Parses with a zod schema or throws a 400 whose details name each bad field. */
export function parseOr400<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const details = r.error.issues.slice(0, 50).flatMap((i) => {
    const at = i.path.map(String).join('.');
    // zod reports unknown keys on the object that holds them: name each key as its own field.
    if (i.code === 'unrecognized_keys') return i.keys.map((k) => ({ field: at ? `${at}.${k}` : k, message: 'unknown field' }));
    return [{ field: at || '(body)', message: i.message }];
  });
  const summary = details
    .slice(0, 5)
    .map((d) => `${d.field}: ${d.message}`)
    .join('; ');
  throw new HttpError(400, 'validation_error', `invalid ${what}: ${summary}`, details);
}

/** Reads a JSON body, or throws a 400 that says what is wrong with it. */
export async function readJson(req: { text(): Promise<string>; header(name: string): string | undefined }): Promise<unknown> {
  const type = req.header('content-type') ?? '';
  if (type && !/^application\/([\w.+-]*\+)?json\b/i.test(type)) {
    throw new HttpError(415 as never, 'unsupported_media_type', `send the body as JSON with "Content-Type: application/json" (got "${type.slice(0, 100)}")`);
  }
  const text = await req.text();
  if (!text.trim()) throw new HttpError(400, 'invalid_json', 'the request body is empty; send a JSON object');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, 'invalid_json', `the request body is not valid JSON: ${(err as Error).message}`);
  }
}
