import type { JobContext } from '@agentq/shared';
import { describe, expect, it } from 'vitest';
import { callOfRound, processToolRound } from './tool-round-processor.js';

const round = {
  runId: 'run_x',
  depth: 2,
  count: 3,
  ancestors: ['run_root'],
  calls: [0, 1, 2].map((index) => ({
    index,
    toolCallId: `call_${index}`,
    name: `t${index}`,
    arguments: `{"i":${index}}`,
  })),
};
const ctx = {} as JobContext;

describe('processToolRound', () => {
  it('gives each call the data a job of its own would carry', () => {
    expect(callOfRound(round, round.calls[1]!)).toEqual({
      runId: 'run_x',
      depth: 2,
      count: 3,
      ancestors: ['run_root'],
      index: 1,
      toolCallId: 'call_1',
      name: 't1',
      arguments: '{"i":1}',
    });
  });

  it('fails with the first error only once every call has settled, so the retry finds the others stored', async () => {
    const ended: number[] = [];
    const runCall = async (call: { index: number }) => {
      await new Promise((r) => setTimeout(r, call.index === 0 ? 5 : 30));
      ended.push(call.index);
      if (call.index === 0) throw new Error('server refused call 0');
      return { index: call.index };
    };
    await expect(processToolRound(round, ctx, runCall)).rejects.toThrow('server refused call 0');
    expect(ended.sort()).toEqual([0, 1, 2]);
  });
});
