import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, type RunPage, type RunView } from '../api.js';
import { StatusBadge } from '../components/status.js';
import { ago, between, clock, duration, isTerminal, oneLine, tokens } from '../lib/format.js';
import { Link, navigate } from '../router.js';

const STATUSES = ['queued', 'running', 'requires_action', 'completed', 'failed', 'cancelled', 'incomplete'];
const PAGE_SIZE = 25;
const pageSize = (query: URLSearchParams) => {
  const n = Number(query.get('limit'));
  return Number.isInteger(n) && n >= 1 && n <= 100 ? n : PAGE_SIZE;
};
/** How often the first page is read again while the page is shown. */
const REFRESH_MS = 2500;
/** The counts read every this many refreshes (they read up to 10,000 runs: a cost the list does not have). */
const COUNTS_EVERY = 4;
const RUN_ID = /^run_[0-9a-z]{21}$/;

/**
 * The runs of the key, newest first, a page at a time (`GET /v1/runs`): a status filter, a search (a run id opens
 * that run; any other text searches the runs' metadata), counts by status, and the first page kept up to date.
 */
export function RunsPage({ query }: { query: URLSearchParams }) {
  const status = query.get('status') ?? '';
  const q = query.get('q') ?? '';
  const all = query.get('all') === '1';
  const limit = pageSize(query);
  const [cursors, setCursors] = useState<string[]>([]); // the `after` of each page before this one
  const after = cursors[cursors.length - 1];
  const [page, setPage] = useState<RunPage | null>(null);
  const [counts, setCounts] = useState<{ counts: Record<string, number>; runs: number; complete: boolean } | null>(
    null,
  );
  const [error, setError] = useState<string | null>(null);
  const [search, setSearch] = useState(q);
  const [now, setNow] = useState(Date.now());
  const seq = useRef(0);

  const setQuery = (patch: Record<string, string | null>) => {
    const next = new URLSearchParams(query);
    for (const [k, v] of Object.entries(patch)) {
      if (v === null || v === '') next.delete(k);
      else next.set(k, v);
    }
    setCursors([]);
    const s = next.toString();
    navigate(`/${s ? `?${s}` : ''}`, true);
  };

  useEffect(() => {
    setCursors([]);
    setSearch(q);
  }, [status, q, all]);

  useEffect(() => {
    let stop = false;
    let ticks = 0;
    const load = async () => {
      const mine = ++seq.current;
      const withCounts = ticks++ % COUNTS_EVERY === 0;
      try {
        const [p, c] = await Promise.all([
          api.listRuns({ status: status || undefined, q: q || undefined, top_level: !all, limit, after }),
          withCounts ? api.runCounts({ top_level: !all }).catch(() => null) : null,
        ]);
        if (stop || mine !== seq.current) return;
        setPage(p);
        if (c) setCounts(c);
        setError(null);
        setNow(Date.now());
      } catch (err) {
        if (!stop) setError(err instanceof ApiError ? `${err.code}: ${err.message}` : String(err));
      }
    };
    void load();
    // Only the first page changes as runs come and go; a later page is read once.
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible' && !after) void load();
      else setNow(Date.now());
    }, REFRESH_MS);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, [status, q, all, after, limit]);

  const submitSearch = async (e: Event) => {
    e.preventDefault();
    const text = search.trim();
    if (RUN_ID.test(text)) {
      try {
        await api.run(text);
        navigate(`/runs/${text}`);
      } catch (err) {
        setError(err instanceof ApiError && err.status === 404 ? `no run ${text}` : String(err));
      }
      return;
    }
    setQuery({ q: text || null });
  };

  return (
    <div class="runs-page">
      <div class="counts">
        <button
          type="button"
          class={status === '' ? 'count active' : 'count'}
          onClick={() => setQuery({ status: null })}
        >
          <span>all</span>
          <b>{counts ? `${counts.runs}${counts.complete ? '' : '+'}` : '…'}</b>
        </button>
        {STATUSES.map((s) => (
          <button
            key={s}
            type="button"
            class={`count st-${s}${status === s ? ' active' : ''}`}
            data-status={s}
            onClick={() => setQuery({ status: status === s ? null : s })}
          >
            <span>{s.replace('_', ' ')}</span>
            <b>{counts ? (counts.counts[s] ?? 0) : '…'}</b>
          </button>
        ))}
      </div>
      <form class="filters" onSubmit={submitSearch}>
        <input
          type="search"
          name="q"
          placeholder="run id, or text in metadata"
          value={search}
          onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
        />
        <button type="submit">Search</button>
        <label class="check">
          <input
            type="checkbox"
            checked={all}
            onChange={(e) => setQuery({ all: (e.target as HTMLInputElement).checked ? '1' : null })}
          />
          include sub-runs
        </label>
        {(q || status) && (
          <button type="button" class="link" onClick={() => setQuery({ q: null, status: null })}>
            clear filters
          </button>
        )}
      </form>
      {error && <p class="problem">{error}</p>}
      {!page ? (
        <p class="muted">Loading…</p>
      ) : page.data.length === 0 ? (
        <p class="muted empty">{q || status ? 'No run matches.' : 'No runs yet. POST /v1/runs starts one.'}</p>
      ) : (
        <table class="runs">
          <thead>
            <tr>
              <th>status</th>
              <th>run</th>
              <th>input / metadata</th>
              <th>model</th>
              <th class="num">rounds</th>
              <th class="num">tokens</th>
              <th class="num">duration</th>
              <th>created</th>
            </tr>
          </thead>
          <tbody>
            {page.data.map((r) => (
              <RunRow key={r.id} run={r} now={now} />
            ))}
          </tbody>
        </table>
      )}
      <div class="pager">
        <button type="button" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
          ← Newer
        </button>
        <span class="muted small">page {cursors.length + 1}</span>
        <button type="button" disabled={!page?.next} onClick={() => page?.next && setCursors([...cursors, page.next])}>
          Older →
        </button>
      </div>
    </div>
  );
}

function RunRow({ run, now }: { run: RunView; now: number }) {
  const meta = Object.keys(run.metadata ?? {}).length ? JSON.stringify(run.metadata) : '';
  const what = run.input ?? (run.messages_count ? `${run.messages_count} messages` : '');
  const ms = between(run.started_at ?? run.created_at, run.completed_at, now);
  return (
    <tr data-run={run.id}>
      <td>
        <StatusBadge status={run.status} />
      </td>
      <td class="mono">
        <Link href={`/runs/${run.id}`}>{run.id}</Link>
        {run.parent_run_id && <div class="muted small">sub-run of {run.parent_run_id}</div>}
        {run.agent && (
          <div class="muted small">
            agent {run.agent.name}@{run.agent.version}
          </div>
        )}
      </td>
      <td class="preview">
        {what && <div>{oneLine(what, 90)}</div>}
        {meta && <div class="mono small muted">{oneLine(meta, 90)}</div>}
        {run.error && <div class="problem small">{oneLine(run.error.message, 90)}</div>}
      </td>
      <td class="mono small">{run.model}</td>
      <td class="num">
        {run.depth}/{run.max_depth}
      </td>
      <td class="num">{tokens(run.usage_total?.total_tokens)}</td>
      <td class="num">{isTerminal(run.status) || run.started_at ? duration(ms) : '–'}</td>
      <td title={clock(run.created_at)}>{ago(run.created_at, now)}</td>
    </tr>
  );
}
