import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, type ChatMessage, type RunView } from '../api.js';
import { isTerminal } from './format.js';
import { applyEvent, emptyTree, type LiveTree, TERMINAL_EVENTS } from './live.js';
import type { RunData } from './timeline.js';

/** Every event type a run's stream sends (an EventSource hears only the named types it listens to). */
const EVENT_TYPES = [
  'run.queued',
  'run.started',
  'step.started',
  'step.retry',
  'message.delta',
  'step.completed',
  'tool.started',
  'tool.completed',
  'tool.cancelled',
  'subrun.started',
  'subrun.completed',
  'action.required',
  'action.resolved',
  'context.compacted',
  ...TERMINAL_EVENTS,
];

/** How soon after an event the REST views are read again (events come in bursts: one read per burst). */
const REFRESH_AFTER_MS = 250;

export interface RunState {
  data: RunData | null;
  messages: ChatMessage[] | null;
  live: LiveTree;
  /** Sub-runs opened in place. */
  expanded: Map<string, RunData>;
  error: string | null;
  /** The event stream is open (the run is followed live). */
  following: boolean;
  /** Changes whenever the live tree does (the tree itself is mutated in place). */
  version: number;
  refresh: () => void;
  toggle: (runId: string) => void;
  /** The run as a cancel answered it. */
  replaceRun: (run: RunView) => void;
}

async function readRun(id: string): Promise<RunData> {
  const [run, steps, children] = await Promise.all([api.run(id), api.steps(id), api.children(id)]);
  return { run, steps, children };
}

/**
 * A run as its page shows it: read from the API (the run, /steps, /children, /messages), then followed on its event
 * stream (the history first, so that retries and waits show for a finished run too); each burst of events reads
 * the REST views again, and streamed text shows as it comes.
 */
export function useRun(id: string): RunState {
  const [data, setData] = useState<RunData | null>(null);
  const [messages, setMessages] = useState<ChatMessage[] | null>(null);
  const [expanded, setExpanded] = useState<Map<string, RunData>>(new Map());
  const [error, setError] = useState<string | null>(null);
  const [following, setFollowing] = useState(false);
  const [version, setVersion] = useState(0);
  const tree = useRef<LiveTree>(emptyTree());
  const expandedRef = useRef(expanded);
  expandedRef.current = expanded;
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const frame = useRef<number | null>(null);
  const closed = useRef(false);

  const load = useCallback(async () => {
    try {
      const [d, m] = await Promise.all([readRun(id), api.messages(id)]);
      if (closed.current) return;
      setData(d);
      setMessages(m);
      setError(null);
      // Sub-runs opened in place that are still going are read again too.
      const open = [...expandedRef.current.entries()].filter(([, e]) => !isTerminal(e.run.status));
      if (open.length) {
        const fresh = await Promise.all(open.map(([cid]) => readRun(cid).catch(() => null)));
        if (closed.current) return;
        setExpanded((prev) => {
          const next = new Map(prev);
          open.forEach(([cid], i) => {
            const f = fresh[i];
            if (f && next.has(cid)) next.set(cid, f);
          });
          return next;
        });
      }
    } catch (err) {
      if (!closed.current)
        setError(
          err instanceof ApiError ? (err.status === 404 ? 'not_found' : `${err.code}: ${err.message}`) : String(err),
        );
    }
  }, [id]);

  const refresh = useCallback(() => {
    if (timer.current) return;
    timer.current = setTimeout(() => {
      timer.current = null;
      void load();
    }, REFRESH_AFTER_MS);
  }, [load]);

  useEffect(() => {
    closed.current = false;
    tree.current = emptyTree();
    void load();
    const es = new EventSource(api.eventsUrl(id));
    setFollowing(true);
    let errors = 0;
    const bump = () => {
      if (frame.current !== null) return;
      frame.current = requestAnimationFrame(() => {
        frame.current = null;
        setVersion((v) => v + 1);
      });
    };
    const onEvent = (type: string) => (e: MessageEvent<string>) => {
      errors = 0;
      let payload: Record<string, unknown>;
      try {
        payload = JSON.parse(e.data) as Record<string, unknown>;
      } catch {
        return;
      }
      const changed = applyEvent(tree.current, id, { type, data: payload });
      if (changed !== 'none') bump();
      if (changed === 'data') refresh();
      if (tree.current.ended) {
        es.close();
        setFollowing(false);
      }
    };
    for (const t of EVENT_TYPES) es.addEventListener(t, onEvent(t) as EventListener);
    es.onerror = () => {
      // The browser reconnects by itself (from the last event it got); a stream that keeps failing is given up,
      // and the run read again says why (a 404, or a login that ended).
      if (es.readyState === EventSource.CLOSED || ++errors >= 5) {
        es.close();
        setFollowing(false);
        refresh();
      }
    };
    return () => {
      closed.current = true;
      es.close();
      if (timer.current) clearTimeout(timer.current);
      timer.current = null;
      if (frame.current !== null) cancelAnimationFrame(frame.current);
      frame.current = null;
    };
  }, [id]);

  const toggle = useCallback((runId: string) => {
    if (expandedRef.current.has(runId)) {
      setExpanded((prev) => {
        const next = new Map(prev);
        next.delete(runId);
        return next;
      });
      return;
    }
    readRun(runId)
      .then((d) => setExpanded((prev) => new Map(prev).set(runId, d)))
      .catch((err: Error) => setError(err.message));
  }, []);

  const replaceRun = useCallback(
    (run: RunView) => {
      setData((d) => (d ? { ...d, run } : d));
      refresh();
    },
    [refresh],
  );

  return { data, messages, live: tree.current, expanded, error, following, version, refresh, toggle, replaceRun };
}
