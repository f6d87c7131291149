/**
 * The Vela broker for the comparison, in its own process: `vela-broker-child.ts <dataDir>` starts
 * it on 127.0.0.1 (free ports, sync flush: every send is answered after an fsync covers it) and
 * prints `READY <grpcPort> <httpPort> <remotingPort>`; SIGTERM closes it. `VELA_COMPARE_CONFIG`, a JSON
 * object of broker settings (e.g. `{"consume":{"maxPushBatch":32}}` or `{"flush":"async"}`), is merged
 * in over the child's own choices (child-settings.ts): an A/B of one setting. `VELA_COMPARE_BROKER_CONFIG`
 * (`bench:compare --broker-config`, this checkout's broker only) goes over that.
 * `VELA_COMPARE_HEAP_SAMPLE=<file>` (`bench:compare --heap-sample DIR`): from READY until SIGTERM, V8's
 * sampling heap profiler records the allocations that outlived two young-generation collections
 * (those collected by a full GC, and those still alive at the end), written to that file on SIGTERM.
 * `VELA_COMPARE_FROM=src`: the broker from its TypeScript sources instead of the compiled dist/.
 * `VELA_COMPARE_PAUSES=<file>` (`bench:compare --w3-pauses`): the process's pauses (collections, and
 * event-loop turns of 4 ms or more) are appended to that file as they happen (pauses.ts).
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import type { HeapProfiler } from 'node:inspector';
import { Session } from 'node:inspector/promises';
import type * as VelaServer from '../../../src/server.js';
import type * as BrokerHeap from '../../../src/cli/broker-heap.js';
import { velaFrom } from '../vela-from.js';
import { appendPauses, PauseLog, PAUSES_FILE_ENV } from '../pauses.js';
import { childBrokerSettings, compareSettings } from './child-settings.js';

// The broker users run (dist/, built by bench:compare) unless asked for the sources.
const { startBroker, DEFAULTS } = (await import(
  velaFrom() === 'src' ? '../../../src/server.js' : '../../../dist/server.js'
)) as typeof VelaServer;
// What `vela broker` does for its process before it starts the broker (its default setting).
const { applyHeapGrowing } = (await import(
  velaFrom() === 'src' ? '../../../src/cli/broker-heap.js' : '../../../dist/cli/broker-heap.js'
)) as typeof BrokerHeap;

const dataDir = process.argv[2];
if (!dataDir) {
  console.error('usage: vela-broker-child.ts <dataDir>');
  process.exit(2);
}
const extra = compareSettings(process.env);
// The broker itself ignores the setting (it is the process's), as with `vela broker`.
applyHeapGrowing((extra.heapGrowingPercent as number | undefined) ?? DEFAULTS.heapGrowingPercent);
const running = await startBroker(childBrokerSettings(dataDir, extra) as Parameters<typeof startBroker>[0]);
const heapSample = process.env.VELA_COMPARE_HEAP_SAMPLE;
// `bench:compare --w3-pauses`: this process's pauses, appended to the file a few times a second.
const pausesFile = process.env[PAUSES_FILE_ENV];
if (pausesFile) appendFileSync(pausesFile, ''); // exists from now on: the reader can tell "none" from "not asked"
const pauses = pausesFile ? new PauseLog().start() : undefined;
const pauseWriter = pauses
  ? setInterval(() => appendPauses(pausesFile!, pauses.take()), 250).unref()
  : undefined;
const stopSampling = heapSample ? await sampleHeap(heapSample) : async () => {};
process.stdout.write(`READY ${running.grpcPort} ${running.httpPort} ${running.remotingPort}\n`);
let closing = false;
const close = () => {
  if (closing) return;
  closing = true;
  if (pauseWriter) clearInterval(pauseWriter);
  pauses?.stop();
  void stopSampling()
    .catch((err: unknown) => console.error('heap sample:', err))
    .then(() => running.close())
    .then(
      () => process.exit(0),
      (err) => {
        console.error(err);
        process.exit(1);
      },
    );
};
process.on('SIGTERM', close);
process.on('SIGINT', close);

/** Start the sampling heap profiler; the returned function stops it and writes the profile to `file`. */
async function sampleHeap(file: string): Promise<() => Promise<void>> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  // Objects a scavenge frees are left out: what remains is what got promoted to the old generation.
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: false,
  } as HeapProfiler.StartSamplingParameterType);
  return async () => {
    const { profile } = (await session.post('HeapProfiler.stopSampling')) as { profile: unknown };
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}
