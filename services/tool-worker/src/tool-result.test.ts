import { describe, expect, it } from 'vitest';
import { modelText, toolFailed } from '@agentq/shared/core';
import { renderToolResult } from './tool-result.js';

describe('renderToolResult', () => {
  it('joins text blocks with newlines', () => {
    expect(
      renderToolResult({
        content: [
          { type: 'text', text: 'one' },
          { type: 'text', text: 'two' },
        ],
      }),
    ).toEqual({ kind: 'ok', text: 'one\ntwo' });
  });

  it('replaces binary blocks with short placeholders', () => {
    const out = renderToolResult({
      content: [
        { type: 'text', text: 'here:' },
        { type: 'image', data: 'A'.repeat(1234), mimeType: 'image/png' },
        { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' },
        { type: 'resource_link', name: 'readme', uri: 'file:///r.md', mimeType: 'text/markdown' },
        { type: 'resource', resource: { uri: 'file:///b.bin', mimeType: 'application/zip', blob: 'QUJD' } },
      ],
    });
    expect(out.text.split('\n')).toEqual([
      'here:',
      '[image image/png, 1234 bytes base64]',
      '[audio audio/wav, 4 bytes base64]',
      '[resource_link readme file:///r.md text/markdown]',
      '[resource file:///b.bin application/zip, 4 bytes base64]',
    ]);
  });

  it('keeps the text of an embedded text resource', () => {
    expect(
      renderToolResult({ content: [{ type: 'resource', resource: { uri: 'mem://a', text: 'hello' } }] }).text,
    ).toBe('[resource mem://a]\nhello');
  });

  it('uses structuredContent as JSON when there is no text', () => {
    expect(renderToolResult({ content: [], structuredContent: { sum: 3 } })).toEqual({ kind: 'ok', text: '{"sum":3}' });
    expect(renderToolResult({ content: [{ type: 'text', text: '3' }], structuredContent: { sum: 3 } }).text).toBe('3');
  });

  it("makes an error result a tool_error whose text the model sees in the tool's own words", () => {
    const outcome = renderToolResult({ content: [{ type: 'text', text: 'no contact c9' }], isError: true });
    expect(outcome).toEqual({ kind: 'tool_error', text: 'no contact c9' });
    expect(modelText('crm__get_contact', outcome)).toBe('no contact c9');
  });
});

describe('modelText', () => {
  it("words agentq's own errors like the seeds, and passes answers through", () => {
    expect(modelText('crm__x', toolFailed('timeout', 'timed out after 5 ms'))).toBe(
      'Error executing crm__x: timed out after 5 ms',
    );
    expect(modelText('crm__x', toolFailed('unknown_outcome', 'the outcome is unknown'))).toBe(
      'Error executing crm__x: the outcome is unknown',
    );
    expect(modelText('crm__x', { kind: 'ok', text: '[]' })).toBe('[]');
  });
});
