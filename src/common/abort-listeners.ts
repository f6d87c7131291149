/**
 * Abort callbacks for calls on a signal that outlives them: the signal of a push consumer's receive
 * loop, or one an application passes to every send (its shutdown signal, say).
 *
 * Registering a listener per call with `addEventListener` (and a controller per request) cost more
 * than the send itself: 1,024 sends in flight, all with one signal, ran at 51,776–67,185 msgs/s and
 * 15.8–18.7 µs of SDK CPU per message; with this (and producer.ts's shared request signal),
 * 109,992–118,497 msgs/s and 6.8–6.9 µs, as without a signal (`node --import tsx
 * bench/sdk-bench.ts`; docs/sdk.md, Performance).
 * Each signal gets one listener, once; the calls' callbacks go into a slot set (a Set would promote
 * them: slot-set.ts).
 */
import { SlotSet } from './slot-set.js';

interface Hub {
  callbacks: SlotSet<() => void>;
  fired: boolean;
}

const hubs = new WeakMap<AbortSignal, Hub>();

function noop(): void {}

/**
 * Run `fn` once when `signal` aborts. Returns the function that unregisters it; call that once the
 * call is over. Check `signal.aborted` first: on a signal already aborted, `fn` never runs.
 */
export function onAbort(signal: AbortSignal, fn: () => void): () => void {
  const hub = hubs.get(signal) ?? listen(signal);
  if (hub.fired || signal.aborted) return noop;
  const { callbacks } = hub;
  let handle = callbacks.add(fn);
  return () => {
    if (handle < 0 || hub.fired) return;
    callbacks.remove(handle);
    handle = -1;
  };
}

/** The signal's one listener. */
function listen(signal: AbortSignal): Hub {
  const h: Hub = { callbacks: new SlotSet(), fired: false };
  hubs.set(signal, h);
  signal.addEventListener(
    'abort',
    () => {
      h.fired = true;
      const callbacks = h.callbacks.values();
      h.callbacks.clear();
      for (const cb of callbacks) cb();
    },
    { once: true },
  );
  return h;
}
