/**
 * Loaded into every test process (`--import`): once a file's tests have all ended, the process must
 * exit on its own. If something the tests opened is still holding it (a server, a socket, a timer, a
 * child process), fail after a short grace period and name the file and the handles, instead of
 * letting the runner wait forever.
 */
import { after } from 'node:test';

const GRACE_MS = Number(process.env.VELA_TEST_LEAK_GRACE_MS ?? 5000);

after(() => {
  const timer = setTimeout(() => {
    const handles = process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap');
    process.stderr.write(
      `\nleak guard: ${process.argv[1] ?? 'a test file'} still has open handles ${GRACE_MS} ms after ` +
        `its tests ended: ${handles.join(', ') || '(none reported)'}\n`,
    );
    process.exit(70);
  }, GRACE_MS);
  timer.unref();
});
