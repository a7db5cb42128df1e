import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, type InboxItem } from '../api.js';
import { ActionCard } from '../components/action-card.js';
import { ago, clock, prettyJson } from '../lib/format.js';
import { Link, navigate } from '../router.js';

const PAGE_SIZE = 20;
const REFRESH_MS = 3000;

/** The key's requests for an answer across its runs (`GET /v1/actions`): pending ones to answer, or resolved. */
export function InboxPage({ query }: { query: URLSearchParams }) {
  const status = query.get('status') === 'resolved' ? 'resolved' : 'pending';
  const [cursors, setCursors] = useState<string[]>([]);
  const after = cursors[cursors.length - 1];
  const [page, setPage] = useState<{ data: InboxItem[]; next: string | null } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);

  useEffect(() => setCursors([]), [status]);
  useEffect(() => {
    let stop = false;
    const load = () =>
      api
        .actions({ status, limit: PAGE_SIZE, after })
        .then((p) => {
          if (!stop) {
            setPage(p);
            setError(null);
          }
        })
        .catch((err) => !stop && setError(err instanceof ApiError ? `${err.code}: ${err.message}` : String(err)));
    void load();
    const timer = setInterval(() => document.visibilityState === 'visible' && !after && void load(), REFRESH_MS);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, [status, after, tick]);

  return (
    <div class="inbox-page">
      <div class="tabs">
        <button type="button" class={status === 'pending' ? 'active' : ''} onClick={() => navigate('/inbox', true)}>
          Pending
        </button>
        <button
          type="button"
          class={status === 'resolved' ? 'active' : ''}
          onClick={() => navigate('/inbox?status=resolved', true)}
        >
          Resolved
        </button>
      </div>
      {error && <p class="problem">{error}</p>}
      {!page ? (
        <p class="muted">Loading…</p>
      ) : page.data.length === 0 ? (
        <p class="muted empty">{status === 'pending' ? 'Nothing waits for an answer.' : 'Nothing answered yet.'}</p>
      ) : status === 'pending' ? (
        page.data.map((item) => <ActionCard key={item.id} item={item} showRun onDone={() => setTick(tick + 1)} />)
      ) : (
        <table class="runs">
          <thead>
            <tr>
              <th>decision</th>
              <th>request</th>
              <th>run</th>
              <th>asked</th>
              <th>resolved</th>
            </tr>
          </thead>
          <tbody>
            {page.data.map((item) => (
              <tr key={item.id}>
                <td>
                  <span class={`badge dec-${item.decision ?? 'none'}`}>{item.decision ?? '–'}</span>
                </td>
                <td class="preview">
                  <strong class="mono">{item.type === 'input' ? 'ask_human' : item.name}</strong>
                  <div class="mono small muted">
                    {item.type === 'input' ? item.question : prettyJson(item.arguments).slice(0, 200)}
                  </div>
                </td>
                <td class="mono small">
                  <Link href={`/runs/${item.run_id}`}>{item.run_id}</Link>
                </td>
                <td title={clock(item.created_at)}>{ago(item.created_at)}</td>
                <td>{clock(item.resolved_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="pager">
        <button type="button" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
          ← Newer
        </button>
        <button type="button" disabled={!page?.next} onClick={() => page?.next && setCursors([...cursors, page.next])}>
          Older →
        </button>
      </div>
    </div>
  );
}
