import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';

/** Read a whole request body as UTF-8. */
export async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

/** Send a JSON response, unless the response already started or the client is gone. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function defaultType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** The OpenAI-style body of an error answer. */
export interface ErrorBody {
  error: { message: string; type: string; param: null; code: string | null };
}

/** Send an OpenAI-style `{ error: { message, type, param, code } }` response. */
export function sendError(
  res: ServerResponse,
  status: number,
  e: { message?: string; type?: string; code?: string | null; headers?: Record<string, string> } = {},
): void {
  const error: ErrorBody['error'] = {
    message: e.message ?? `${status} ${STATUS_CODES[status] ?? 'Error'}`,
    type: e.type ?? defaultType(status),
    param: null,
    code: e.code ?? null,
  };
  sendJson(res, status, { error }, e.headers);
}

/** Write one server-sent event; resolves `false` if the client went away (`signal` aborts) first. */
export function writeEvent(res: ServerResponse, data: string, signal: AbortSignal): Promise<boolean> {
  if (res.destroyed || signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => resolve(false);
    signal.addEventListener('abort', onAbort, { once: true });
    // Waiting for the flush gives back-pressure, and lets a drop reply cut the socket only after its chunks left.
    res.write(`data: ${data}\n\n`, (err) => {
      signal.removeEventListener('abort', onAbort);
      resolve(!err);
    });
  });
}
