import { useState } from 'preact/hooks';
import { type ActionItem, type ActionResponse, ApiError, api } from '../api.js';
import { ago, clock, prettyJson } from '../lib/format.js';
import { useTools } from '../lib/tools.js';
import { Link } from '../router.js';
import { SchemaForm } from './schema-form.js';

/**
 * One request for an answer with what answers it, through `POST /v1/runs/:id/actions`: approve / edit / reject a
 * call, a client tool's output, or the answer to a question.
 */
export function ActionCard(props: { item: ActionItem; showRun?: boolean; onDone?: () => void }) {
  const { item } = props;
  const [mode, setMode] = useState<'idle' | 'edit' | 'reject'>('idle');
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const tools = useTools(mode === 'edit');

  const send = async (response: ActionResponse, what: string) => {
    setBusy(true);
    setError(null);
    try {
      await api.respond(item.run_id, [response]);
      setDone(what);
      props.onDone?.();
    } catch (err) {
      setError(err instanceof ApiError ? `${err.code}: ${err.message}` : String(err));
    } finally {
      setBusy(false);
    }
  };

  const head = (
    <div class="action-head">
      <span class={`badge type-${item.type}`}>{item.type === 'input' ? 'question' : item.type.replace('_', ' ')}</span>
      <strong class="mono">{item.type === 'input' ? 'ask_human' : item.name}</strong>
      {props.showRun && (
        <Link href={`/runs/${item.run_id}`} class="mono small">
          {item.run_id}
        </Link>
      )}
      <span class="muted small" title={clock(item.created_at)}>
        asked {ago(item.created_at)}
      </span>
      {item.expires_at && <span class="muted small">expires {clock(item.expires_at)}</span>}
    </div>
  );

  if (done)
    return (
      <div class="action-card done" data-action={item.id}>
        {head}
        <p class="ok">{done}</p>
      </div>
    );

  return (
    <div class="action-card" data-action={item.id}>
      {head}
      {item.type === 'input' ? (
        <p class="question">{item.question}</p>
      ) : (
        <pre class="args">{prettyJson(item.arguments)}</pre>
      )}
      {error && <p class="problem">{error}</p>}
      {item.type === 'approval' && mode === 'idle' && (
        <div class="buttons">
          <button
            type="button"
            class="primary"
            disabled={busy}
            onClick={() => send({ id: item.id, approve: true }, 'approved')}
          >
            Approve
          </button>
          <button type="button" disabled={busy} onClick={() => setMode('edit')}>
            Edit…
          </button>
          <button type="button" class="danger" disabled={busy} onClick={() => setMode('reject')}>
            Reject…
          </button>
        </div>
      )}
      {item.type === 'approval' && mode === 'edit' && !tools.data && (
        <p class="muted small">Loading the tool's schema…</p>
      )}
      {item.type === 'approval' && mode === 'edit' && tools.data && (
        <SchemaForm
          schema={tools.data?.find((t) => t.name === item.name)?.input_schema ?? null}
          initial={item.arguments}
          busy={busy}
          onCancel={() => setMode('idle')}
          onSubmit={(args) => send({ id: item.id, approve: true, arguments: args }, 'approved with edited arguments')}
        />
      )}
      {item.type === 'approval' && mode === 'reject' && (
        <form
          class="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            void send({ id: item.id, approve: false, ...(text.trim() ? { reason: text.trim() } : {}) }, 'rejected');
          }}
        >
          <input
            name="reason"
            placeholder="reason (the model sees it)"
            value={text}
            onInput={(e) => setText((e.target as HTMLInputElement).value)}
          />
          <button type="submit" class="danger" disabled={busy}>
            Reject
          </button>
          <button type="button" onClick={() => setMode('idle')}>
            Back
          </button>
        </form>
      )}
      {item.type === 'client_tool' && (
        <form
          class="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            void send({ id: item.id, output: text }, 'output sent');
          }}
        >
          <textarea
            name="output"
            rows={3}
            placeholder="the tool's output"
            value={text}
            onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
          />
          <button type="submit" class="primary" disabled={busy}>
            Send output
          </button>
        </form>
      )}
      {item.type === 'input' && (
        <div>
          {item.choices?.length ? (
            <div class="buttons">
              {item.choices.map((c) => (
                <button
                  key={c}
                  type="button"
                  disabled={busy}
                  onClick={() => send({ id: item.id, answer: c }, `answered: ${c}`)}
                >
                  {c}
                </button>
              ))}
            </div>
          ) : null}
          <form
            class="inline-form"
            onSubmit={(e) => {
              e.preventDefault();
              if (text.trim()) void send({ id: item.id, answer: text }, 'answered');
            }}
          >
            <input
              name="answer"
              placeholder="an answer"
              value={text}
              onInput={(e) => setText((e.target as HTMLInputElement).value)}
            />
            <button type="submit" class="primary" disabled={busy || !text.trim()}>
              Answer
            </button>
          </form>
        </div>
      )}
    </div>
  );
}
