import { useEffect, useState } from 'preact/hooks';
import { api, type Tool } from '../api.js';

let cached: Promise<Tool[]> | null = null;

/** The configured tools (`GET /v1/tools`), read once a page needs them (their schemas make the edit form). */
export function useTools(needed: boolean): { data: Tool[] | null } {
  const [data, setData] = useState<Tool[] | null>(null);
  useEffect(() => {
    if (!needed) return;
    cached ??= api.tools().catch((err) => {
      cached = null;
      throw err;
    });
    let live = true;
    cached.then((t) => live && setData(t)).catch(() => live && setData([]));
    return () => {
      live = false;
    };
  }, [needed]);
  return { data };
}
