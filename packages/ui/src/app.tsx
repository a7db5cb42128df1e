import { useEffect, useState } from 'preact/hooks';
import { api, onUnauthorized, type SessionInfo } from './api.js';
import { InboxPage } from './pages/inbox.js';
import { LoginPage } from './pages/login.js';
import { RunPage } from './pages/run.js';
import { RunsPage } from './pages/runs.js';
import { BASE, Link, navigate, useRoute } from './router.js';

/** The inspector: who is signed in, the bar at the top, and the page of the path. */
export function App() {
  const route = useRoute();
  const [session, setSession] = useState<SessionInfo | null>(null);
  const [failed, setFailed] = useState<string | null>(null);

  useEffect(() => {
    api
      .session()
      .then(setSession)
      .catch((err: Error) => setFailed(err.message));
    return onUnauthorized(() => {
      setSession((s) => (s ? { ...s, signed_in: false, api: false } : s));
      const here = window.location.pathname + window.location.search;
      if (!window.location.pathname.startsWith(`${BASE}/login`))
        navigate(`/login?next=${encodeURIComponent(here)}`, true);
    });
  }, []);

  if (failed) return <p class="problem page">The API did not answer: {failed}</p>;
  if (!session) return <p class="muted page">Loading…</p>;

  const signedOut = session.keys_required && !session.signed_in;
  if (route.page === 'login' || signedOut) {
    const next = route.page === 'login' ? route.next : window.location.pathname + window.location.search;
    return <LoginPage next={next} session={session} onSignedIn={setSession} />;
  }

  const signOut = async () => {
    await api.logout().catch(() => {});
    setSession(await api.session());
    navigate('/login', true);
  };

  return (
    <div class="shell">
      <header class="topbar">
        <Link href="/" class="brand">
          agentq
        </Link>
        <nav>
          <Link href="/" class={route.page === 'runs' || route.page === 'run' ? 'active' : ''}>
            Runs
          </Link>
          <Link href="/inbox" class={route.page === 'inbox' ? 'active' : ''}>
            Inbox
          </Link>
          {session.dashboard && <a href="/admin/queues/">Queues</a>}
          <a href="/docs">API docs</a>
        </nav>
        <span class="spacer" />
        {!session.api && <span class="problem small">this key opens the dashboard only</span>}
        {session.signed_in && (
          <button type="button" class="link" onClick={signOut}>
            Sign out
          </button>
        )}
      </header>
      <main>
        {route.page === 'runs' && <RunsPage query={route.query} />}
        {route.page === 'run' && <RunPage key={route.id} id={route.id} />}
        {route.page === 'inbox' && <InboxPage query={route.query} />}
        {route.page === 'missing' && <p class="problem">No page at {route.path}.</p>}
      </main>
    </div>
  );
}
