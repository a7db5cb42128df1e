import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler } from '@agentq/scripted-llm';
import { CHROMIUM_FLAGS, chromiumExecutable } from './fixtures/chromium.js';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

const KEY = 'dashboard-test-key';
// Every wait below ends when the page (or the queue) shows what it waits for. Its limit is only how long a busy
// machine, where a headless Chromium renders slowly, may take before the failure names what never came; each
// test's own limit is above the sum of its waits.
const WAIT_MS = 30_000;
const TEST_MS = 120_000;

const round = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const handler: Handler = (req) =>
  round(req) === 0
    ? {
        tool_calls: [
          { name: 'crm__search_contacts', arguments: { query: 'Alice' } },
          { name: 'crm__get_contact', arguments: { id: 'c2' } },
        ],
      }
    : { content: 'Alice Jones works at Globex.' };

let stack: Stack;
let context: BrowserContext;
let userDataDir: string;
let runId: string;
const shots = mkdtempSync(join(tmpdir(), 'agentq-dashboard-'));
const offLoopback: string[] = [];
const answeredFrom: string[] = [];

beforeAll(async () => {
  // The headless Chromium of the npm package @sparticuz/chromium (or CHROMIUM_PATH): no system
  // browser needed, and the test does not skip.
  const executablePath = await chromiumExecutable();
  // The dashboard shows every tenant's jobs: only an admin key opens it (here the same key).
  stack = await startStack({ handler, apiKey: KEY, env: { ADMIN_API_KEYS: KEY } });
  const run = await stack.createRun({ input: 'Who is Alice?' });
  expect((await stack.waitForRun(run.id, { timeoutMs: WAIT_MS })).status).toBe('completed');
  runId = run.id;
  // The run ends inside its last job: the dashboard lists that job as completed only once BullMQ has
  // moved it there, a moment later. Opened before, the page would show it only at its next poll.
  await waitFor(
    async () => {
      const states = await Promise.all([
        stack.stepState(runId, 0),
        stack.toolJobState(runId, 0, 0),
        stack.stepState(runId, 1),
      ]);
      return states.every((s) => s === 'completed');
    },
    { what: "the run's jobs completed in their queues", timeoutMs: WAIT_MS },
  );

  userDataDir = mkdtempSync(join(tmpdir(), 'agentq-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1400, height: 900 },
  });
  context.setDefaultTimeout(WAIT_MS);
  // Nothing leaves the machine: Bull Board's page asks for a web font, which is refused here.
  await context.route('**/*', (route) => {
    const { hostname } = new URL(route.request().url());
    if (hostname === '127.0.0.1' || hostname === 'localhost') return route.continue();
    offLoopback.push(route.request().url());
    return route.abort('blockedbyclient');
  });
  // What the browser actually got an answer from, whatever the route did.
  context.on('response', (res) => answeredFrom.push(new URL(res.url()).hostname));
}, TEST_MS);

afterAll(async () => {
  await context?.close();
  await stack?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  console.info(`dashboard screenshots: ${shots}`);
});

async function keyedPage(): Promise<Page> {
  const page = await context.newPage();
  await page.setExtraHTTPHeaders({ authorization: `Bearer ${KEY}` });
  return page;
}

async function screenshot(page: Page, name: string) {
  const path = join(shots, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  expect(statSync(path).size).toBeGreaterThan(10_000);
}

/** Opens a queue from the sidebar, then its Completed tab, as a person would. */
async function openCompleted(page: Page, queue: string) {
  await page.getByRole('link', { name: queue, exact: true }).click();
  await page.waitForURL(`**/admin/queues/queue/${queue}**`);
  await page.getByRole('link', { name: /completed/i }).click();
  await page.waitForURL(/status=completed/);
}

/** Waits until the page's main area shows every pattern at once: Bull Board re-renders it while it polls, showing
 * "Loading..." in between. On a timeout the failure names the patterns still missing. */
async function mainTextShowing(page: Page, patterns: (string | RegExp)[]): Promise<void> {
  const missing = async () => {
    // What the page shows: textContent would hold what it hides too (this is Playwright's, not the DOM's).
    // biome-ignore lint/performance/useDomNodeTextContent: the test is about the text as shown
    const text = await page.locator('main').innerText();
    return patterns.filter((p) => (typeof p === 'string' ? !text.includes(p) : !p.test(text))).map(String);
  };
  await expect.poll(missing, { timeout: WAIT_MS, interval: 100 }).toEqual([]);
}

describe('the Bull Board dashboard in headless Chromium', { timeout: TEST_MS }, () => {
  it('sends a browser without the key to the login page, and refuses a script without it', async () => {
    const page = await context.newPage();
    await page.goto(`${stack.api.url}/admin/queues/`);
    await page.waitForURL(/\/ui\/login\?next=/);
    await page.getByLabel('API key').waitFor();
    await page.close();
    const res = await fetch(`${stack.api.url}/admin/queues/`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(401);
    expect((await res.json()).error.code).toBe('unauthorized');
  });

  it('lists the agent, tool and webhook queues', async () => {
    const page = await keyedPage();
    const res = await page.goto(`${stack.api.url}/admin/queues/`);
    expect(res?.status()).toBe(200);
    // The page renders its queues once its script has fetched them.
    for (const q of ['agent', 'tool', 'webhook'])
      await page.getByRole('link', { name: q, exact: true }).first().waitFor();
    await page.getByText('agentq', { exact: true }).first().waitFor();
    await screenshot(page, 'queues');
    await page.close();
  });

  it("shows the finished run's steps in the agent queue and its tool calls in the tool queue, with their data", async () => {
    const page = await keyedPage();
    await page.goto(`${stack.api.url}/admin/queues/`);

    await openCompleted(page, 'agent');
    for (const name of [`${runId} · step 0`, `${runId} · step 1`])
      await page.getByText(name, { exact: true }).waitFor();
    await mainTextShowing(page, [
      `${runId}-t0`, // job ids
      new RegExp(`runId:\\s*"${runId}"`), // job data, as Bull Board shows it
      /outcome:\s*"tool_calls"/,
      /outcome:\s*"final_answer"/,
    ]);
    await screenshot(page, 'agent-queue');

    await openCompleted(page, 'tool');
    // The round's two calls share one job, named after both.
    await page.getByText(`${runId} · step 0 · crm__search_contacts, crm__get_contact`, { exact: true }).waitFor();
    await mainTextShowing(page, [
      new RegExp(`runId:\\s*"${runId}"`),
      `${runId}-t0-c0`, // the job's id: its first call's
      // Bull Board shows a job's data two levels deep: its kind, the round's calls (each folded),
      // and the next step it enqueues if it completes the round (told the transcript's size).
      /kind:\s*"toolCalls"/,
      /count:\s*2,\s*calls:\s*\[/,
      /nextStep:\s*\{\s*transcriptBytes:\s*\d+\s*\}/,
    ]);
    await screenshot(page, 'tool-queue');
    await page.close();

    // Whatever the page wanted from outside was refused, never fetched: every answer came from loopback.
    expect(answeredFrom.length).toBeGreaterThan(0);
    expect(answeredFrom.filter((h) => h !== '127.0.0.1' && h !== 'localhost')).toEqual([]);
  });
});
