import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ActionResolvedError,
  AgentqApiError,
  AgentqClient,
  type ActionItem,
  type InboxItem,
  type Run,
} from '@agentq/client';
import { linePrompter } from '../packages/client/src/action-prompt.js';
import { main } from '../packages/client/src/cli-main.js';
import { buildCliIfStale, CLI, runCli, startCli, type CliOptions } from './fixtures/cli.js';
import type { ChatRequest, Handler, Reply, ToolCallReply } from '@agentq/scripted-llm';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

// The client's and the CLI's side of runs that wait: list the requests, answer them, lose a race.

const firstUser = (req: ChatRequest) => (req.messages.find((m) => m.role === 'user')?.content as string) ?? '';
const round = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const toolMessages = (req: ChatRequest) =>
  req.messages.filter((m) => m.role === 'tool').map((m) => m.content as string);
/** A model that makes `calls` in its first step, then answers with the tool messages it got (as JSON). */
const callsThenEcho =
  (calls: ToolCallReply['tool_calls']) =>
  (req: ChatRequest): Reply =>
    round(req) === 0 ? { tool_calls: calls } : { content: JSON.stringify(toolMessages(req)) };

// Each scenario matches on the start of the first user message; the rest of it names the call.
const rest = (req: ChatRequest, prefix: string) => firstUser(req).slice(prefix.length).trim();
const scenarios: Array<[string, (req: ChatRequest) => Reply]> = [
  [
    'WRITE',
    (req) => callsThenEcho([{ name: 'crm__non_idempotent_write', arguments: { key: rest(req, 'WRITE') } }])(req),
  ],
  [
    'UPDATE',
    (req) =>
      callsThenEcho([{ name: 'crm__update_contact', arguments: { id: 'c2', company: rest(req, 'UPDATE') } }])(req),
  ],
  [
    'ASK',
    (req) =>
      callsThenEcho([{ name: 'ask_human', arguments: { question: rest(req, 'ASK'), choices: ['Sales', 'IT'] } }])(req),
  ],
  ['LOCATE', callsThenEcho([{ name: 'get_location', arguments: { precise: true } }])],
  [
    'THREE',
    (req) =>
      callsThenEcho([
        { name: 'crm__non_idempotent_write', arguments: { key: `${rest(req, 'THREE')}-approved` } },
        { name: 'crm__non_idempotent_write', arguments: { key: `${rest(req, 'THREE')}-rejected` } },
        { name: 'crm__update_contact', arguments: { id: 'c1', company: 'Wrong Co' } },
      ])(req),
  ],
  [
    'DELEGATE',
    (req) =>
      round(req) === 0
        ? { tool_calls: [{ name: 'agent_query', arguments: { prompt: `WRITE ${rest(req, 'DELEGATE')}` } }] }
        : { content: `child: ${toolMessages(req)[0]}` },
  ],
];
const handler: Handler = (req) =>
  scenarios.find(([p]) => firstUser(req).startsWith(p))?.[1](req) ?? { content: 'no scenario' };

const KEY = 'client-actions-key';
/** Keys of their own for the inbox tests and the CLI's: each inbox holds only what its tests create. */
const INBOX_KEY = 'client-inbox-key';
const CLI_KEY = 'cli-actions-key';
const gated = { approval: { tools: ['crm__non_idempotent_write', 'crm__update_contact'] } };
const locationTool = {
  type: 'function' as const,
  function: {
    name: 'get_location',
    description: "The user's city",
    parameters: { type: 'object', properties: { precise: { type: 'boolean' } } },
  },
};

let stack: Stack;
let client: AgentqClient;
let inboxClient: AgentqClient;
let cliClient: AgentqClient;

beforeAll(async () => {
  await buildCliIfStale();
  stack = await startStack({ handler, apiKey: KEY, env: { API_KEYS: `${KEY},${INBOX_KEY},${CLI_KEY}` } });
  client = new AgentqClient({ baseUrl: stack.api.url, apiKey: KEY });
  inboxClient = new AgentqClient({ baseUrl: stack.api.url, apiKey: INBOX_KEY });
  cliClient = new AgentqClient({ baseUrl: stack.api.url, apiKey: CLI_KEY });
});
afterAll(async () => stack?.close());

/** Waits until the run waits for `count` answers, and returns it. */
const waiting = (c: AgentqClient, id: string, count = 1) =>
  waitFor(
    async () => {
      const run = await c.getRun(id);
      return run.status === 'requires_action' && run.required_action?.items.length === count ? run : undefined;
    },
    { what: `run ${id} to wait for ${count} answer(s)` },
  );
const writes = (key: string) => stack.crm.calls.filter((c) => c.tool === 'non_idempotent_write' && c.args?.key === key);
const toolMessagesOf = (run: Run) => JSON.parse(run.output!.content as string) as string[];

describe('AgentqClient: requests for an answer', () => {
  it('shows a waiting request on the run and in the inbox, approves it, and lists it resolved', async () => {
    const created = await inboxClient.createRun({ input: 'WRITE approve-me', ...gated });
    const run = await waiting(inboxClient, created.id);
    const [item] = run.required_action!.items;
    expect(item).toEqual<ActionItem>({
      id: expect.stringMatching(new RegExp(`^act_${run.id.slice(4)}_0_0$`)),
      type: 'approval',
      run_id: run.id,
      tool_call_id: expect.any(String),
      name: 'crm__non_idempotent_write',
      arguments: '{"key":"approve-me"}',
      created_at: expect.any(String),
      expires_at: null,
    });
    const pending = await inboxClient.listActions({ status: 'pending' });
    expect(pending).toEqual({ data: [{ ...item, status: 'pending' }], next: null });
    expect(writes('approve-me')).toEqual([]);

    const answered = await inboxClient.approve(run.id, item.id);
    expect(answered.id).toBe(run.id);
    const done = await inboxClient.waitForRun(run.id, { timeoutMs: 20_000 });
    expect(done.status).toBe('completed');
    expect(writes('approve-me')).toHaveLength(1);
    const resolved = await inboxClient.listActions({ status: 'resolved' });
    expect(resolved.data).toEqual([
      { ...item, status: 'resolved', decision: 'approved', resolved_at: expect.any(String) },
    ]);
    expect((await inboxClient.listActions({ status: 'pending' })).data).toEqual([]);
    const [step] = await inboxClient.getSteps(run.id);
    expect(step.tool_calls[0].approval).toMatchObject({ id: item.id, type: 'approval', decision: 'approved' });
  });

  it('pages through the inbox, newest first, and answers questions', async () => {
    const ids: string[] = [];
    for (const q of ['Which Bob?', 'Which Alice?', 'Which Carol?']) {
      const created = await inboxClient.createRun({ input: `ASK ${q}`, human_input: true });
      await waiting(inboxClient, created.id);
      ids.push(created.id);
    }
    const first = await inboxClient.listActions({ status: 'pending', limit: 2 });
    expect(first.data.map((i) => i.run_id)).toEqual([ids[2], ids[1]]);
    expect(first.data[0]).toMatchObject({
      type: 'input',
      question: 'Which Carol?',
      choices: ['Sales', 'IT'],
      status: 'pending',
    });
    expect(first.next).toBe(first.data[1].id);
    const second = await inboxClient.listActions({ status: 'pending', limit: 2, after: first.next! });
    expect(second).toEqual({ data: [expect.objectContaining({ run_id: ids[0] })], next: null });

    const all: InboxItem[] = [];
    for await (const i of inboxClient.listAllActions({ status: 'pending', limit: 1 })) all.push(i);
    expect(all.map((i) => i.run_id)).toEqual([...ids].reverse());

    for (const [n, i] of all.entries()) await inboxClient.answer(i.run_id, i.id, `answer ${n}`);
    const done = await Promise.all(ids.map((id) => inboxClient.waitForRun(id, { timeoutMs: 20_000 })));
    expect(done.map(toolMessagesOf)).toEqual([['answer 2'], ['answer 1'], ['answer 0']]);
  });

  it('rejects a call with a reason: it never runs and the model reads why', async () => {
    const created = await client.createRun({ input: 'WRITE reject-me', ...gated });
    const [item] = (await waiting(client, created.id)).required_action!.items;
    await client.reject(created.id, item.id, 'wrong customer');
    const done = await client.waitForRun(created.id, { timeoutMs: 20_000 });
    expect(toolMessagesOf(done)).toEqual(['The user rejected this call: wrong customer']);
    expect(writes('reject-me')).toEqual([]);
  });

  it('approves with edited arguments, and reports an edit that does not fit the schema as a 400 naming the field', async () => {
    const created = await client.createRun({ input: 'UPDATE Wrong Co', ...gated });
    const [item] = (await waiting(client, created.id)).required_action!.items;
    const bad = await client.approve(created.id, item.id, { arguments: { id: 'c2', company: 7 } }).catch((e) => e);
    expect(bad).toBeInstanceOf(AgentqApiError);
    expect(bad).not.toBeInstanceOf(ActionResolvedError);
    expect(bad).toMatchObject({ status: 400, code: 'validation_error' });
    expect(bad.details).toEqual([
      { field: 'responses.0.arguments', message: expect.stringContaining('/company must be string') },
    ]);
    // Arguments as JSON text go as they are.
    await client.approve(created.id, item.id, { arguments: '{"id":"c2","company":"EPAM"}' });
    await client.waitForRun(created.id, { timeoutMs: 20_000 });
    const updates = stack.crm.calls.filter((c) => c.tool === 'update_contact' && c.args?.id === 'c2');
    expect(updates.map((c) => c.args.company)).toEqual(['EPAM']);
  });

  it("gives a client tool's call the output the caller submits", async () => {
    const created = await client.createRun({ input: 'LOCATE', client_tools: [locationTool] });
    const [item] = (await waiting(client, created.id)).required_action!.items;
    expect(item).toMatchObject({ type: 'client_tool', name: 'get_location', arguments: '{"precise":true}' });
    // An answer of the wrong kind is a 400 that says which kind it takes.
    const wrong = await client.answer(created.id, item.id, 'Berlin').catch((e) => e);
    expect(wrong).toMatchObject({ status: 400, message: expect.stringContaining('answer with "output"') });
    await client.submitToolOutput(created.id, item.id, 'Berlin');
    expect(toolMessagesOf(await client.waitForRun(created.id, { timeoutMs: 20_000 }))).toEqual(['Berlin']);
  });

  it(
    'lets exactly one of two racing answers win; ' +
      'the loser gets ActionResolvedError (409 action_resolved) saying how it was decided',
    async () => {
      const created = await client.createRun({ input: 'WRITE race-me', ...gated });
      const [item] = (await waiting(client, created.id)).required_action!.items;
      const other = new AgentqClient({ baseUrl: stack.api.url, apiKey: KEY });
      const results = await Promise.allSettled([
        client.approve(created.id, item.id),
        other.reject(created.id, item.id, 'too late?'),
      ]);
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      const err = lost[0].reason;
      expect(err).toBeInstanceOf(ActionResolvedError);
      expect(err).toBeInstanceOf(AgentqApiError);
      expect(err).toMatchObject({ status: 409, code: 'action_resolved' });
      const winner = results[0].status === 'fulfilled' ? 'approved' : 'rejected';
      expect(err.resolved).toEqual([{ id: item.id, decision: winner, at: expect.any(String) }]);

      const done = await client.waitForRun(created.id, { timeoutMs: 20_000 });
      expect(writes('race-me')).toHaveLength(winner === 'approved' ? 1 : 0);
      // Once decided, every later answer is refused the same way.
      const late = await client.approve(created.id, item.id).catch((e) => e);
      expect(late).toBeInstanceOf(ActionResolvedError);
      expect(late.resolved[0]).toMatchObject({ id: item.id, decision: winner });
      expect(done.status).toBe('completed');
    },
  );

  it("answers a sub-run's request on the sub-run itself as well as on the root", async () => {
    const created = await client.createRun({ input: 'DELEGATE child-write', subagents: { enabled: true }, ...gated });
    const [item] = (await waiting(client, created.id)).required_action!.items;
    expect(item.run_id).not.toBe(created.id);
    const child = await client.getRun(item.run_id);
    expect(child).toMatchObject({
      status: 'requires_action',
      parent_run_id: created.id,
      required_action: { items: [expect.objectContaining({ id: item.id })] },
    });
    const answered = await client.approve(item.run_id, item.id);
    expect(answered.id).toBe(item.run_id);
    const done = await client.waitForRun(created.id, { timeoutMs: 20_000 });
    expect(done.output?.content).toMatch(/^child: /);
    expect(writes('child-write')).toHaveLength(1);
  });
});

describe('the agentq CLI: requests for an answer', () => {
  const cli = (args: string[], o: Omit<CliOptions, 'url'> = {}) =>
    runCli(args, { url: stack.api.url, apiKey: CLI_KEY, ...o });
  const waitingItem = async (input: string, extra: Record<string, unknown>) => {
    const created = await cliClient.createRun({ input, ...extra });
    return (await waiting(cliClient, created.id)).required_action!.items[0];
  };

  it('actions ls lists the requests, approve / reject / answer answer them, and a second answer exits 5', async () => {
    const write = await waitingItem('WRITE cli-approve', gated);
    const refused = await waitingItem('WRITE cli-reject', gated);
    const question = await waitingItem('ASK Which team?', { human_input: true });
    const location = await waitingItem('LOCATE', { client_tools: [locationTool] });

    const ls = await cli(['actions', 'ls', '--status', 'pending']);
    expect(ls.code, ls.stderr).toBe(0);
    const lines = ls.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TYPE\s+STATUS\s+CREATED\s+WHAT$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual([location.id, question.id, refused.id, write.id]);
    expect(ls.stdout).toMatch(
      new RegExp(
        `^${write.id}\\s+approval\\s+pending\\s+${write.created_at}\\s+approve ` +
          `crm__non_idempotent_write \\{"key":"cli-approve"\\}$`,
        'm',
      ),
    );
    expect(ls.stdout).toMatch(
      new RegExp(`^${question.id}\\s+input\\s+pending\\s+\\S+\\s+question: Which team\\? \\(Sales \\| IT\\)$`, 'm'),
    );
    expect(ls.stdout).toMatch(
      new RegExp(
        `^${location.id}\\s+client_tool\\s+pending\\s+\\S+\\s+client tool get_location \\{"precise":true\\}$`,
        'm',
      ),
    );
    const page = await cli(['actions', 'ls', '--status', 'pending', '--limit', '2']);
    expect(page.stdout).toContain(`more: agentq actions ls --status pending --after ${question.id}`);
    const json = JSON.parse((await cli(['actions', 'ls', '--json', '--limit', '2', '--after', question.id])).stdout);
    expect(json.data.map((i: InboxItem) => i.id)).toEqual([refused.id, write.id]);

    const approve = await cli(['actions', 'approve', write.id]);
    expect(approve.code, approve.stderr).toBe(0);
    expect(approve.stdout).toMatch(new RegExp(`^${write.id} approved · ${write.run_id} is \\w+\\n$`));
    const reject = await cli(['actions', 'reject', refused.id, '--reason', 'not this one']);
    expect(reject.code, reject.stderr).toBe(0);
    expect(reject.stdout).toMatch(new RegExp(`^${refused.id} rejected · `));
    // The answer's words are joined; a client tool's output can come on stdin.
    const answer = await cli(['actions', 'answer', question.id, 'the', 'one', 'in', 'Sales']);
    expect(answer.code, answer.stderr).toBe(0);
    expect(answer.stdout).toMatch(new RegExp(`^${question.id} answered · `));
    const output = await cli(['actions', 'answer', location.id, '-'], { stdin: 'Berlin,  DE\n' });
    expect(output.code, output.stderr).toBe(0);
    expect(output.stdout).toMatch(new RegExp(`^${location.id} output sent · `));

    const done = await Promise.all(
      [write, refused, question, location].map((i) => cliClient.waitForRun(i.run_id, { timeoutMs: 20_000 })),
    );
    expect(done.map(toolMessagesOf)).toEqual([
      [expect.stringContaining('cli-approve')],
      ['The user rejected this call: not this one'],
      ['the one in Sales'],
      ['Berlin,  DE'],
    ]);
    expect(writes('cli-approve')).toHaveLength(1);
    expect(writes('cli-reject')).toEqual([]);

    const resolved = await cli(['actions', 'ls', '--status', 'resolved']);
    expect(resolved.stdout).toMatch(new RegExp(`^${refused.id}\\s+approval\\s+rejected\\s`, 'm'));
    expect(resolved.stdout).toMatch(new RegExp(`^${write.id}\\s+approval\\s+approved\\s`, 'm'));
    // A second answer lost: exit 5, saying how it was decided.
    const again = await cli(['actions', 'reject', write.id]);
    expect(again.code).toBe(5);
    expect(again.stderr).toMatch(new RegExp(`^agentq: ${write.id} was decided already: approved at \\d{4}-`));
    const late = await cli(['actions', 'answer', question.id, 'too late']);
    expect(late.code).toBe(5);
    expect(late.stderr).toContain(`${question.id} was decided already: answered`);
    expect((await cli(['actions', 'ls', '--status', 'pending'])).stdout).toBe('nothing waits for an answer\n');
  });

  it(
    'approve --arguments: a local check for JSON, the API for the schema; ' +
      'a sub-run request answered on the sub-run or, with --run, on the root',
    async () => {
      const update = await waitingItem('UPDATE Wrong Co', gated);
      const notJson = await cli(['actions', 'approve', update.id, '--arguments', '{"id":']);
      expect(notJson.code).toBe(64);
      expect(notJson.stderr).toMatch(/^agentq: --arguments: not JSON/);
      const badSchema = await cli(['actions', 'approve', update.id, '--arguments', '{"id":"c2","company":7}']);
      expect(badSchema.code).toBe(4);
      expect(badSchema.stderr).toMatch(
        /400 validation_error: responses\.0\.arguments: do not fit the input schema of crm__update_contact/,
      );
      const edited = await cli(['actions', 'approve', update.id, '--arguments', '{"id":"c2","company":"Hooli"}']);
      expect(edited.code, edited.stderr).toBe(0);
      expect(edited.stdout).toMatch(/ approved with the edited arguments · /);
      await cliClient.waitForRun(update.run_id, { timeoutMs: 20_000 });
      expect(stack.crm.calls.filter((c) => c.tool === 'update_contact' && c.args?.company === 'Hooli')).toHaveLength(1);

      for (const [key, onRoot] of [
        ['sub-default', false],
        ['sub-on-root', true],
      ] as const) {
        const root = await cliClient.createRun({ input: `DELEGATE ${key}`, subagents: { enabled: true }, ...gated });
        const [item] = (await waiting(cliClient, root.id)).required_action!.items;
        expect(item.run_id).not.toBe(root.id);
        const r = await cli(['actions', 'approve', item.id, ...(onRoot ? ['--run', root.id] : [])]);
        expect(r.code, r.stderr).toBe(0);
        // The run the answer went to is the one it names.
        expect(r.stdout).toMatch(new RegExp(`^${item.id} approved · ${onRoot ? root.id : item.run_id} is `));
        await cliClient.waitForRun(root.id, { timeoutMs: 20_000 });
        expect(writes(key)).toHaveLength(1);
      }
    },
  );

  it('refuses bad usage with 64 and names what is wrong', async () => {
    const question = await waitingItem('ASK Approve me?', { human_input: true });
    const cases: Array<[string[], RegExp]> = [
      [['actions'], /needs a command: ls, approve, reject or answer/],
      [['actions', 'frob'], /unknown command "actions frob"/],
      [['actions', 'ls', '--status', 'waiting'], /--status of actions ls is pending or resolved \(got "waiting"\)/],
      [['actions', 'approve'], /takes one request id/],
      [['actions', 'approve', 'act_nope'], /"act_nope" is not a request id .*give the run with --run/],
      [['actions', 'answer', question.id], /takes a request id and the answer/],
      [['actions', 'reject', question.id, '--reason', 'r'.repeat(4001)], /--reason: at most 4000 characters/],
    ];
    for (const [args, why] of cases) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(64);
      expect(r.stderr).toMatch(why);
    }
    // The kind of request decides the command: an approval is not answered with text...
    const write = await waitingItem('WRITE cli-usage', gated);
    const get = await cli(['runs', 'get', write.run_id]);
    expect(get.stdout).toContain(
      `requires_action · depth 0/10\n  ⏸ approve crm__non_idempotent_write ` +
        `{"key":"cli-usage"} · ${write.id}\n    agentq actions approve ${write.id} `,
    );
    const text = await cli(['actions', 'answer', write.id, 'yes']);
    expect(text.code).toBe(64);
    expect(text.stderr).toMatch(
      /asks to approve a call of crm__non_idempotent_write: use agentq actions approve or reject/,
    );
    // ...and a question is not approved: the API says so.
    const approved = await cli(['actions', 'approve', question.id]);
    expect(approved.code).toBe(4);
    expect(approved.stderr).toMatch(/400 validation_error: .*asks a question: answer with "answer"/);
    for (const run of [write.run_id, question.run_id]) await cliClient.cancelRun(run);
  });

  it(
    'run --follow with stdin not a terminal asks nothing: ' +
      'it prints the request and the command that answers it, and goes on when it is answered',
    async () => {
      const p = startCli(['run', 'WRITE follow-hint', '--follow', '--approve-tools', 'crm__non_idempotent_write'], {
        url: stack.api.url,
        apiKey: CLI_KEY,
      });
      // What is piped in is not taken as an answer.
      p.child.stdin.write('a\n');
      const id = (await waitFor(() => /agentq actions approve (act_\w+)/.exec(p.stderr)?.[1], {
        what: 'the hint',
        timeoutMs: 20_000,
      }))!;
      expect(p.stderr).toMatch(
        new RegExp(`^ {2}⏸ approve crm__non_idempotent_write \\{"key":"follow-hint"\\} · ${id}$`, 'm'),
      );
      expect(p.stderr).toContain('waiting for an answer (no terminal to ask in); answer from another shell:');
      expect(p.stderr).toContain(
        `    agentq actions approve ${id} [--arguments '<json>']  or  agentq actions reject ${id} [--reason '<why>']`,
      );
      const runId = `run_${id.split('_')[1]}`;
      await new Promise((r) => setTimeout(r, 300));
      expect((await cliClient.getRun(runId)).status).toBe('requires_action');
      expect(writes('follow-hint')).toEqual([]);

      expect((await cli(['actions', 'approve', id])).code).toBe(0);
      const done = await p.exited;
      expect(done.code, done.stderr).toBe(0);
      expect(done.stderr).toContain(`  ✓ ${id} approved`);
      expect(done.stderr).toMatch(/completed \(stop\)/);
      expect(JSON.parse(done.stdout)).toEqual([expect.stringContaining('follow-hint')]);
    },
  );

  it(
    "run's waiting options: --client-tools (JSON or @file), " +
      '--approve-destructive with a timeout that stops the run (exit 2), and their misuse (64)',
    async () => {
      const toolsDir = mkdtempSync(join(tmpdir(), 'agentq-cli-'));
      const file = join(toolsDir, 'tools.json');
      writeFileSync(file, JSON.stringify([locationTool]));
      const detached = await cli(['run', 'LOCATE', '--client-tools', `@${file}`, '--detach']);
      rmSync(toolsDir, { recursive: true, force: true });
      expect(detached.code, detached.stderr).toBe(0);
      const [item] = (await waiting(cliClient, detached.stdout.trim())).required_action!.items;
      expect(item).toMatchObject({ type: 'client_tool', name: 'get_location' });
      await cliClient.cancelRun(item.run_id);

      const stopped = await cli([
        'run',
        'WRITE cli-expire',
        '--approve-destructive',
        '--approval-timeout-ms',
        '300',
        '--on-approval-timeout',
        'stop',
      ]);
      expect(stopped.code, stopped.stderr).toBe(2);
      expect(stopped.stderr).toMatch(/⏸ approve crm__non_idempotent_write \{"key":"cli-expire"\} · act_\w+\n/);
      expect(stopped.stderr).toMatch(/incomplete \(approval_timeout\)/);
      expect(writes('cli-expire')).toEqual([]);

      const misuse: Array<[string[], RegExp]> = [
        [['--client-tools', '{'], /--client-tools must be a JSON array/],
        [['--client-tools', '{"type":"function"}'], /--client-tools must be a JSON array/],
        [
          ['--client-tools', '@/nonexistent/tools.json'],
          /--client-tools: cannot read \/nonexistent\/tools\.json \(ENOENT\)/,
        ],
        [['--on-approval-timeout', 'stop'], /go with --approve-tools or --approve-destructive/],
        [['--approve-destructive', '--on-approval-timeout', 'later'], /--on-approval-timeout is reject or stop/],
        [['--approve-destructive', '--approval-timeout-ms', 'soon'], /--approval-timeout-ms must be a whole number/],
      ];
      for (const [flags, why] of misuse) {
        const r = await cli(['run', 'WRITE never', ...flags]);
        expect(r.code, flags.join(' ')).toBe(64);
        expect(r.stderr).toMatch(why);
      }
      // What the API refuses in a client tool, it names.
      const refused = await cli([
        'run',
        'LOCATE',
        '--client-tools',
        '[{"type":"function","function":{"name":"a__b"}}]',
      ]);
      expect(refused.code).toBe(4);
      expect(refused.stderr).toMatch(/client_tools\.0\.function\.name/);
    },
  );

  it('run without --follow says the same about a question, describing it, then prints the answer', async () => {
    const p = startCli(['run', 'ASK Which floor?', '--human-input', '--json'], {
      url: stack.api.url,
      apiKey: CLI_KEY,
      stdin: '',
    });
    const id = (await waitFor(() => /agentq actions answer (act_\w+)/.exec(p.stderr)?.[1], {
      what: 'the hint',
      timeoutMs: 20_000,
    }))!;
    expect(p.stderr).toMatch(new RegExp(`^ {2}⏸ question: Which floor\\? \\(Sales \\| IT\\) · ${id}$`, 'm'));
    expect(p.stderr).toContain(`    agentq actions answer ${id} '<the answer>'`);
    expect((await cli(['actions', 'answer', id, 'the', 'third'])).code).toBe(0);
    const done = await p.exited;
    expect(done.code, done.stderr).toBe(0);
    expect(toolMessagesOf(JSON.parse(done.stdout))).toEqual(['the third']);
  });

  it(
    'run --follow in a terminal asks for each request: approve, ' +
      'reject with a reason, edit (asked again when the API refuses the edit)',
    async () => {
      const typed = new PassThrough();
      let stderr = '';
      let stdout = '';
      const sink = {
        write: (s: string) => {
          stderr += s;
          return true;
        },
        isTTY: false,
      };
      const prompterOut = new PassThrough();
      prompterOut.on('data', (d) => (stderr += d));
      // Typed ahead: each line answers the next question asked.
      typed.write(
        ['a', 'r', 'not that key', 'e', '{"id":"c1","company":7}', 'e', '{"id":"c1","company":"Initech"}']
          .map((l) => `${l}\n`)
          .join(''),
      );
      const code = await main(
        ['run', 'THREE three', '--follow', '--approve-tools', 'crm__non_idempotent_write,crm__update_contact'],
        { url: stack.api.url, apiKey: CLI_KEY, color: false },
        {
          stdout: {
            write: (s: string) => {
              stdout += s;
              return true;
            },
          },
          stderr: sink,
          openPrompter: () => linePrompter(typed, prompterOut),
        },
      );
      expect(code, stderr).toBe(0);
      const [approved, rejected, edited] = ['_0_0', '_0_1', '_0_2'].map(
        (suffix) => new RegExp(`(act_\\w+${suffix})`).exec(stderr)![1],
      );
      expect(stderr).toContain(`? approve a call of crm__non_idempotent_write (${approved})`);
      expect(stderr).toContain(`  ${approved} approved`);
      expect(stderr).toContain(`  ${rejected} rejected`);
      // The first edit passed the local check (a JSON object) and failed the tool's schema at the API.
      expect(stderr).toContain(
        '  refused: responses.0.arguments: do not fit the input schema of crm__update_contact: /company must be string',
      );
      expect(stderr).toContain(`  ${edited} approved with the edited arguments`);
      expect(JSON.parse(stdout)).toEqual([
        expect.stringContaining('three-approved'),
        'The user rejected this call: not that key',
        expect.stringContaining(
          'The user edited the arguments before the call ran; it ran with {"id":"c1","company":"Initech"}',
        ),
      ]);
      expect(writes('three-approved')).toHaveLength(1);
      expect(writes('three-rejected')).toEqual([]);
      expect(
        stack.crm.calls.filter((c) => c.tool === 'update_contact' && c.args?.id === 'c1').map((c) => c.args.company),
      ).toEqual(['Initech']);
    },
  );

  it(
    'run in a terminal picks a choice by its number, ' +
      'and leaves the rest to the agentq actions commands once the input ends',
    async () => {
      const typed = new PassThrough();
      let stderr = '';
      let stdout = '';
      const out = new PassThrough();
      out.on('data', (d) => (stderr += d));
      typed.end('2\n');
      const code = await main(
        ['run', 'ASK Which desk?', '--human-input', '--follow', '--json'],
        { url: stack.api.url, apiKey: CLI_KEY, color: false },
        {
          stdout: {
            write: (s: string) => {
              stdout += s;
              return true;
            },
          },
          stderr: {
            write: (s: string) => {
              stderr += s;
              return true;
            },
          },
          openPrompter: () => linePrompter(typed, out),
        },
      );
      expect(code, stderr).toBe(0);
      expect(stderr).toMatch(/\? Which desk\? \(act_\w+\)\n {2}1\) Sales\n {2}2\) IT\n/);
      expect(stderr).toMatch(/ {2}act_\w+ answer sent\n/);
      expect(toolMessagesOf(JSON.parse(stdout))).toEqual(['IT']);

      // The input has ended: the next request gets the hint instead of a question.
      const ended = new PassThrough();
      ended.end();
      let log = '';
      const runningToo = main(
        ['run', 'WRITE after-eof', '--follow', '--approve-tools', 'crm__non_idempotent_write'],
        { url: stack.api.url, apiKey: CLI_KEY, color: false },
        {
          stdout: { write: () => true },
          stderr: {
            write: (s: string) => {
              log += s;
              return true;
            },
          },
          openPrompter: () => linePrompter(ended, new PassThrough()),
        },
      );
      const id = (await waitFor(() => /agentq actions approve (act_\w+)/.exec(log)?.[1], {
        what: 'the hint after the end of the input',
      }))!;
      expect(log).toContain('no more input; answer from another shell:');
      await cliClient.approve(`run_${id.split('_')[1]}`, id);
      expect(await runningToo).toBe(0);
    },
  );
});

// script(1) (util-linux) runs a command on a pseudo-terminal of its own: the CLI then sees a TTY
// on stdin and stderr, as in a person's shell, with no native module in the tests.
const hasScript = spawnSync('script', ['--version']).status === 0;

describe.skipIf(!hasScript)('the agentq CLI in a terminal (a pty from script(1))', () => {
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  // Readline's cursor moves and the pty's carriage returns, taken out so the text can be matched.
  const plainText = (s: string) => stripVTControlCharacters(s).replace(/\r/g, '');

  /** Runs the CLI on a pty; each time the next of `answers`' prompts shows, types its keys. */
  function inTerminal(args: string[], answers: Array<[prompt: string, keys: string]>) {
    const command = [process.execPath, CLI, ...args].map(quote).join(' ');
    const p = startCli(['-q', '-e', '-c', command, '/dev/null'], {
      url: stack.api.url,
      apiKey: CLI_KEY,
      command: ['script'],
    });
    let seenUpTo = 0;
    p.child.stdout.on('data', () => {
      const [prompt, keys] = answers[0] ?? [];
      if (prompt === undefined) return;
      const at = plainText(p.stdout).indexOf(prompt, seenUpTo);
      if (at < 0) return;
      seenUpTo = at + prompt.length;
      answers.shift();
      p.child.stdin.write(keys);
    });
    // A prompt that never shows would leave the run waiting: stop it, and fail on what was shown.
    const stop = setTimeout(() => p.child.kill('SIGKILL'), 20_000);
    return p.exited.then((r) => {
      clearTimeout(stop);
      return { ...r, text: plainText(r.stdout), unanswered: answers };
    });
  }
  const choice = '[a]pprove, [r]eject, [e]dit the arguments, or [s]kip (answer later)? ';

  it('asks on the terminal and answers: approve, reject with a reason, edit', async () => {
    const r = await inTerminal(
      ['run', 'THREE pty', '--follow', '--approve-tools', 'crm__non_idempotent_write,crm__update_contact'],
      [
        [choice, 'a\r'],
        [choice, 'r\r'],
        ['reason (the model reads it; Enter for none): ', 'typed in a pty\r'],
        [choice, 'e\r'],
        ['new arguments, one line of JSON (Enter to go back): ', '{"id":"c1","company":"Vandelay"}\r'],
      ],
    );
    expect(r.code, r.text).toBe(0);
    expect(r.unanswered).toEqual([]);
    expect(r.text).toMatch(/\? approve a call of crm__non_idempotent_write \(act_\w+_0_0\)/);
    expect(r.text).toMatch(/act_\w+_0_2 approved with the edited arguments/);
    expect(r.text).toMatch(/completed \(stop\)/);
    expect(writes('pty-approved')).toHaveLength(1);
    expect(writes('pty-rejected')).toEqual([]);
    expect(r.text).toContain('The user rejected this call: typed in a pty');
    expect(stack.crm.calls.filter((c) => c.tool === 'update_contact' && c.args?.company === 'Vandelay')).toHaveLength(
      1,
    );
  });

  it('Ctrl-C at a question cancels the run (exit 3), and the call never runs', async () => {
    const r = await inTerminal(
      ['run', 'WRITE pty-cancel', '--follow', '--approve-tools', 'crm__non_idempotent_write'],
      [[choice, '\x03']],
    );
    expect(r.code, r.text).toBe(3);
    expect(r.unanswered).toEqual([]);
    expect(r.text).toMatch(/cancelling run_\w+/);
    expect(r.text).toMatch(/cancelled \(cancelled\)/);
    expect(r.text).not.toContain('answer from another shell');
    expect(writes('pty-cancel')).toEqual([]);
  });
});
