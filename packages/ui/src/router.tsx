import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

// Pages are paths under /ui (the API serves the app for each): /ui/, /ui/runs/<id>, /ui/inbox, /ui/login.

export const BASE = '/ui';

export type Route =
  | { page: 'runs'; query: URLSearchParams }
  | { page: 'run'; id: string }
  | { page: 'inbox'; query: URLSearchParams }
  | { page: 'login'; next: string }
  | { page: 'missing'; path: string };

export function parseRoute(loc: { pathname: string; search: string }): Route {
  const path = loc.pathname.startsWith(BASE) ? loc.pathname.slice(BASE.length) || '/' : loc.pathname;
  const query = new URLSearchParams(loc.search);
  if (path === '/' || path === '') return { page: 'runs', query };
  const run = /^\/runs\/([^/]+)\/?$/.exec(path);
  if (run) return { page: 'run', id: decodeURIComponent(run[1]!) };
  if (/^\/inbox\/?$/.test(path)) return { page: 'inbox', query };
  if (/^\/login\/?$/.test(path)) return { page: 'login', next: query.get('next') ?? `${BASE}/` };
  return { page: 'missing', path };
}

const listeners = new Set<() => void>();

/** Goes to a page of the app (`href` relative to /ui) without loading the page again. */
export function navigate(href: string, replace = false) {
  const url = href.startsWith(BASE) ? href : `${BASE}${href}`;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  for (const l of listeners) l();
  window.scrollTo(0, 0);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location));
  useEffect(() => {
    const update = () => setRoute(parseRoute(window.location));
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return route;
}

/** A link to a page of the app: a plain link (it opens in a new tab as one), followed in place when clicked. */
export function Link(props: { href: string; class?: string; title?: string; children: ComponentChildren }) {
  const url = props.href.startsWith(BASE) ? props.href : `${BASE}${props.href}`;
  return (
    <a
      href={url}
      class={props.class}
      title={props.title}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(url);
      }}
    >
      {props.children}
    </a>
  );
}
