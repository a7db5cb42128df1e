import http from 'node:http';
import https from 'node:https';
import { FatalError } from '@agentq/shared/core';

/** How modelHttpFetch reads and connects. */
export interface ModelHttpOptions {
  /** Largest response body read, bytes. */
  maxResponseBytes: number;
  /** Idle connections kept per host; the model calls in flight at once is a good size. @defaultValue 256 */
  maxFreeSockets?: number;
  /**
   * HTTP_PROXY, HTTPS_PROXY and NO_PROXY, as Node's proxy support reads them, when proxies are on
   * (the agent-worker's configuration says so: NODE_USE_ENV_PROXY=1 or --use-env-proxy).
   */
  proxyEnv?: NodeJS.ProcessEnv;
}

/** How long an idle kept connection lives (undici's default), or less when the server's `Keep-Alive: timeout` says so. */
const IDLE_SOCKET_MS = 4_000;

/** What of an error response's body is read: the SDK puts its text in the error, of which the run keeps 2,000 characters. */
export const ERROR_BODY_MAX_BYTES = 1 << 20;
/**
 * What of a body abandoned before its end (the SDK stops at `[DONE]`) is still read and dropped,
 * and for how long, so that its connection is kept: past either it is closed.
 */
const DRAIN_MS = 1_000;
const DRAIN_MAX_BYTES = 64 * 1024;
/** Bytes queued and not yet read by the caller before the socket is paused. */
const HIGH_WATER_BYTES = 256 * 1024;

type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * The `fetch` the openai SDK makes every model call with: node:http on keep-alive agents, its
 * response a fetch-shaped object whose body is an async iterable of the bytes as they arrive.
 *
 * Why not the platform's fetch: a call in flight there holds undici's fetch machinery and web
 * streams (a request, its controllers and signals, a stream and its reader per response), and a
 * model call stays in flight for the model's whole answer, long enough for all of it to be
 * promoted out of V8's young generation; this client needs markedly less CPU a call
 * (bench/findings.md).
 *
 * What it bounds that fetch does not: a response body past `maxResponseBytes` fails the call
 * with `model_response_too_large`, and an error response's text is read up to 1 MB.
 * What it does not do that fetch does: follow redirects (a 3xx is returned as is, and the SDK
 * reports it) and decompress (it asks for none). Like fetch it sends nothing twice: a kept
 * connection that breaks is the step's retry to make. It takes what the SDK sends, a URL and a
 * string or bytes body, over http: or https:, and refuses anything else (a `Request`, a stream
 * or form body) rather than sending it some other way.
 */
export function modelHttpFetch(opts: ModelHttpOptions): FetchLike & { close(): void } {
  const agentOpts: http.AgentOptions = {
    keepAlive: true,
    maxSockets: Infinity,
    maxFreeSockets: opts.maxFreeSockets ?? 256,
    scheduling: 'lifo',
    // On an idle socket only: one in use with a request just emits 'timeout', which nothing here
    // listens to (a model's silence is StreamBounds' to judge).
    timeout: IDLE_SOCKET_MS,
    ...(opts.proxyEnv ? { proxyEnv: opts.proxyEnv } : {}),
  };
  const agents = { 'http:': new http.Agent(agentOpts), 'https:': new https.Agent(agentOpts) };

  const fetchModel = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    if (typeof input !== 'string' && !(input instanceof URL))
      throw new TypeError('the model client takes a URL, not a Request');
    const url = input instanceof URL ? input : new URL(input);
    if (!(url.protocol in agents)) throw new TypeError(`the model client speaks http: and https:, not ${url.protocol}`);
    const body = init.body;
    if (!(body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array))
      throw new TypeError('the model client sends a string or bytes body');
    const headers = headerRecord(init.headers);
    if (body !== undefined && body !== null)
      headers['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
    const method = init.method ?? 'GET';
    const signal = init.signal ?? undefined;
    return new Promise<Response>((resolve, reject) => {
      const req = (url.protocol === 'https:' ? https : http).request(
        url,
        { method, headers, agent: agents[url.protocol as keyof typeof agents], signal },
        (res) => {
          // A response with no content (and the errors' text) is not held to the model's bound.
          const status = res.statusCode ?? 0;
          const empty = method === 'HEAD' || status === 204 || status === 304;
          resolve(
            responseOf(res, url.href, status >= 200 && status < 300 ? opts.maxResponseBytes : Infinity, empty, signal),
          );
        },
      );
      req.on('error', reject);
      req.end(body ?? undefined);
    });
  };

  return Object.assign(fetchModel as FetchLike, {
    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  });
}

/** Request headers as node:http takes them, from any form fetch takes. */
function headerRecord(h: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  if (!h) return out;
  if (h instanceof Headers) {
    h.forEach((v, k) => {
      out[k] = v;
    });
  } else if (Array.isArray(h)) {
    // A name given twice is one header whose values are joined, as fetch joins them.
    for (const [k, v] of h) {
      const name = k.toLowerCase();
      out[name] = name in out ? `${out[name]}, ${v}` : v;
    }
  } else for (const k of Object.keys(h)) out[k.toLowerCase()] = (h as Record<string, string>)[k];
  return out;
}

/**
 * A response's headers as the SDK reads them (`get`, `has`, iteration), from node:http's raw
 * headers, names lower-cased and the values of a name given twice joined with ', ', as fetch
 * shows them; but no undici Headers, whose building validates each header and whose iteration
 * sorts them on every call (the SDK iterates every response's headers).
 */
class ResponseHeaders {
  private readonly entriesList: Array<[string, string]> = [];

  constructor(raw: string[]) {
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i]!.toLowerCase();
      const seen = this.entriesList.find(([k]) => k === name);
      if (seen) seen[1] = `${seen[1]}, ${raw[i + 1]}`;
      else this.entriesList.push([name, raw[i + 1]!]);
    }
  }

  get(name: string): string | null {
    const lower = name.toLowerCase();
    for (const [k, v] of this.entriesList) if (k === lower) return v;
    return null;
  }

  has(name: string): boolean {
    return this.get(name) !== null;
  }

  forEach(fn: (value: string, name: string, parent: ResponseHeaders) => void): void {
    for (const [k, v] of this.entriesList) fn(v, k, this);
  }

  entries(): IterableIterator<[string, string]> {
    return this.entriesList[Symbol.iterator]();
  }

  keys(): IterableIterator<string> {
    return this.entriesList.map(([k]) => k)[Symbol.iterator]();
  }

  values(): IterableIterator<string> {
    return this.entriesList.map(([, v]) => v)[Symbol.iterator]();
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

/** The error of a model response past `max` bytes (MODEL_RESPONSE_MAX_MB). */
export function tooLarge(max: number): FatalError {
  const size = max >= 1024 * 1024 ? `${Math.round(max / 1024 / 1024)} MB` : `${max} bytes`;
  return new FatalError(`the model's response passed ${size} (MODEL_RESPONSE_MAX_MB)`, 'model_response_too_large');
}

/** A fetch-shaped view of `res`: its body read once, as bytes arriving (`body`) or whole (`text`, `json`, `arrayBuffer`, `bytes`, `blob`). */
function responseOf(
  res: http.IncomingMessage,
  url: string,
  maxBytes: number,
  empty: boolean,
  signal: AbortSignal | undefined,
): Response {
  const body = new ResponseBody(res, maxBytes, signal);
  const status = res.statusCode ?? 0;
  const ok = status >= 200 && status < 300;
  const whole = async (): Promise<Buffer> => body.readAll(ok ? Infinity : ERROR_BODY_MAX_BYTES);
  const bytes = async () => new Uint8Array(await whole());
  return {
    ok,
    status,
    statusText: res.statusMessage ?? '',
    url,
    redirected: false,
    type: 'basic',
    headers: new ResponseHeaders(res.rawHeaders),
    body: empty ? null : body,
    get bodyUsed() {
      return body.used;
    },
    text: async () => (await whole()).toString('utf8'),
    json: async () => JSON.parse((await whole()).toString('utf8')),
    bytes,
    arrayBuffer: async () => (await bytes()).buffer,
    blob: async () => new Blob([await bytes()], { type: res.headers['content-type'] ?? '' }),
    clone: () => {
      throw new TypeError('a model response cannot be cloned');
    },
  } as unknown as Response;
}

/**
 * A response body as an async iterable of its chunks, read from 'data' events (no web stream,
 * no Readable iterator): at most HIGH_WATER_BYTES wait unread before the socket is paused. An
 * iteration ended early (`return`) lets the rest of the body arrive and drops it, up to
 * DRAIN_MAX_BYTES for up to DRAIN_MS, so that the connection goes back to the pool instead of
 * being closed.
 */
class ResponseBody implements AsyncIterable<Uint8Array> {
  used = false;
  private readonly queue: Buffer[] = [];
  private queued = 0;
  private received = 0;
  private ended = false;
  private error: Error | null = null;
  private wake: (() => void) | null = null;
  private draining = false;
  private drained = 0;

  constructor(
    private readonly res: http.IncomingMessage,
    maxBytes: number,
    private readonly signal: AbortSignal | undefined,
  ) {
    res.on('data', (chunk: Buffer) => {
      this.received += chunk.length;
      if (this.received > maxBytes) return this.fail(tooLarge(maxBytes));
      if (this.draining) {
        this.drained += chunk.length;
        if (this.drained > DRAIN_MAX_BYTES) res.destroy();
        return;
      }
      this.queue.push(chunk);
      this.queued += chunk.length;
      if (this.queued > HIGH_WATER_BYTES) res.pause();
      this.notify();
    });
    res.on('end', () => {
      this.ended = true;
      this.notify();
    });
    res.on('error', (err) => this.fail(err));
    res.on('close', () => {
      if (!this.ended)
        this.fail(
          Object.assign(new Error('aborted: the connection closed before the response ended'), { code: 'ECONNRESET' }),
        );
    });
  }

  private fail(err: Error): void {
    if (this.error || this.ended) return;
    this.error = err;
    this.res.destroy();
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  private async next(): Promise<IteratorResult<Uint8Array>> {
    for (;;) {
      const chunk = this.queue.shift();
      if (chunk) {
        this.queued -= chunk.length;
        if (this.queued <= HIGH_WATER_BYTES / 2 && this.res.isPaused()) this.res.resume();
        return { value: chunk, done: false };
      }
      // An abort ends the body as it ends fetch's: with the signal's reason.
      if (this.error) throw this.signal?.aborted ? (this.signal.reason ?? this.error) : this.error;
      if (this.ended) return { value: undefined, done: true };
      if (this.wake) throw new TypeError('a response body is read by one reader at a time');
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** Stops reading: what is left of the body is dropped as it arrives, or the connection closed if it takes long. */
  private release(): void {
    if (this.ended || this.error || this.draining) return;
    this.draining = true;
    this.queue.length = 0;
    this.queued = 0;
    const timer = setTimeout(() => this.res.destroy(), DRAIN_MS).unref();
    this.res.once('end', () => clearTimeout(timer));
    this.res.once('close', () => clearTimeout(timer));
    this.res.resume();
  }

  /** Marks the body read, as fetch does: a body is read once. */
  private take(): void {
    if (this.used) throw new TypeError('the response body has already been read');
    this.used = true;
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    this.take();
    return {
      next: () => this.next(),
      return: async () => {
        this.release();
        return { value: undefined, done: true };
      },
    };
  }

  /** The whole body, at most `keep` bytes of it (the rest dropped); past maxBytes it fails. */
  async readAll(keep: number): Promise<Buffer> {
    this.take();
    const parts: Buffer[] = [];
    let kept = 0;
    for (let r = await this.next(); !r.done; r = await this.next()) {
      const chunk = Buffer.from(r.value.buffer, r.value.byteOffset, Math.min(r.value.byteLength, keep - kept));
      parts.push(chunk);
      kept += chunk.length;
      if (kept >= keep) {
        this.release();
        break;
      }
    }
    return Buffer.concat(parts);
  }

  /** For the SDK's cancel of a body it will not read. */
  async cancel(): Promise<void> {
    this.used = true;
    this.release();
  }
}
