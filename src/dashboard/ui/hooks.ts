/** Small hooks: data that refreshes on an interval, and the hash route. */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Polled<T> {
  data: T | undefined;
  error: Error | undefined;
  reload: () => void;
}

/** `load()` now and every `intervalMs` (0: once), while the component is shown. */
export function usePoll<T>(load: () => Promise<T>, intervalMs: number, deps: unknown[] = []): Polled<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    let alive = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const d = await loadRef.current();
        if (!alive) return;
        setData(d);
        setError(undefined);
      } catch (e) {
        if (alive) setError(e as Error);
      }
      if (alive && intervalMs > 0) timer = setTimeout(run, intervalMs);
    };
    void run();
    return () => {
      alive = false;
      if (timer) clearTimeout(timer);
    };
  }, [intervalMs, tick, ...deps]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, reload };
}

/** The route after `#`, split into path segments and query parameters. */
export function useRoute(): { path: string[]; query: URLSearchParams } {
  const read = () => {
    const h = location.hash.replace(/^#\/?/, '');
    const [p = '', q = ''] = h.split('?');
    return { path: p.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(q) };
  };
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function navigate(hash: string): void {
  location.hash = hash;
}
