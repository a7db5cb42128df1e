import { mkdirSync, rmSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChatRequest, type Handler, userText } from '@agentq/scripted-llm';
import { CHROMIUM_FLAGS, chromiumExecutable } from './fixtures/chromium.js';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

// The run inspector (/ui) in headless Chromium, against the whole stack: the list, a run followed live to its end,
// a sub-run, a cancel, an approval, hostile content; and the browser login that stands in for the key.

const KEY = 'ui-test-key-a';
const OTHER = 'ui-test-key-b';
const WAIT_MS = 30_000;
const TEST_MS = 120_000;
const HOSTILE = `<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">`;
const SHOTS = join(fileURLToPath(new URL('..', import.meta.url)), 'test-output', 'ui');

/** A gate a scripted model call waits on until the test opens it (or the call is aborted). */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return {
    open,
    wait: (signal: AbortSignal) =>
      Promise.race([opened, new Promise<void>((r) => signal.addEventListener('abort', () => r()))]),
  };
}
const gates = { live0: gate(), live1: gate(), live2: gate(), hold: gate() };

const rounds = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const handler: Handler = async (req, { signal }) => {
  const text = userText(req);
  const round = rounds(req);
  if (text.startsWith('live')) {
    if (round === 0) {
      await gates.live0.wait(signal);
      return {
        tool_calls: [
          { name: 'crm__search_contacts', arguments: { query: 'Bob' } },
          { name: 'crm__get_contact', arguments: { id: 'c1' } },
        ],
      };
    }
    if (round === 1) {
      await gates.live1.wait(signal);
      return { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 20, label: 'live' } }] };
    }
    await gates.live2.wait(signal);
    return { content: 'Bob Smith works at **Acme**, as the CRM says in so many words.', chunkDelayMs: 150 };
  }
  if (text.startsWith('hold')) {
    await gates.hold.wait(signal);
    return { content: 'released' };
  }
  if (text.startsWith('tree')) {
    return round === 0
      ? {
          tool_calls: [
            { name: 'crm__search_contacts', arguments: { query: 'Alice' } },
            { name: 'agent_query', arguments: { prompt: 'child: who is Alice?' } },
          ],
        }
      : { content: '**Alice Jones** works at *Globex*: the CRM and a sub-agent agree.' };
  }
  if (text.startsWith('child')) return { content: 'Alice Jones, of Globex.' };
  if (text.startsWith('approve')) {
    return round === 0
      ? { tool_calls: [{ name: 'crm__update_contact', arguments: { id: 'c2', company: 'Initech' } }] }
      : { content: 'Updated.' };
  }
  if (text.startsWith('hostile')) {
    return round === 0
      ? { tool_calls: [{ name: 'crm__fail', arguments: { message: HOSTILE } }] }
      : { content: `# Report\n\n${HOSTILE}\n\n[click](javascript:window.__pwned=3) and \`${HOSTILE}\`` };
  }
  if (text.startsWith('big')) {
    // 50 model steps: 46 rounds of one CRM call, 3 rounds that start a sub-run each, then the answer.
    if (round >= 49) return { content: 'All 49 rounds done.' };
    if (round % 16 === 15)
      return { tool_calls: [{ name: 'agent_query', arguments: { prompt: `child: part ${round}` } }] };
    return { tool_calls: [{ name: 'crm__get_contact', arguments: { id: round % 2 ? 'c1' : 'c2' } }] };
  }
  return { content: `Answer to: ${text}` };
};

let stack: Stack;
let context: BrowserContext;
let page: Page;
let userDataDir: string;
const violations: string[] = [];
const offLoopback: string[] = [];

beforeAll(async () => {
  const executablePath = await chromiumExecutable();
  stack = await startStack({
    handler,
    apiKey: KEY,
    env: { API_KEYS: `${KEY},${OTHER}`, ADMIN_API_KEYS: KEY },
  });
  rmSync(SHOTS, { recursive: true, force: true });
  mkdirSync(SHOTS, { recursive: true });
  userDataDir = mkdtempSync(join(tmpdir(), 'agentq-ui-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1360, height: 900 },
  });
  context.setDefaultTimeout(WAIT_MS);
  await context.route('**/*', (route) => {
    const { hostname } = new URL(route.request().url());
    if (hostname === '127.0.0.1' || hostname === 'localhost') return route.continue();
    // (Bull Board's page asks for a web font: refused too, but the inspector is what must ask for nothing.)
    if (!page?.url().includes('/admin/queues')) offLoopback.push(route.request().url());
    return route.abort('blockedbyclient');
  });
  // Every Content-Security-Policy violation the pages report (none is expected: the app needs no exception).
  await context.exposeBinding('__cspViolation', (_source, text: string) => violations.push(text));
  // (Page scripts as text: the tests' TypeScript has no DOM types.)
  await context.addInitScript({
    content:
      "document.addEventListener('securitypolicyviolation', (e) => " +
      "window.__cspViolation(e.violatedDirective + ' ' + e.blockedURI));",
  });
  page = context.pages()[0] ?? (await context.newPage());
}, TEST_MS);

afterAll(async () => {
  for (const g of Object.values(gates)) g.open();
  await context?.close();
  await stack?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  console.info(`ui screenshots: ${SHOTS}`);
});

async function shot(name: string) {
  const path = join(SHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  expect(statSync(path).size).toBeGreaterThan(5_000);
}

const url = (path: string) => `${stack.api.url}${path}`;
/** Polls until `fn` gives the expected value (a page renders as data comes: each check waits for it). */
const poll = <T>(fn: () => Promise<T>) => expect.poll(fn, { timeout: WAIT_MS, interval: 50 });

/** Signs the browser in with `key` through the login page (once per describe). */
async function signIn(key: string) {
  await page.goto(url('/ui/login'));
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('.topbar').waitFor();
}
const rowsOf = (kind: string) => page.locator(`.timeline .tl-row[data-kind="${kind}"]`);
const runStatus = () => page.locator('.run-page').getAttribute('data-status');

describe('the browser login', { timeout: TEST_MS }, () => {
  it('sends / to the inspector, serves it under a CSP without inline script, and asks for a key', async () => {
    const root = await fetch(url('/'), { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/ui/');
    const res = await page.goto(url('/'));
    expect(res?.status()).toBe(200);
    const csp = res?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(page.url()).toBe(url('/ui/'));
    await page.getByLabel('API key').waitFor();
    await shot('login');
  });

  it('refuses a wrong key, and a login from another site', async () => {
    await page.getByLabel('API key').fill('not-a-key-at-all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('That key is not valid.').waitFor();
    const crossSite = await fetch(url('/ui/login'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'http://evil.test' },
      body: JSON.stringify({ key: KEY }),
    });
    expect(crossSite.status).toBe(403);
  });

  it('sets an HttpOnly, SameSite=Strict cookie that opens /v1, needs the CSRF token to change anything, and ends at logout', async () => {
    const login = await fetch(url('/ui/login'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key: OTHER }),
    });
    expect(login.status).toBe(200);
    const setCookie = login.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    const cookie = setCookie.split(';')[0]!;
    const { csrf_token, dashboard } = (await login.json()) as { csrf_token: string; dashboard: boolean };
    expect(dashboard).toBe(false);
    const run = await stack.createRun({ input: 'other tenant' }, OTHER);
    expect((await fetch(url(`/v1/runs/${run.id}`), { headers: { cookie } })).status).toBe(200);
    // The key's own run only: another key's run is a 404 to this login.
    const mine = await stack.createRun({ input: 'first of key a' });
    expect((await fetch(url(`/v1/runs/${mine.id}`), { headers: { cookie } })).status).toBe(404);
    const cancel = (headers: Record<string, string>) =>
      fetch(url(`/v1/runs/${run.id}/cancel`), { method: 'POST', headers: { cookie, ...headers } });
    expect((await cancel({})).status).toBe(403);
    expect((await cancel({ 'x-csrf-token': 'wrong' })).status).toBe(403);
    expect((await cancel({ 'x-csrf-token': csrf_token })).status).toBe(202);
    // This key is not an admin key: the dashboard refuses the login.
    expect((await fetch(url('/admin/queues'), { headers: { cookie } })).status).toBe(403);
    const logout = await fetch(url('/ui/logout'), { method: 'POST', headers: { cookie, 'x-csrf-token': csrf_token } });
    expect(logout.headers.get('set-cookie')).toMatch(/Max-Age=0/);
    expect((await fetch(url(`/v1/runs/${run.id}`), { headers: { cookie } })).status).toBe(401);
  });

  it('sends a browser at the dashboard to the login, and the same login opens Bull Board', async () => {
    const res = await page.goto(url('/admin/queues'));
    expect(res?.status()).toBe(200);
    expect(page.url()).toContain('/ui/login?next=');
    await page.getByLabel('API key').fill(KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/admin/queues**');
    await page.getByRole('link', { name: 'agent', exact: true }).first().waitFor();
    await shot('dashboard');
  });
});

describe('the run inspector', { timeout: TEST_MS }, () => {
  beforeAll(() => signIn(KEY), TEST_MS);

  it('lists the runs newest first with counts, filters, searches metadata, pages, and never shows another key’s run', async () => {
    const tagged = await stack.createRun({ input: 'tagged run', metadata: { customer: 'acme-42' } });
    const other = await stack.createRun({ input: 'not mine' }, OTHER);
    await stack.waitForRun(tagged.id);
    await page.goto(url('/ui/'));
    await page.locator(`tr[data-run="${tagged.id}"]`).waitFor();
    expect(await page.locator('tbody tr').first().getAttribute('data-run')).toBe(tagged.id);
    await poll(() => page.locator('.count[data-status="completed"] b').textContent()).toMatch(/^[1-9]/);
    expect(await page.locator(`tr[data-run="${other.id}"]`).count()).toBe(0);

    await page.getByPlaceholder('run id, or text in metadata').fill('acme-42');
    await page.getByRole('button', { name: 'Search' }).click();
    await poll(() => page.locator('tbody tr').count()).toBe(1);
    await page.locator(`tr[data-run="${tagged.id}"]`).waitFor();

    // One run per page: the second page holds the next older run.
    await page.goto(url('/ui/?limit=1'));
    await page.locator(`tr[data-run="${tagged.id}"]`).waitFor();
    await page.getByRole('button', { name: 'Older →' }).click();
    await poll(() => page.locator('tbody tr').first().getAttribute('data-run')).not.toBe(tagged.id);

    // Another key's run by its id: not found, as the API answers.
    await page.goto(url(`/ui/runs/${other.id}`));
    await page.getByText(`No run ${other.id}`).waitFor();
  });

  it('follows a live run to its end: the timeline gains its bars, the streamed text shows as it comes', async () => {
    const run = await stack.createRun({ input: 'live: who is Bob?' });
    await page.goto(url(`/ui/runs/${run.id}`));
    // The first model call in flight: one step, no call yet.
    await poll(() => rowsOf('step').count()).toBe(1);
    expect(await rowsOf('call').count()).toBe(0);
    await shot('run-live');
    gates.live0.open();
    await poll(() => rowsOf('call').count()).toBe(2);
    gates.live1.open();
    await poll(() => rowsOf('call').count()).toBe(3);
    gates.live2.open();
    await page.locator('[data-streaming="true"]').waitFor();
    await poll(runStatus).toBe('completed');
    await page.locator('.outcome').getByText('Acme').waitFor();
    expect(await rowsOf('step').count()).toBe(3);
    // The two calls of the first round ran side by side: their bars overlap in time.
    const bars = await rowsOf('call')
      .locator('.tl-bar')
      .evaluateAll((els) =>
        els.slice(0, 2).map((e) => {
          const r = e.getBoundingClientRect();
          return [r.left, r.right];
        }),
      );
    expect(bars[0]![0]!).toBeLessThan(bars[1]![1]!);
    expect(bars[1]![0]!).toBeLessThan(bars[0]![1]!);
    await page.locator('.tool-call[data-call] summary').first().waitFor();
    await shot('run-done');
  });

  it('nests a sub-run under the call that started it, opens it in place and on its own page', async () => {
    const run = await stack.createRun({ input: 'tree: ask a child', subagents: { enabled: true } });
    expect((await stack.waitForRun(run.id)).status).toBe('completed');
    await page.goto(url(`/ui/runs/${run.id}`));
    const sub = page.locator('.timeline .tl-row[data-kind="run"]').nth(1);
    await sub.waitFor();
    const childId = await sub.getAttribute('data-run');
    expect(childId).not.toBe(run.id);
    await sub.getByRole('button', { name: '▸' }).click();
    await page.locator(`.timeline .tl-row[data-kind="step"][data-run="${childId}"]`).waitFor();
    await shot('run-subrun');
    await sub.getByRole('link').click();
    await page.waitForURL(`**/ui/runs/${childId}`);
    await page.getByText('Alice Jones, of Globex.').first().waitFor();
    await page.getByText(`sub-run of ${run.id}`).waitFor();
    // The list without sub-runs, and the counts of each view, as the API gives them.
    const ids = async (q: string) => (await stack.getJson(`/v1/runs?limit=100${q}`)).data.map((r) => r.id);
    expect(await ids('')).toContain(childId);
    expect(await ids('&top_level=true')).not.toContain(childId);
    expect(await ids('&top_level=true')).toContain(run.id);
    const all = await stack.getJson('/v1/runs/counts');
    const top = await stack.getJson('/v1/runs/counts?top_level=true');
    expect(all.complete).toBe(true);
    expect(all.runs).toBe(Object.values(all.counts).reduce((a, b) => a + (b ?? 0), 0));
    expect(top.runs).toBeLessThan(all.runs);
  });

  it('cancels a running run from its page', async () => {
    const run = await stack.createRun({ input: 'hold: wait for ever' });
    await page.goto(url(`/ui/runs/${run.id}`));
    await poll(() => rowsOf('step').count()).toBe(1);
    await page.getByRole('button', { name: 'Cancel…' }).click();
    await page.getByRole('button', { name: 'Cancel the run and its sub-runs' }).click();
    await poll(runStatus).toBe('cancelled');
    expect((await stack.getJson(`/v1/runs/${run.id}`)).status).toBe('cancelled');
  });

  it('answers an approval from the inbox with arguments edited in a form from the tool’s schema', async () => {
    const run = await stack.createRun({ input: 'approve: move Alice', approval: { tools: ['crm__update_contact'] } });
    await waitFor(async () => (await stack.getJson(`/v1/runs/${run.id}`)).status === 'requires_action', {
      what: 'the run to wait for its approval',
      timeoutMs: WAIT_MS,
    });
    await page.goto(url('/ui/inbox'));
    const card = page.locator('.action-card', { hasText: run.id });
    await card.waitFor();
    await card.getByRole('button', { name: 'Edit…' }).click();
    await card.locator('input[name="company"]').fill('EPAM');
    await shot('inbox-edit');
    await card.getByRole('button', { name: 'Approve with these arguments' }).click();
    // Answered, the request leaves the pending inbox.
    await card.waitFor({ state: 'detached' });
    expect((await stack.waitForRun(run.id)).status).toBe('completed');
    expect(stack.crm.contacts.get('c2')?.company).toBe('EPAM');
    await page.goto(url(`/ui/runs/${run.id}`));
    await page.locator('.tool-call .badge.dec-approved').waitFor();
  });

  it('shows HTML in a tool output and in the model’s text as text, and runs none of it', async () => {
    const run = await stack.createRun({ input: 'hostile: render this' });
    expect((await stack.waitForRun(run.id)).status).toBe('completed');
    await page.goto(url(`/ui/runs/${run.id}`));
    await page.locator('.tool-call.is-error pre.output').getByText('<script>window.__pwned = 1</script>').waitFor();
    await page.locator('.outcome').getByText('<img src="x" onerror="window.__pwned = 2">').first().waitFor();
    expect(await page.evaluate('typeof window.__pwned')).toBe('undefined');
    expect(await page.locator('main script, main img, main iframe').count()).toBe(0);
    // The javascript: link is no link.
    expect(await page.locator('main a[href^="javascript"]').count()).toBe(0);
    await shot('run-hostile');
    expect(violations).toEqual([]);
    expect(offLoopback).toEqual([]);
  });

  it('renders a run of 50 steps and 3 sub-runs', async () => {
    const run = await stack.createRun({ input: 'big: fifty steps', max_depth: 60, subagents: { enabled: true } });
    expect((await stack.waitForRun(run.id, { timeoutMs: 60_000 })).status).toBe('completed');
    const started = Date.now();
    await page.goto(url(`/ui/runs/${run.id}`));
    await poll(() => rowsOf('step').count()).toBe(50);
    await page.locator('.transcript .msg.role-assistant[data-step="49"]').waitFor();
    const ms = Date.now() - started;
    expect(await page.locator('.timeline .tl-row[data-kind="run"]').count()).toBe(4);
    console.info(`ui: a run of 50 steps and 3 sub-runs rendered in ${ms} ms`);
    await shot('run-big');
  });
});
