import { describe, expect, it } from 'vitest';
import { renderToolResult, toolError } from './tool-result.js';

describe('renderToolResult', () => {
  it('joins text blocks with newlines', () => {
    expect(
      renderToolResult({
        content: [
          { type: 'text', text: 'one' },
          { type: 'text', text: 'two' },
        ],
      }),
    ).toEqual({ content: 'one\ntwo', isError: false });
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
    expect(out.content.split('\n')).toEqual([
      'here:',
      '[image image/png, 1234 bytes base64]',
      '[audio audio/wav, 4 bytes base64]',
      '[resource_link readme file:///r.md text/markdown]',
      '[resource file:///b.bin application/zip, 4 bytes base64]',
    ]);
  });

  it('keeps the text of an embedded text resource', () => {
    expect(renderToolResult({ content: [{ type: 'resource', resource: { uri: 'mem://a', text: 'hello' } }] }).content).toBe('[resource mem://a]\nhello');
  });

  it('uses structuredContent as JSON when there is no text', () => {
    expect(renderToolResult({ content: [], structuredContent: { sum: 3 } })).toEqual({ content: '{"sum":3}', isError: false });
    expect(renderToolResult({ content: [{ type: 'text', text: '3' }], structuredContent: { sum: 3 } }).content).toBe('3');
  });

  it('keeps isError and the text of an error result', () => {
    expect(renderToolResult({ content: [{ type: 'text', text: 'no contact c9' }], isError: true })).toEqual({ content: 'no contact c9', isError: true });
  });
});

describe('toolError', () => {
  it('words errors like the seeds', () => {
    expect(toolError('crm__x', 'timed out after 5 ms')).toEqual({ content: 'Error executing crm__x: timed out after 5 ms', isError: true });
  });
});
