import { useState } from 'preact/hooks';
import { ApiError, api, type SessionInfo } from '../api.js';
import { BASE, navigate } from '../router.js';

/** Where a login may send the browser: a path of this server, never another site. */
const safeNext = (next: string) => (/^\/(?!\/)/.test(next) && !next.startsWith(`${BASE}/login`) ? next : `${BASE}/`);

/**
 * The browser login: a key, sent once to `POST /ui/login`, which answers with an HttpOnly session cookie (the page
 * never keeps the key).
 */
export function LoginPage(props: { next: string; session: SessionInfo; onSignedIn: (s: SessionInfo) => void }) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const next = safeNext(props.next);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const s = await api.login(key);
      setKey('');
      props.onSignedIn(s);
      if (next.startsWith(BASE)) navigate(next, true);
      else window.location.assign(next);
    } catch (err) {
      setError(
        err instanceof ApiError && err.status === 401 ? 'That key is not valid.' : String((err as Error).message),
      );
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="login">
      <form onSubmit={submit} class="card">
        <h1>agentq</h1>
        {props.session.keys_required ? (
          <p class="muted">
            Sign in with an API key. The browser keeps a session cookie; the key itself is not stored.
          </p>
        ) : (
          <p class="muted">This server needs no key (API_KEYS is not set).</p>
        )}
        <label class="field">
          <span>API key</span>
          <input
            name="key"
            type="password"
            autocomplete="current-password"
            value={key}
            onInput={(e) => setKey((e.target as HTMLInputElement).value)}
            required
          />
        </label>
        {error && <p class="problem">{error}</p>}
        <button type="submit" class="primary" disabled={busy || !key}>
          Sign in
        </button>
      </form>
    </div>
  );
}
