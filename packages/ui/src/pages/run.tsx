import { useEffect, useMemo, useState } from 'preact/hooks';
import { ApiError, api, type RunView, type UsageView } from '../api.js';
import { ActionCard } from '../components/action-card.js';
import { Markdown } from '../components/markdown.js';
import { StatusBadge } from '../components/status.js';
import { Timeline } from '../components/timeline.js';
import { Transcript } from '../components/transcript.js';
import { between, clock, duration, isTerminal, tokens, usd } from '../lib/format.js';
import { useRun } from '../lib/run-data.js';
import { buildTimeline } from '../lib/timeline.js';
import { Link } from '../router.js';

/** A run: its header, what waits for an answer, the timeline, and the transcript; live while it runs. */
export function RunPage({ id }: { id: string }) {
  const state = useRun(id);
  const [now, setNow] = useState(Date.now());
  const [selected, setSelected] = useState<string | null>(null);
  const run = state.data?.run;
  const going = run ? !isTerminal(run.status) : false;

  // While the run goes, the bars of what is in flight grow with the clock.
  useEffect(() => {
    if (!going) return;
    const t = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(t);
  }, [going]);

  const timeline = useMemo(
    () =>
      state.data
        ? buildTimeline({ root: state.data, expanded: state.expanded, live: state.live, now: going ? now : Date.now() })
        : null,
    [state.data, state.expanded, state.version, now, going],
  );

  if (state.error === 'not_found') return <p class="problem">No run {id} (or it belongs to another key).</p>;
  if (!state.data || !run || !timeline)
    return state.error ? <p class="problem">{state.error}</p> : <p class="muted">Loading…</p>;

  const liveRun = state.live.runs.get(id);
  let streaming: string | null = null;
  if (liveRun && going) for (const [, text] of liveRun.streamed) streaming = text;

  const selectCall = (callId: string) => {
    setSelected(callId);
    requestAnimationFrame(() => document.getElementById(`call-${callId}`)?.scrollIntoView({ block: 'center' }));
  };

  return (
    <div class="run-page" data-run={run.id} data-status={run.status}>
      <RunHeader run={run} now={now} following={state.following} onCancelled={state.replaceRun} />
      {state.error && <p class="problem">{state.error}</p>}
      {run.required_action?.items.length ? (
        <section class="card pending">
          <h2>Waiting for an answer</h2>
          {run.required_action.items.map((item) => (
            <ActionCard key={item.id} item={item} showRun={item.run_id !== run.id} onDone={state.refresh} />
          ))}
        </section>
      ) : null}
      {run.output?.content || run.output_parsed || run.error ? <Outcome run={run} /> : null}
      <section class="card">
        <h2>
          Timeline <span class="muted small">{timeline.rows.filter((r) => r.kind !== 'run').length} spans</span>
        </h2>
        <Timeline
          rows={timeline.rows}
          start={timeline.start}
          end={timeline.end}
          currentRun={run.id}
          onToggle={state.toggle}
          onSelectCall={selectCall}
        />
      </section>
      <section class="card">
        <h2>Transcript</h2>
        {state.messages ? (
          <Transcript messages={state.messages} steps={state.data.steps} streaming={streaming} selected={selected} />
        ) : (
          <p class="muted">Loading…</p>
        )}
      </section>
    </div>
  );
}

function UsageLine({ u }: { u: UsageView | undefined }) {
  if (!u) return <span>–</span>;
  return (
    <span>
      {tokens(u.total_tokens)} tok{' '}
      <span class="muted">
        ({tokens(u.prompt_tokens)} in, {tokens(u.completion_tokens)} out)
      </span>{' '}
      · {u.model_calls} model calls · {u.tool_calls} tool calls{u.cost_usd !== undefined ? ` · ${usd(u.cost_usd)}` : ''}
    </span>
  );
}

function RunHeader(props: { run: RunView; now: number; following: boolean; onCancelled: (r: RunView) => void }) {
  const { run } = props;
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const going = !isTerminal(run.status);
  const ran = between(run.started_at, run.completed_at, props.now);
  const queued = between(run.created_at, run.started_at ?? (going ? null : run.completed_at), props.now);
  const budgets: Array<[string, string]> = [[`rounds`, `${run.depth} of ${run.max_depth}`]];
  if (run.max_total_tokens)
    budgets.push(['tokens', `${tokens(run.usage_total?.total_tokens)} of ${tokens(run.max_total_tokens)}`]);
  if (run.timeout_ms)
    budgets.push([
      'time',
      `${duration(between(run.created_at, run.completed_at, props.now))} of ${duration(run.timeout_ms)}`,
    ]);
  if (run.max_cost_usd) budgets.push(['cost', `${usd(run.usage_total?.cost_usd ?? 0)} of ${usd(run.max_cost_usd)}`]);
  if (run.on_budget_exhausted) budgets.push(['when a budget runs out', run.on_budget_exhausted]);

  const cancel = async () => {
    setBusy(true);
    setProblem(null);
    try {
      props.onCancelled(await api.cancel(run.id));
      setConfirm(false);
    } catch (err) {
      setProblem(err instanceof ApiError ? `${err.code}: ${err.message}` : String(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="card run-header">
      <div class="title">
        <h1 class="mono">{run.id}</h1>
        <StatusBadge status={run.status} />
        {run.stop_reason && <span class="badge stop">stop: {run.stop_reason}</span>}
        {props.following && going && <span class="live-dot" title="following the run's events" />}
        <span class="spacer" />
        {going &&
          (confirm ? (
            <span class="buttons">
              <button type="button" class="danger" disabled={busy} onClick={cancel}>
                Cancel the run and its sub-runs
              </button>
              <button type="button" onClick={() => setConfirm(false)}>
                Keep it
              </button>
            </span>
          ) : (
            <button type="button" class="danger" onClick={() => setConfirm(true)}>
              Cancel…
            </button>
          ))}
      </div>
      {problem && <p class="problem">{problem}</p>}
      {run.parent_run_id && (
        <p class="small">
          sub-run of <Link href={`/runs/${run.parent_run_id}`}>{run.parent_run_id}</Link>
          {run.root_run_id !== run.parent_run_id && (
            <>
              {' '}
              (tree of <Link href={`/runs/${run.root_run_id}`}>{run.root_run_id}</Link>)
            </>
          )}
        </p>
      )}
      <dl class="facts">
        <dt>model</dt>
        <dd class="mono">{run.model}</dd>
        {run.agent && (
          <>
            <dt>agent</dt>
            <dd class="mono">
              {run.agent.name}@{run.agent.version}
            </dd>
          </>
        )}
        <dt>created</dt>
        <dd>{clock(run.created_at)}</dd>
        <dt>duration</dt>
        <dd>
          {run.started_at ? duration(ran) : 'not started'}
          {queued !== null && queued > 0 && <span class="muted"> (queued {duration(queued)})</span>}
        </dd>
        <dt>usage</dt>
        <dd>
          <UsageLine u={run.usage} />
        </dd>
        <dt>with sub-runs</dt>
        <dd>
          <UsageLine u={run.usage_total} />
        </dd>
        <dt>budgets</dt>
        <dd>
          {budgets.map(([k, v]) => (
            <span key={k} class="budget">
              {k}: {v}
            </span>
          ))}
        </dd>
        {Object.keys(run.metadata ?? {}).length > 0 && (
          <>
            <dt>metadata</dt>
            <dd class="mono small">{JSON.stringify(run.metadata)}</dd>
          </>
        )}
        {run.tools?.length ? (
          <>
            <dt>tools</dt>
            <dd class="mono small">{run.tools.join(', ')}</dd>
          </>
        ) : null}
      </dl>
      {(run.instructions || run.input) && (
        <details class="asked">
          <summary>What it was asked</summary>
          {run.instructions && (
            <>
              <div class="small muted">instructions</div>
              <Markdown text={run.instructions} />
            </>
          )}
          {run.input && (
            <>
              <div class="small muted">input</div>
              <Markdown text={run.input} />
            </>
          )}
        </details>
      )}
    </section>
  );
}

function Outcome({ run }: { run: RunView }) {
  return (
    <section class={`card outcome${run.error ? ' is-error' : ''}`}>
      <h2>{run.error ? 'Error' : 'Answer'}</h2>
      {run.error && (
        <p class="problem">
          <span class="mono">{run.error.code}</span>: {run.error.message}
        </p>
      )}
      {run.output?.content && <Markdown text={run.output.content} />}
      {run.output_parsed !== null && run.output_parsed !== undefined && (
        <pre class="args">{JSON.stringify(run.output_parsed, null, 2)}</pre>
      )}
    </section>
  );
}
