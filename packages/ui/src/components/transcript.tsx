import type { CallView, ChatMessage, StepView } from '../api.js';
import { duration, oneLine, prettyJson } from '../lib/format.js';
import { Markdown } from './markdown.js';
import { StatusBadge } from './status.js';

type Content = ChatMessage['content'];

/** A message's content as text: a string, or the text parts of a multi-part content (others as JSON). */
export function contentText(content: Content | null | undefined): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.map((p) => (p.type === 'text' && typeof p.text === 'string' ? p.text : JSON.stringify(p))).join('\n');
}

/** Past this many characters a tool's output starts folded. */
const FOLD_OUTPUT_CHARS = 600;

/**
 * The transcript: each message in order, the model's text as markdown (see Markdown: as elements, never as HTML),
 * each tool call with its arguments and, under it, its result (folded when long; errors marked). The model's text
 * of the step in flight shows as it streams.
 */
export function Transcript(props: {
  messages: ChatMessage[];
  steps: StepView[];
  streaming: string | null;
  selected: string | null;
}) {
  const calls = new Map<string, CallView>();
  for (const s of props.steps) for (const c of s.tool_calls) calls.set(c.id, c);
  const results = new Map<string, ChatMessage>();
  for (const m of props.messages) if (m.role === 'tool') results.set(m.tool_call_id, m);
  let assistantTurn = 0;
  return (
    <div class="transcript">
      {props.messages.map((m, i) => {
        if (m.role === 'tool') {
          // Shown under its call; a result whose call is not in the transcript is shown on its own.
          const paired = props.messages.some(
            (x) => x.role === 'assistant' && x.tool_calls?.some((tc) => tc.id === m.tool_call_id),
          );
          return paired ? null : (
            <div key={i} class="msg role-tool">
              <div class="msg-role">tool result</div>
              <pre class="output">{contentText(m.content)}</pre>
            </div>
          );
        }
        if (m.role === 'system' || m.role === 'developer')
          return (
            <details key={i} class="msg role-system">
              <summary>
                <span class="msg-role">{m.role}</span> <span class="muted">{oneLine(contentText(m.content), 100)}</span>
              </summary>
              <Markdown text={contentText(m.content)} />
            </details>
          );
        if (m.role === 'user')
          return (
            <div key={i} class="msg role-user">
              <div class="msg-role">user</div>
              <Markdown text={contentText(m.content)} />
            </div>
          );
        const turn = assistantTurn++;
        const text = contentText(m.content);
        return (
          <div key={i} class="msg role-assistant" data-step={turn}>
            <div class="msg-role">assistant · step {turn}</div>
            {text && <Markdown text={text} />}
            {m.role === 'assistant' &&
              (m.tool_calls ?? []).map((tc) => (
                <ToolCallBlock
                  key={tc.id}
                  id={tc.id}
                  name={tc.function.name}
                  args={tc.function.arguments}
                  call={calls.get(tc.id)}
                  result={results.get(tc.id)}
                  selected={props.selected === tc.id}
                />
              ))}
          </div>
        );
      })}
      {props.streaming !== null && (
        <div class="msg role-assistant streaming" data-streaming="true">
          <div class="msg-role">assistant · streaming…</div>
          <pre class="plain">{props.streaming}</pre>
        </div>
      )}
    </div>
  );
}

function ToolCallBlock(props: {
  id: string;
  name: string;
  args: string;
  call: CallView | undefined;
  result: ChatMessage | undefined;
  selected: boolean;
}) {
  const output = props.result ? contentText(props.result.content) : (props.call?.output ?? null);
  const isError = props.call?.is_error === true || props.call?.status === 'failed';
  const status = props.call?.status ?? (output !== null ? 'completed' : 'queued');
  const approval = props.call?.approval;
  return (
    <details
      id={`call-${props.id}`}
      class={`tool-call${isError ? ' is-error' : ''}${props.selected ? ' selected' : ''}`}
      open={props.selected || isError || (output !== null && output.length <= FOLD_OUTPUT_CHARS)}
      data-call={props.id}
    >
      <summary>
        <span class="mono name">{props.name}</span> <StatusBadge status={status} />
        {isError && <span class="badge st-failed">error</span>}
        {approval && <span class={`badge dec-${approval.decision}`}>{approval.decision}</span>}
        {props.call?.duration_ms !== null && props.call?.duration_ms !== undefined && (
          <span class="muted small">{duration(props.call.duration_ms)}</span>
        )}
        {(props.call?.attempts ?? 0) > 1 && <span class="muted small">{props.call!.attempts} attempts</span>}
        <span class="muted small mono"> {oneLine(props.args, 80)}</span>
      </summary>
      <div class="call-body">
        <div class="small muted">arguments</div>
        <pre class="args">{prettyJson(approval?.arguments ?? props.args)}</pre>
        {approval?.reason && <p class="small">reason: {approval.reason}</p>}
        <div class="small muted">{isError ? 'error' : 'result'}</div>
        {output === null ? (
          <p class="muted small">no result yet</p>
        ) : (
          <pre class={`output${isError ? ' is-error' : ''}`}>{output}</pre>
        )}
      </div>
    </details>
  );
}
