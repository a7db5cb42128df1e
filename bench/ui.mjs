#!/usr/bin/env node
// @ts-check
// `npm run bench:ui`: what the run inspector costs. The size of its page (JS + CSS, gzipped, as the API sends it),
// and how its run list behaves with BENCH_UI_RUNS runs (10,000 by default) of one key: the API's answer times for
// the list's first page, a deep page, a status filter, a metadata search and the counts, and the time headless
// Chromium takes to show the list and to turn its pages. The runs are made through POST /v1/runs on the built API
// with no worker (they stay queued; a share is then marked with other statuses in Redis), on a Redis of the
// benchmark's own (loopback; everything stops by itself).
import { writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Redis } from 'ioredis';
import { chromium } from 'playwright-core';
import { spawnProc, stopProc } from './lib/procs.mjs';
import { startRedis } from './lib/redis-server.mjs';
import { fmt, pool, quantile, textTable } from './lib/stats.mjs';
import { ROOT, shared } from './lib/workload.mjs';
import { freePort, serviceNodeOptions } from '../scripts/lib/services.mjs';
import { CHROMIUM_FLAGS, chromiumExecutable } from '../test/fixtures/chromium.ts';

const RUNS = Number(process.env.BENCH_UI_RUNS ?? 10_000);
const KEY = 'bench-ui-key';
const PREFIX = 'bench-ui';
const STATUSES = ['completed', 'completed', 'completed', 'failed', 'cancelled', 'incomplete', 'requires_action'];
const say = (/** @type {string} */ s) => process.stderr.write(`${s}\n`);

/** The gzipped size of the page's files, as the API serves them. */
async function pageSize(/** @type {string} */ url) {
  const html = await (await fetch(`${url}/ui/`)).text();
  const files = [...html.matchAll(/(?:src|href)="(\/ui\/assets\/[^"]+)"/g)].map((m) => m[1]);
  /** @type {string[][]} */
  const rows = [];
  let total = 0;
  for (const f of files) {
    const body = Buffer.from(
      await (await fetch(`${url}${f}`, { headers: { 'accept-encoding': 'identity' } })).arrayBuffer(),
    );
    const gz = gzipSync(body, { level: 9 }).length;
    total += gz;
    rows.push([String(f), `${fmt(body.length / 1024)} KB`, `${fmt(gz / 1024)} KB`]);
  }
  rows.push(['JS + CSS', '', `${fmt(total / 1024)} KB`]);
  return textTable(['file', 'size', 'gzipped'], rows);
}

async function main() {
  const redis = await startRedis();
  const tenants = join(tmpdir(), `agentq-bench-ui-${process.pid}.json`);
  writeFileSync(tenants, JSON.stringify({ default: { max_queued_runs: 10_000_000, requests_per_minute: 10_000_000 } }));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const api = spawnProc('api', process.execPath, [join(ROOT, 'services/api/dist/main.js')], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME ?? '/tmp',
      REDIS_URL: redis.url,
      QUEUE_PREFIX: PREFIX,
      PORT: String(port),
      HOST: '127.0.0.1',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      MODEL: 'bench',
      API_KEYS: KEY,
      TENANTS_CONFIG: tenants,
      LOG_LEVEL: 'error',
      NODE_OPTIONS: serviceNodeOptions(''),
    },
  });
  const ctl = new Redis(redis.url);
  const browser = await chromium.launch({ executablePath: await chromiumExecutable(), args: CHROMIUM_FLAGS });
  try {
    for (
      let i = 0;
      !(await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      ));
      i++
    ) {
      if (i > 300 || !api.running) throw new Error(`the API did not start:\n${api.tail.join('\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    say(`making ${RUNS} runs…`);
    const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
    /** @type {string[]} */
    const ids = [];
    await pool(RUNS, 64, async (i) => {
      const body = JSON.stringify({ input: `run ${i}`, metadata: { customer: `customer-${i}` } });
      const res = await fetch(`${url}/v1/runs`, { method: 'POST', headers, body });
      if (res.status !== 202) throw new Error(`POST /v1/runs: ${res.status} ${await res.text()}`);
      ids[i] = /** @type {{ id: string }} */ (await res.json()).id;
    });
    // Most runs ended one way or another; a few are still queued.
    const pipe = ctl.pipeline();
    ids.forEach((id, i) => {
      if (i % 10 !== 0) pipe.hset(shared.runKeys(PREFIX, id).run, 'status', STATUSES[i % STATUSES.length]);
    });
    await pipe.exec();
    const newest = [...ids].sort().reverse();

    /** @param {string} path */
    const timed = async (path, n = 20) => {
      /** @type {number[]} */
      const ms = [];
      let count = 0;
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${KEY}` } });
        const body = /** @type {{ data?: unknown[] }} */ (await res.json());
        ms.push(performance.now() - t0);
        count = body.data?.length ?? 0;
      }
      return [
        path.length > 60 ? `${path.slice(0, 57)}…` : path,
        String(count),
        fmt(quantile(ms, 0.5)),
        fmt(quantile(ms, 0.95)),
      ];
    };
    // The counts are kept for a second by each API process: read past it.
    const countsOnce = async (/** @type {string} */ q) => {
      /** @type {number[]} */
      const ms = [];
      for (let i = 0; i < 5; i++) {
        await new Promise((r) => setTimeout(r, 1100));
        const t0 = performance.now();
        await (await fetch(`${url}/v1/runs/counts${q}`, { headers: { authorization: `Bearer ${KEY}` } })).json();
        ms.push(performance.now() - t0);
      }
      return [`/v1/runs/counts${q} (not kept)`, '', fmt(quantile(ms, 0.5)), fmt(quantile(ms, 0.95))];
    };
    say('timing the API…');
    const api_rows = [
      await timed('/v1/runs?limit=25'),
      await timed(`/v1/runs?limit=25&after=${newest[RUNS / 2]}`),
      await timed('/v1/runs?limit=25&status=failed'),
      await timed('/v1/runs?limit=25&status=queued'),
      await timed(`/v1/runs?limit=25&q=customer-${RUNS - 7}`, 5),
      await timed('/v1/runs?limit=25&q=nothing-matches', 5),
      await countsOnce(''),
      await countsOnce('?top_level=true'),
    ];

    say('timing the page…');
    const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    await page.goto(`${url}/ui/login`);
    await page.getByLabel('API key').fill(KEY);
    const t0 = performance.now();
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('tbody tr').first().waitFor();
    const firstList = performance.now() - t0;
    /** @type {number[]} */
    const turns = [];
    for (let i = 0; i < 5; i++) {
      const before = await page.locator('tbody tr').first().getAttribute('data-run');
      const t = performance.now();
      await page.getByRole('button', { name: 'Older →' }).click();
      while ((await page.locator('tbody tr').first().getAttribute('data-run')) === before) {
        await new Promise((r) => setTimeout(r, 5));
      }
      turns.push(performance.now() - t);
    }
    const rows = await page.locator('tbody tr').count();
    const heap = /** @type {number} */ (
      await page.evaluate('performance.memory ? performance.memory.usedJSHeapSize : 0')
    );

    const out = [
      `agentq run inspector: ${RUNS} runs of one key`,
      '',
      await pageSize(url),
      '',
      textTable(['GET', 'runs', 'p50 ms', 'p95 ms'], api_rows),
      '',
      textTable(
        ['page', 'value'],
        [
          ['sign in → first page of the list shown', `${fmt(firstList)} ms`],
          ['older page shown (p50 of 5)', `${fmt(quantile(turns, 0.5))} ms`],
          ['rows on a page', String(rows)],
          ['JS heap of the page', `${fmt(heap / 1024 / 1024)} MB`],
        ],
      ),
    ].join('\n');
    process.stdout.write(`${out}\n`);
  } finally {
    await browser.close();
    ctl.disconnect();
    await stopProc(api);
    await redis.stop();
    rmSync(tenants, { force: true });
  }
}

await main();
