import { duration } from '../lib/format.js';
import type { Row } from '../lib/timeline.js';
import { Link } from '../router.js';

const TICKS = 6;

const pct = (v: number, start: number, span: number) => `${Math.max(0, Math.min(100, ((v - start) / span) * 100))}%`;
const width = (a: number, b: number, span: number) => `${Math.max(0, Math.min(100, ((b - a) / span) * 100))}%`;

/**
 * The waterfall: a row per run, model step and tool call, each a bar on one time axis (parallel calls overlap in
 * time, one row each); waits hatched, retries as marks, sub-runs indented under their call and opened in place.
 */
export function Timeline(props: {
  rows: Row[];
  start: number;
  end: number;
  currentRun: string;
  onToggle: (runId: string) => void;
  onSelectCall: (callId: string) => void;
}) {
  const span = Math.max(1, props.end - props.start);
  const ticks = Array.from({ length: TICKS + 1 }, (_, i) => (span * i) / TICKS);
  return (
    <div class="timeline">
      <div class="tl-row tl-axis">
        <div class="tl-label">
          <span class="muted small">total {duration(span)}</span>
        </div>
        <div class="tl-track">
          {ticks.map((t) => (
            <span key={t} class="tl-tick" style={{ left: `${(t / span) * 100}%` }}>
              {duration(t)}
            </span>
          ))}
        </div>
      </div>
      {props.rows.map((r) => (
        <div
          key={r.key}
          class={`tl-row kind-${r.kind}${r.error ? ' is-error' : ''}${r.live ? ' is-live' : ''}`}
          data-kind={r.kind}
          data-status={r.status}
          data-run={r.runId}
        >
          <div class="tl-label" style={{ paddingLeft: `${0.4 + r.level * 0.9}rem` }}>
            {r.kind === 'run' && r.expandable ? (
              <button
                type="button"
                class="toggle"
                aria-expanded={r.expanded ? 'true' : 'false'}
                title={r.expanded ? 'close this sub-run' : 'open this sub-run here'}
                onClick={() => props.onToggle(r.runId)}
              >
                {r.expanded ? '▾' : '▸'}
              </button>
            ) : null}
            {r.kind === 'call' ? (
              <button
                type="button"
                class="link name"
                title="show in the transcript"
                onClick={() => r.callId && props.onSelectCall(r.callId)}
              >
                {r.label}
              </button>
            ) : (
              <span class="name">{r.label}</span>
            )}
            {r.kind === 'run' && r.runId !== props.currentRun ? (
              <Link href={`/runs/${r.runId}`} class="mono small detail">
                {r.detail}
              </Link>
            ) : (
              <span class="small muted detail">{r.detail}</span>
            )}
          </div>
          <div class="tl-track">
            <div
              class={`tl-bar st-${r.status}${r.estimated ? ' estimated' : ''}`}
              style={{ left: pct(r.start, props.start, span), width: width(r.start, r.end, span) }}
              title={`${r.label}: ${r.status}, ${duration(r.end - r.start)}${r.estimated ? ' (times estimated)' : ''}`}
            />
            {r.waits.map((w) => (
              <div
                key={`${w.start}-${w.label}`}
                class="tl-wait"
                style={{ left: pct(w.start, props.start, span), width: width(w.start, w.end, span) }}
                title={`${w.label}: ${duration(w.end - w.start)}`}
              />
            ))}
            {r.marks.map((m, i) => (
              <div
                key={i}
                class="tl-mark"
                style={{ left: pct(m.at, props.start, span) }}
                title={m.label}
                data-mark="retry"
              />
            ))}
            <span class="tl-dur small" style={{ left: pct(r.end, props.start, span) }}>
              {duration(r.end - r.start)}
            </span>
          </div>
        </div>
      ))}
    </div>
  );
}
