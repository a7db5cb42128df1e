import { describe, expect, it } from 'vitest';
import type { ActionRecord } from '@agentq/shared/runs';
import { actionPage, errorPage, escapeHtml, prettyArguments } from './action-page.js';

const record = (over: Partial<ActionRecord>): ActionRecord => ({
  id: 'act_0123456789abcdefghijk_0_0',
  type: 'approval',
  run_id: 'run_0123456789abcdefghijk',
  depth: 0,
  index: 0,
  tool_call_id: 'call_1',
  name: 'crm__update',
  arguments: '{}',
  created_at: '2030-01-01T00:00:00.000Z',
  expires_at: null,
  on_timeout: 'reject',
  ...over,
});

describe('the page of a signed link', () => {
  it('escapes the five characters that can end a text or an attribute', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe(
      '&#60;a href=&#34;x&#34; title=&#39;y&#39;&#62;&#38;&#60;/a&#62;',
    );
  });

  it('pretty-prints JSON arguments, and shows anything else (not JSON, nested too deep) as it came', () => {
    expect(prettyArguments('{"a":[1,{"b":2}]}')).toBe('{\n  "a": [\n    1,\n    {\n      "b": 2\n    }\n  ]\n}');
    expect(prettyArguments('{"a":')).toBe('{"a":');
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    expect(prettyArguments(deep)).toBe(deep);
  });

  it('puts model text only where it is escaped: a tool name, a question and choices of markup stay text', () => {
    const evil = '</code></pre><script>x()</script><img src=x onerror=y()>"\'';
    for (const r of [
      record({ name: evil, arguments: JSON.stringify({ v: evil }) }),
      record({ type: 'client_tool', name: evil, arguments: evil }),
      record({ type: 'input', name: 'ask_human', question: evil, choices: [evil, 'ok'] }),
    ]) {
      const html = actionPage(r);
      expect(html).not.toMatch(/<script|<img|<\/pre><\/|onerror=y\(\)>/);
      expect(html).toContain(escapeHtml(evil));
    }
  });

  it('offers the forms each kind of request needs, posting back to the link itself', () => {
    const approval = actionPage(record({}));
    expect(approval.match(/<form method="post">/g)).toHaveLength(3);
    expect(approval).not.toMatch(/action=/);
    expect(approval).toContain('name="approve" value="true"');
    expect(approval).toContain('name="approve" value="false"');
    expect(approval).toContain('name="reason"');
    expect(approval).toContain('name="arguments"');
    expect(actionPage(record({ type: 'client_tool' }))).toContain('name="output"');
    const question = actionPage(record({ type: 'input', question: 'Which?', choices: ['A', 'B'] }));
    expect(question).toContain(
      '<button type="submit" name="answer" value="A">A</button>' +
        '<button type="submit" name="answer" value="B">B</button>',
    );
    expect(actionPage(record({ type: 'input', question: 'Why?', choices: null }))).not.toContain('<h2>Choose</h2>');
  });

  it('escapes the message of a refusal too', () => {
    expect(errorPage(400, 'answer: <b>')).toContain('answer: &#60;b&#62;');
  });
});
