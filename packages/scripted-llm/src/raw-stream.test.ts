import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedLlm, type ScriptedLlm } from './index.js';
import type { ErrorBody } from './http-io.js';

let llm: ScriptedLlm;
const chunks = [{ choices: [{ index: 0, delta: { tool_calls: [{ index: '__proto__' }] } }] }, { not: 'even a chunk' }];
beforeAll(async () => {
  llm = await startScriptedLlm({ handler: () => ({ rawChunks: chunks }) });
});
afterAll(async () => llm?.close());

const post = (stream: boolean) =>
  fetch(`${llm.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [], stream }),
  });

describe('a scripted raw stream', () => {
  it('sends the chunks as they are, one event each, then [DONE]', async () => {
    const res = await post(true);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await res.text()).split('\n\n').filter(Boolean);
    expect(events).toEqual([...chunks.map((c) => `data: ${JSON.stringify(c)}`), 'data: [DONE]']);
  });

  it('is refused for a request that does not stream', async () => {
    const res = await post(false);
    expect(res.status).toBe(400);
    expect(((await res.json()) as ErrorBody).error.code).toBe('raw_needs_stream');
  });
});
