import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ActionItem } from '@agentq/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyOf, errorOf, type GetBody, type TestRequestInit } from './fixtures/api-client.js';
import { startApp } from './fixtures/app.js';
import { callsThenEcho, scenarioModel } from './fixtures/scenarios.js';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

// Scenarios match on the start of the first user message (a sub-run's is its prompt).
const { handler, on } = scenarioModel();

const KEY = 'key-links-123456';
const SECRET = 'an-action-link-secret-of-forty-characters';
const HOOK_SECRET = 'hook-secret-123';

// Webhooks of every run of this file come here.
const received: Array<{ headers: IncomingMessage['headers']; body: string }> = [];
let hooks: Server;
let hookUrl: string;
let stack: Stack;
beforeAll(async () => {
  hooks = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`;
  stack = await startStack({
    handler,
    apiKey: KEY,
    env: { ACTION_LINK_SECRET: SECRET, WEBHOOK_ALLOW_PRIVATE: 'true' },
  });
});
afterAll(async () => {
  await stack?.close();
  await new Promise((r) => hooks?.close(r));
});

const json = async <P extends string>(path: P): Promise<GetBody<P>> => bodyOf(await stack.request(path));
/** With ACTION_LINK_SECRET set, every item carries its link. */
type LinkedItem = ActionItem & { respond_url: string };
/** Waits until the run waits for `count` answers, and returns its items. */
const waitingItems = async (id: string, count = 1): Promise<LinkedItem[]> =>
  waitFor(
    async () => {
      const run = await json(`/v1/runs/${id}`);
      const items = run.required_action?.items ?? [];
      return run.status === 'requires_action' && items.length === count ? (items as LinkedItem[]) : undefined;
    },
    { what: `run ${id} to wait for ${count} answers` },
  );
/** A request to a link with no API key: what a person's browser, or a chat bot, sends. */
const follow = (url: string, init: TestRequestInit = {}) => stack.request(url, { ...init, key: null });
const postForm = (url: string, fields: Record<string, string>) =>
  follow(url, { method: 'POST', body: new URLSearchParams(fields) });
const postJson = (url: string, body: unknown) => follow(url, { method: 'POST', json: body });
const crmCalls = (tool: string) => stack.crm.calls.filter((c) => c.tool === tool);
const step = async (id: string, index = 0) => (await json(`/v1/runs/${id}/steps`)).data[0].tool_calls[index];

describe('a signed link answers its request without an API key', () => {
  it(
    'shows a link on every pending item (the run, the list, ' +
      'the inbox); a form POST approves, the call runs, the run completes',
    async () => {
      on(
        'LINK approve',
        callsThenEcho([{ name: 'crm__update_contact', arguments: { id: 'c1', company: 'Linked Co' } }]),
      );
      const { id } = await stack.createRun({ input: 'LINK approve', approval: { tools: ['crm__update_contact'] } });
      const [item] = await waitingItems(id);
      expect(item.respond_url).toMatch(new RegExp(`^/v1/actions/${item.id}/respond\\?token=n\\.[A-Za-z0-9_-]{43}$`));
      const listed = (await json('/v1/runs?status=requires_action')).data.find((r) => r.id === id);
      expect(listed?.required_action?.items[0].respond_url).toBe(item.respond_url);
      const inbox = (await json('/v1/actions?status=pending')).data.find((a) => a.id === item.id);
      expect(inbox?.respond_url).toBe(item.respond_url);

      const res = await postForm(item.respond_url, { approve: 'true' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await res.text()).toContain('Approved: the tool call runs now.');
      const done = await stack.waitForRun(id);
      expect(done.status).toBe('completed');
      expect(JSON.parse(JSON.parse(done.output!.content as string)[0])).toMatchObject({
        id: 'c1',
        company: 'Linked Co',
      });
      expect(crmCalls('update_contact').filter((c) => c.args.company === 'Linked Co')).toHaveLength(1);
      expect((await step(id)).approval).toMatchObject({ decision: 'approved', by: 'link' });
      // The inbox shows it resolved, with no link any more.
      const resolved = (await json('/v1/actions?status=resolved')).data.find((a) => a.id === item.id);
      expect(resolved).toMatchObject({ status: 'resolved', decision: 'approved' });
      expect(resolved?.respond_url).toBeUndefined();

      // Used: the page and every answer are refused with 410, and nothing runs twice.
      const page = await follow(item.respond_url);
      expect(page.status).toBe(410);
      expect(await page.text()).toContain('already decided: approved');
      expect((await postForm(item.respond_url, { approve: 'false' })).status).toBe(410);
      const again = await postJson(item.respond_url, { approve: true });
      expect(again.status).toBe(410);
      expect(await errorOf(again)).toMatchObject({
        code: 'action_resolved',
        details: [{ decision: 'approved', at: expect.any(String) }],
      });
      expect(crmCalls('update_contact').filter((c) => c.args.company === 'Linked Co')).toHaveLength(1);
    },
  );

  it('takes a JSON answer to a question and answers with JSON; a second answer gets 410', async () => {
    on(
      'LINK question',
      callsThenEcho([{ name: 'ask_human', arguments: { question: 'Which Bob?', choices: ['Sales', 'IT'] } }]),
    );
    const { id } = await stack.createRun({ input: 'LINK question', human_input: true });
    const [item] = await waitingItems(id);
    const page = await (await follow(item.respond_url)).text();
    expect(page).toContain('Which Bob?');
    expect(page).toContain('<button type="submit" name="answer" value="IT">IT</button>');

    const res = await postJson(item.respond_url, { answer: 'IT' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      ...item,
      respond_url: undefined,
      status: 'resolved',
      decision: 'answered',
      resolved_at: expect.any(String),
    });
    const done = await stack.waitForRun(id);
    expect(JSON.parse(done.output!.content as string)).toEqual(['IT']);
    const late = await postJson(item.respond_url, { answer: 'Sales' });
    expect(late.status).toBe(410);
    expect((await errorOf(late)).code).toBe('action_resolved');
  });

  it("refuses a token on another item's URL and a tampered token alike (403), and opens no other endpoint", async () => {
    on(
      'LINK two',
      callsThenEcho([
        { name: 'crm__non_idempotent_write', arguments: { key: 'link-a' } },
        { name: 'crm__non_idempotent_write', arguments: { key: 'link-b' } },
      ]),
    );
    const { id } = await stack.createRun({ input: 'LINK two', approval: { tools: ['crm__non_idempotent_write'] } });
    const [a, b] = await waitingItems(id, 2);
    const tokenOf = (item: LinkedItem) => new URL(item.respond_url, 'http://x').searchParams.get('token')!;
    const pathOf = (item: ActionItem) => `/v1/actions/${item.id}/respond`;
    const aOnB = `${pathOf(b)}?token=${tokenOf(a)}`;
    const [expiry, signature] = tokenOf(b).split('.');
    const flipped = signature.slice(0, -1) + (signature.endsWith('A') ? 'B' : 'A');
    // Signed as a token of b is, with another secret.
    const forged = createHmac('sha256', 'another-secret-of-at-least-32-characters').update(b.id).digest('base64url');
    const refused = [
      aOnB,
      `${pathOf(b)}?token=${expiry}.${flipped}`,
      `${pathOf(b)}?token=${Date.now() + 3_600_000}.${signature}`,
      `${pathOf(b)}?token=${tokenOf(b).slice(0, -1)}`,
      `${pathOf(b)}?token=`,
      pathOf(b),
      `${pathOf(b)}?token=${forged}`,
    ];
    const messages = new Set<string>();
    for (const url of refused) {
      const page = await follow(url);
      expect(page.status, url).toBe(403);
      expect(await page.text()).toContain('This link is not valid');
      expect((await postForm(url, { approve: 'true' })).status, url).toBe(403);
      const viaJson = await postJson(url, { approve: true });
      expect(viaJson.status, url).toBe(403);
      messages.add(JSON.stringify(await errorOf(viaJson)));
    }
    // One answer for all of them: a refusal tells nothing about the request or the token.
    expect(messages.size).toBe(1);
    expect([...messages][0]).toBe(
      JSON.stringify({ code: 'forbidden', message: 'this link is not valid: its token does not open this request' }),
    );
    // Nothing was answered: both still wait, and nothing ran.
    expect((await json(`/v1/runs/${id}`)).required_action?.items.map((i) => i.id)).toEqual([a.id, b.id]);
    expect(stack.crm.calls.filter((c) => String(c.args?.key).startsWith('link-'))).toEqual([]);

    // The token is no key: with it, and without a key, the run and the other endpoints stay shut.
    const query = `?token=${tokenOf(a)}`;
    for (const path of [
      `/v1/runs/${id}`,
      `/v1/runs/${id}/events`,
      `/v1/runs/${id}/steps`,
      '/v1/actions',
      `/v1/actions/${a.id}`,
    ]) {
      expect((await follow(path + query)).status, path).toBe(401);
    }
    expect(
      (
        await follow(`/v1/runs/${id}/actions${query}`, {
          method: 'POST',
          body: JSON.stringify({ responses: [{ id: a.id, approve: true }] }),
          headers: { 'content-type': 'application/json' },
        })
      ).status,
    ).toBe(401);
    expect((await follow(`/v1/runs/${id}/cancel${query}`, { method: 'POST' })).status).toBe(401);
    expect((await follow(a.respond_url, { method: 'PUT', body: 'approve=true' })).status).toBe(401);

    // Each link answers its own item: a approved by form, b rejected with a reason by JSON.
    expect((await postForm(a.respond_url, { approve: 'true' })).status).toBe(200);
    expect((await postJson(b.respond_url, { approve: false, reason: 'not this one' })).status).toBe(200);
    const done = await stack.waitForRun(id);
    expect(JSON.parse(done.output!.content as string)[1]).toBe('The user rejected this call: not this one');
    expect(stack.crm.calls.filter((c) => String(c.args?.key).startsWith('link-')).map((c) => c.args.key)).toEqual([
      'link-a',
    ]);
  });

  it('refuses a link once its request has expired (410), and the call never runs', async () => {
    on('LINK expire', callsThenEcho([{ name: 'crm__non_idempotent_write', arguments: { key: 'link-expired' } }]));
    const { id } = await stack.createRun({
      input: 'LINK expire',
      approval: { tools: ['crm__non_idempotent_write'], timeout_ms: 1500 },
    });
    const [item] = await waitingItems(id);
    // The token carries the request's expiry.
    const expiresAt = Date.parse(item.expires_at!);
    expect(item.respond_url).toContain(`?token=${expiresAt}.`);
    expect((await follow(item.respond_url)).status).toBe(200);
    await waitFor(() => Date.now() > expiresAt, { what: 'the request to expire', timeoutMs: 5_000 });
    const page = await follow(item.respond_url);
    expect(page.status).toBe(410);
    expect(await page.text()).toContain('This link no longer works');
    const late = await postJson(item.respond_url, { approve: true });
    expect(late.status).toBe(410);
    expect((await errorOf(late)).code).toMatch(/^(link_gone|action_resolved)$/);
    expect((await postForm(item.respond_url, { approve: 'true' })).status).toBe(410);
    const done = await stack.waitForRun(id);
    expect(JSON.parse(done.output!.content as string)).toEqual([
      'Error executing crm__non_idempotent_write: no one approved this call in time',
    ]);
    expect((await step(id)).approval).toMatchObject({ decision: 'expired', by: 'agentq' });
    expect(stack.crm.calls.filter((c) => c.args?.key === 'link-expired')).toEqual([]);
  });
});

describe('the page', () => {
  it('shows the tool and its arguments with every hostile character escaped, under a strict CSP and no referrer', async () => {
    const hostile = '<script>alert("x")</script> & </textarea><b>bold</b> \'q\'';
    on('LINK page', callsThenEcho([{ name: 'crm__update_contact', arguments: { id: 'c2', company: hostile } }]));
    const { id } = await stack.createRun({ input: 'LINK page', approval: { tools: ['crm__update_contact'] } });
    const [item] = await waitingItems(id);
    const res = await follow(item.respond_url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html; charset=UTF-8/i);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp.split('; ')).toEqual([
      "default-src 'none'",
      expect.stringMatching(/^style-src 'sha256-[A-Za-z0-9+/]+=*'$/),
      "form-action 'self'",
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ]);
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const html = await res.text();
    expect(html).toContain('<code>crm__update_contact</code>');
    // The arguments, pretty-printed and escaped: the text is there, no markup of it is.
    expect(html).toContain(
      '&#60;script&#62;alert(\\&#34;x\\&#34;)&#60;/script&#62; &#38; ' +
        '&#60;/textarea&#62;&#60;b&#62;bold&#60;/b&#62; &#39;q&#39;',
    );
    expect(html).toContain('  &#34;id&#34;: &#34;c2&#34;,\n');
    expect(html).not.toMatch(/<script|<b>|<img|<link|src=|url\(/i);
    expect(html.match(/<textarea/g)).toHaveLength(2);
    expect(html.match(/<\/textarea>/g)).toHaveLength(2);
    // The style block is the one the CSP's hash allows, and nothing else loads.
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1];
    expect(csp).toContain(`'sha256-${createHash('sha256').update(style).digest('base64')}'`);

    // An edit that does not fit the tool's schema is refused on a page naming the field; nothing is stored.
    const bad = await postForm(item.respond_url, { approve: 'true', arguments: '{"id":"c2","company":7}' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain(
      'arguments: do not fit the input schema of crm__update_contact: /company must be string',
    );
    expect((await json(`/v1/runs/${id}`)).status).toBe('requires_action');
    // The edit box sent back unchanged (as a browser sends it, CRLF line ends) is a plain approval.
    const unchanged = JSON.stringify({ id: 'c2', company: hostile }, null, 2).replace(/\n/g, '\r\n');
    expect((await postForm(item.respond_url, { approve: 'true', arguments: unchanged })).status).toBe(200);
    await stack.waitForRun(id);
    const approval = (await step(id)).approval;
    expect(approval).toMatchObject({ decision: 'approved', by: 'link' });
    expect(approval?.arguments).toBeUndefined();
    expect(
      crmCalls('update_contact')
        .filter((c) => c.args.id === 'c2')
        .map((c) => c.args.company),
    ).toEqual([hostile]);
  });

  it('runs edited arguments sent by the form, and escapes a hostile question and its choices', async () => {
    on('LINK edit', callsThenEcho([{ name: 'crm__update_contact', arguments: { id: 'c1', company: 'Before' } }]));
    const { id } = await stack.createRun({ input: 'LINK edit', approval: { tools: ['crm__update_contact'] } });
    const [item] = await waitingItems(id);
    expect(
      (
        await postForm(item.respond_url, {
          approve: 'true',
          arguments: '{\r\n  "id": "c1",\r\n  "company": "After"\r\n}',
        })
      ).status,
    ).toBe(200);
    await stack.waitForRun(id);
    expect((await step(id)).approval).toMatchObject({
      decision: 'approved',
      by: 'link',
      arguments: '{\r\n  "id": "c1",\r\n  "company": "After"\r\n}',
    });
    expect(
      crmCalls('update_contact')
        .filter((c) => ['Before', 'After'].includes(String(c.args.company)))
        .map((c) => c.args.company),
    ).toEqual(['After']);

    const choice = '"><img src=x onerror=alert(1)>';
    on(
      'LINK hostile question',
      callsThenEcho([
        { name: 'ask_human', arguments: { question: '</p><script>steal()</script>?', choices: [choice] } },
      ]),
    );
    const q = await stack.createRun({ input: 'LINK hostile question', human_input: true });
    const [asked] = await waitingItems(q.id);
    const html = await (await follow(asked.respond_url)).text();
    expect(html).not.toMatch(/<script|<img/i);
    expect(html).toContain('&#60;/p&#62;&#60;script&#62;steal()&#60;/script&#62;?');
    expect(html).toContain('value="&#34;&#62;&#60;img src=x onerror=alert(1)&#62;"');
    // The choice's button sends the choice as it was, byte for byte.
    expect((await postForm(asked.respond_url, { answer: choice })).status).toBe(200);
    expect(JSON.parse((await stack.waitForRun(q.id)).output!.content as string)).toEqual([choice]);
  });

  it('refuses a bad answer with a 400 naming the field, a body neither form nor JSON (415) and a large one (413)', async () => {
    on('LINK malformed', callsThenEcho([{ name: 'crm__non_idempotent_write', arguments: { key: 'link-malformed' } }]));
    const { id } = await stack.createRun({
      input: 'LINK malformed',
      approval: { tools: ['crm__non_idempotent_write'] },
    });
    const [item] = await waitingItems(id);
    const url = item.respond_url;
    const fieldOf = async (res: Response) => {
      expect(res.status).toBe(400);
      return (await errorOf(res)).details?.[0].field;
    };
    expect(await fieldOf(await postJson(url, { output: 'x' }))).toBe('approve');
    expect(await fieldOf(await postJson(url, { approve: true, surprise: 1 }))).toBe('surprise');
    expect(await fieldOf(await postJson(url, { approve: 'yes' }))).toBe('approve');
    expect(await fieldOf(await postJson(url, { approve: false, arguments: '{}' }))).toBe('arguments');
    expect(await fieldOf(await postJson(url, { id: `${item.id.slice(0, -1)}9`, approve: true }))).toBe('id');
    expect(await fieldOf(await postJson(url, { approve: true, arguments: '[1]' }))).toBe('arguments');
    for (const [fields, named] of [
      [{ approve: 'maybe' }, 'approve: &#34;true&#34; or &#34;false&#34;'],
      [{ answer: 'x' }, 'approve: act_'],
    ] as const) {
      const res = await postForm(url, fields as Record<string, string>);
      expect(res.status).toBe(400);
      expect(await res.text()).toContain(named);
    }
    const rawForm = (body: string) =>
      follow(url, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const twice = await rawForm('approve=true&approve=false');
    expect(twice.status).toBe(400);
    expect(await twice.text()).toContain('approve: given more than once');
    const proto = await rawForm('approve=true&__proto__=1&constructor=x');
    expect(proto.status).toBe(400);
    expect(await proto.text()).toContain('__proto__: unknown field');
    // Bytes, so that fetch adds no content type of its own (a string would be sent as text/plain).
    for (const type of ['text/plain', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencodedx', '']) {
      const res = await follow(url, {
        method: 'POST',
        body: new TextEncoder().encode('approve=true'),
        headers: type ? { 'content-type': type } : {},
      });
      expect(res.status, type).toBe(415);
    }
    const big = await postJson(url, { approve: false, reason: 'x'.repeat(3 * 1024 * 1024) });
    expect(big.status).toBe(413);
    // None of it was taken.
    expect((await json(`/v1/runs/${id}`)).required_action?.items.map((i) => i.id)).toEqual([item.id]);
    expect((await stack.request(`/v1/runs/${id}/cancel`, { method: 'POST' })).status).toBe(202);
    expect((await follow(url)).status).toBe(410);
    expect(stack.crm.calls.filter((c) => c.args?.key === 'link-malformed')).toEqual([]);
  });
});

describe('webhooks', () => {
  it('carry the links in run.requires_action, and such a link answers', async () => {
    on('LINK hook', callsThenEcho([{ name: 'crm__non_idempotent_write', arguments: { key: 'link-hook' } }]));
    const { id } = await stack.createRun({
      input: 'LINK hook',
      approval: { tools: ['crm__non_idempotent_write'] },
      webhook: { url: hookUrl, secret: HOOK_SECRET },
    });
    const [item] = await waitingItems(id);
    const hook = await waitFor(
      () =>
        received
          .map((r) => ({ ...r, payload: JSON.parse(r.body) }))
          .find((r) => r.payload.type === 'run.requires_action' && r.payload.data.id === id),
      { what: 'the run.requires_action webhook' },
    );
    const signed = `${hook.headers['webhook-id']}.${hook.headers['webhook-timestamp']}.${hook.body}`;
    expect(hook.headers['webhook-signature']).toBe(
      `v1,${createHmac('sha256', HOOK_SECRET).update(signed).digest('base64')}`,
    );
    const [sent] = hook.payload.data.required_action.items;
    expect(sent).toMatchObject({ id: item.id, respond_url: item.respond_url });

    expect((await postJson(sent.respond_url, { approve: false, reason: 'from the chat' })).status).toBe(200);
    const done = await stack.waitForRun(id);
    expect(JSON.parse(done.output!.content as string)).toEqual(['The user rejected this call: from the chat']);
    expect(stack.crm.calls.filter((c) => c.args?.key === 'link-hook')).toEqual([]);
  });
});

describe('without ACTION_LINK_SECRET', () => {
  it('shows no links, and the path opens nothing', async () => {
    const app = await startApp({ apiKey: KEY });
    try {
      const res = await app.request(`/v1/actions/act_0123456789abcdefghijk_0_0/respond?token=n.${'A'.repeat(43)}`, {
        key: null,
      });
      expect(res.status).toBe(404);
      expect(await res.text()).toContain('answering by link is off');
      expect(app.deps.decorateAction).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});
