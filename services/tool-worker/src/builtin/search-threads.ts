import { Worker } from 'node:worker_threads';
import type { SearchThreadReply, SearchThreadRequest } from './search-thread.js';

// Built, this file is search-threads.js beside search-thread.js; under the tests it runs as
// TypeScript, and so does the thread (Node strips its types).
const THREAD_SCRIPT = new URL(
  import.meta.url.endsWith('.ts') ? './search-thread.ts' : './search-thread.js',
  import.meta.url,
);

/** Characters of context on each side of a match in a hit's text. */
export const HIT_CONTEXT_CHARS = 80;
/** The most characters of a match a hit's text carries (the offset still says where it is). */
export const HIT_MATCH_CHARS = 1_000;

export interface SearchHit {
  name: string;
  offset: number;
  text: string;
}

/** One search: a pattern (RE2 syntax) over a run's documents, read one at a time. */
export interface SearchJob {
  pattern: string;
  maxHits: number;
  documents: number;
  read(doc: number): Promise<{ name: string; text: string }>;
  /** The caller's own limit (the call's timeout, the run's deadline); the pool's applies too. */
  timeoutMs: number;
}

/** How a search ended. */
export type SearchOutcome =
  | { kind: 'hits'; hits: SearchHit[] }
  | { kind: 'invalid'; message: string }
  /** Out of time: while waiting for a thread (`started: false`) or while searching. */
  | { kind: 'timeout'; started: boolean; timeoutMs: number }
  | { kind: 'failed'; message: string };

export interface SearchThreadsOptions {
  /** Threads at most; searches beyond wait for one. */
  size: number;
  /** The longest one search may take, its wait for a thread included. */
  timeoutMs: number;
}

/**
 * A few threads that run context_search patterns, so that no pattern and no document size can
 * hold the tool-worker's event loop: the loop only hands documents over and waits, with a hard
 * deadline, after which the thread is terminated mid-search and replaced. Threads are kept
 * between searches (starting one and loading RE2 costs tens of milliseconds).
 */
export class SearchThreads {
  readonly #opts: SearchThreadsOptions;
  readonly #idle: Worker[] = [];
  readonly #all = new Set<Worker>();
  readonly #waiting: Array<(thread: Worker | undefined) => void> = [];
  #closed = false;

  constructor(opts: SearchThreadsOptions) {
    this.#opts = opts;
  }

  /** Runs one search to its end, its deadline or its failure; never throws for the pattern's sake. */
  async search(job: SearchJob): Promise<SearchOutcome> {
    const timeoutMs = Math.max(1, Math.min(job.timeoutMs, this.#opts.timeoutMs));
    const deadline = Date.now() + timeoutMs;
    const thread = await this.#acquire(deadline);
    if (!thread) return { kind: 'timeout', started: false, timeoutMs };
    let reusable = false;
    try {
      const hits: SearchHit[] = [];
      for (let doc = 0; doc < job.documents && hits.length < job.maxHits; doc++) {
        const { name, text } = await job.read(doc);
        const request: SearchThreadRequest = {
          pattern: job.pattern,
          name,
          text,
          maxHits: job.maxHits - hits.length,
          around: HIT_CONTEXT_CHARS,
          maxMatchChars: HIT_MATCH_CHARS,
        };
        let reply: SearchThreadReply | 'timeout';
        try {
          reply = await ask(thread, request, deadline - Date.now());
        } catch (err) {
          return { kind: 'failed', message: (err as Error).message };
        }
        if (reply === 'timeout') return { kind: 'timeout', started: true, timeoutMs };
        if ('invalid' in reply) {
          reusable = true;
          return { kind: 'invalid', message: reply.invalid };
        }
        hits.push(...reply.hits);
      }
      reusable = true;
      return { kind: 'hits', hits };
    } finally {
      // A thread stopped mid-search (deadline, crash, a failed read) may still be busy: replace it.
      if (reusable) this.#release(thread);
      else this.#discard(thread);
    }
  }

  /** Terminates every thread; searches under way end as failed. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const wake of this.#waiting.splice(0)) wake(undefined);
    this.#idle.length = 0;
    await Promise.all([...this.#all].map((t) => t.terminate()));
    this.#all.clear();
  }

  #acquire(deadline: number): Promise<Worker | undefined> {
    if (this.#closed) return Promise.resolve(undefined);
    const idle = this.#idle.pop();
    if (idle) return Promise.resolve(idle);
    if (this.#all.size < this.#opts.size) return Promise.resolve(this.#spawn());
    return new Promise((resolve) => {
      const wake = (thread: Worker | undefined) => {
        clearTimeout(timer);
        resolve(thread);
      };
      const timer = setTimeout(() => {
        this.#waiting.splice(this.#waiting.indexOf(wake), 1);
        resolve(undefined);
      }, deadline - Date.now());
      this.#waiting.push(wake);
    });
  }

  #release(thread: Worker): void {
    if (this.#closed) return void this.#discard(thread);
    const next = this.#waiting.shift();
    if (next) next(thread);
    else this.#idle.push(thread);
  }

  #discard(thread: Worker): void {
    void thread.terminate();
    this.#dropped(thread);
  }

  // A thread is gone (terminated here, or it died): a search waiting for one gets a new one.
  #dropped(thread: Worker): void {
    if (!this.#all.delete(thread)) return;
    const i = this.#idle.indexOf(thread);
    if (i >= 0) this.#idle.splice(i, 1);
    const next = this.#closed ? undefined : this.#waiting.shift();
    if (next) next(this.#spawn());
  }

  #spawn(): Worker {
    const thread = new Worker(THREAD_SCRIPT);
    // An idle thread must not keep the process alive; a search under way holds its job anyway.
    thread.unref();
    // A thread that dies between searches is dropped; one that dies during a search fails it (ask).
    thread.on('error', () => {});
    thread.on('exit', () => this.#dropped(thread));
    this.#all.add(thread);
    return thread;
  }
}

/** Sends one request and waits for its reply, at most `ms`; a thread that errors or exits rejects. */
function ask(thread: Worker, request: SearchThreadRequest, ms: number): Promise<SearchThreadReply | 'timeout'> {
  if (ms <= 0) return Promise.resolve('timeout');
  return new Promise((resolve, reject) => {
    const settle = () => {
      clearTimeout(timer);
      thread.off('message', onMessage);
      thread.off('error', onError);
      thread.off('exit', onExit);
    };
    const onMessage = (reply: SearchThreadReply) => {
      settle();
      resolve(reply);
    };
    const onError = (err: Error) => {
      settle();
      reject(new Error(`the search thread failed: ${err.message}`));
    };
    const onExit = (code: number) => {
      settle();
      reject(new Error(`the search thread stopped (exit code ${code})`));
    };
    const timer = setTimeout(() => {
      settle();
      resolve('timeout');
    }, ms);
    thread.on('message', onMessage);
    thread.on('error', onError);
    thread.on('exit', onExit);
    thread.postMessage(request);
  });
}
