import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { argumentsProblem, askForResponse, linePrompter, type Asked } from './action-prompt.js';
import { styleFor } from './progress.js';
import { MAX_REASON_CHARS, type ActionItem } from './types.js';

const plain = styleFor({ isTTY: false });
const base = {
  run_id: 'run_aaaaaaaaaaaaaaaaaaaaa',
  tool_call_id: 'call_1',
  created_at: '2026-01-01T00:00:00.000Z',
  expires_at: null,
};
const approval: ActionItem = {
  ...base,
  id: 'act_aaaaaaaaaaaaaaaaaaaaa_0_0',
  type: 'approval',
  name: 'crm__update_contact',
  arguments: '{"id":"c1","company":"Initech"}',
};
const question: ActionItem = {
  ...base,
  id: 'act_aaaaaaaaaaaaaaaaaaaaa_0_1',
  type: 'input',
  name: 'ask_human',
  arguments: '{}',
  question: 'Which Bob?',
  choices: ['Sales', 'IT'],
};
const clientTool: ActionItem = {
  ...base,
  id: 'act_aaaaaaaaaaaaaaaaaaaaa_0_2',
  type: 'client_tool',
  name: 'get_location',
  arguments: '{"precise":true}',
};

/** Asks about `item` with `lines` typed on an in-memory stdin that ends after them. */
async function answer(
  item: ActionItem,
  lines: string[],
): Promise<{ asked: Asked; shown: string[]; questions: string }> {
  const input = new PassThrough();
  const output = new PassThrough();
  let questions = '';
  output.on('data', (d) => (questions += d));
  input.end(lines.map((l) => `${l}\n`).join(''));
  const prompter = linePrompter(input, output);
  const shown: string[] = [];
  try {
    return { asked: await askForResponse(item, prompter, (l) => shown.push(l), plain), shown, questions };
  } finally {
    prompter.close();
  }
}

describe('linePrompter', () => {
  it('writes each question, answers it with the next line (typed ahead or not), and gives null once the input ends', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let written = '';
    output.on('data', (d) => (written += d));
    const p = linePrompter(input, output);
    input.write('typed ahead\n');
    await new Promise((r) => setImmediate(r));
    expect(await p.ask('first? ')).toBe('typed ahead');
    const second = p.ask('second? ');
    input.write('later\n');
    expect(await second).toBe('later');
    input.end();
    expect(await p.ask('third? ')).toBeNull();
    expect(await p.ask('fourth? ')).toBeNull();
    expect(written).toBe('first? typed ahead\nsecond? later\nthird? ');
    expect(p.interrupted).toBe(false);
  });
});

describe('askForResponse', () => {
  it('approves a call, showing its arguments indented', async () => {
    const { asked, shown } = await answer(approval, ['a']);
    expect(asked).toEqual({ id: approval.id, approve: true });
    expect(shown).toEqual([
      `? approve a call of crm__update_contact (${approval.id})`,
      '    {',
      '      "id": "c1",',
      '      "company": "Initech"',
      '    }',
    ]);
  });

  it('rejects with a reason after an answer it does not know, and without one on an empty line', async () => {
    const withReason = await answer(approval, ['maybe', 'r', '  wrong customer ']);
    expect(withReason.asked).toEqual({ id: approval.id, approve: false, reason: 'wrong customer' });
    expect(withReason.shown).toContain('  answer a (approve), r (reject), e (edit the arguments) or s (skip)');
    expect((await answer(approval, ['reject', ''])).asked).toEqual({ id: approval.id, approve: false });
  });

  it('refuses a reason over the limit and asks again', async () => {
    const { asked, shown } = await answer(approval, ['r', 'x'.repeat(MAX_REASON_CHARS + 1), 'too long before']);
    expect(asked).toEqual({ id: approval.id, approve: false, reason: 'too long before' });
    expect(shown).toContain(`  reason: at most ${MAX_REASON_CHARS} characters (got ${MAX_REASON_CHARS + 1})`);
  });

  it('edits the arguments: asks again until they are a JSON object; an empty line goes back to the choice', async () => {
    const { asked, shown } = await answer(approval, ['e', '{"id":', '[1]', '', 'e', ' {"id":"c1","company":"EPAM"} ']);
    expect(asked).toEqual({ id: approval.id, approve: true, arguments: '{"id":"c1","company":"EPAM"}' });
    expect(shown.filter((l) => l.startsWith('  arguments: '))).toEqual([
      expect.stringMatching(/^ {2}arguments: not JSON \(/),
      '  arguments: must be a JSON object, such as {"id": 42}',
    ]);
  });

  it('leaves a request for later on s, and reports the end of the input', async () => {
    expect((await answer(approval, ['s'])).asked).toBe('skip');
    expect((await answer(approval, [])).asked).toBe('ended');
    expect((await answer(approval, ['e'])).asked).toBe('ended');
    expect((await answer(approval, ['r'])).asked).toBe('ended');
  });

  it('answers a question: a number picks a choice, other text is the answer, an empty line leaves it', async () => {
    const picked = await answer(question, ['3', '2']);
    expect(picked.asked).toEqual({ id: question.id, answer: 'IT' });
    expect(picked.shown).toEqual([
      `? Which Bob? (${question.id})`,
      '  1) Sales',
      '  2) IT',
      '  pick 1 to 2, or type the answer in words',
    ]);
    expect((await answer(question, ['the one in Sales'])).asked).toEqual({
      id: question.id,
      answer: 'the one in Sales',
    });
    expect((await answer(question, ['   '])).asked).toBe('skip');
    // Without choices a number is just an answer.
    expect((await answer({ ...question, choices: null }, ['3'])).asked).toEqual({ id: question.id, answer: '3' });
  });

  it("takes a client tool's output", async () => {
    const { asked, questions } = await answer(clientTool, ['Berlin']);
    expect(asked).toEqual({ id: clientTool.id, output: 'Berlin' });
    expect(questions).toContain('its output (one line; Enter to answer later): ');
    expect((await answer(clientTool, [''])).asked).toBe('skip');
  });
});

describe('argumentsProblem', () => {
  it('takes a JSON object only', () => {
    expect(argumentsProblem('{"a":1}')).toBeNull();
    expect(argumentsProblem('null')).toMatch(/JSON object/);
    expect(argumentsProblem('"x"')).toMatch(/JSON object/);
    expect(argumentsProblem('{')).toMatch(/^not JSON/);
  });
});
