/**
 * The web console in a real browser (Debian's chromium, headless, driven by playwright-core): create a
 * topic and a group, send and consume messages and watch the group's lag go up and down, find a
 * message by key and see its deliveries, resend a dead letter; the token prompt of a broker with an
 * admin token. Screenshots go to test-artifacts/console/ (not committed). The page must run without a
 * script error or a Content-Security-Policy violation.
 *
 * Needs chromium: `apt-get install -y chromium` (.ci/run does it); VELA_CHROMIUM names another binary.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { Producer, SimpleConsumer } from '../../src/index.js';
import { startTestBroker, uniqueName, waitFor, use, closeAll, type TestBroker } from '../support/harness.js';
import { tempDir } from '../helpers.js';

const CHROMIUM = process.env.VELA_CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/console/', import.meta.url));

let b: TestBroker;
let context: BrowserContext;
let profile: { path: string; cleanup: () => void };
const problems: string[] = [];

async function launch(): Promise<BrowserContext> {
  assert.ok(
    existsSync(CHROMIUM),
    `no browser at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (or set VELA_CHROMIUM)`,
  );
  const ctx = await chromium.launchPersistentContext(profile.path, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1360, height: 900 },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  ctx.on('page', watch);
  for (const p of ctx.pages()) watch(p);
  return ctx;
}

/** Script errors and CSP violations fail the test. */
function watch(page: Page): void {
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !/status of 401/.test(msg.text())) problems.push(`console: ${msg.text()}`);
  });
}

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  profile = tempDir('vela-chromium-');
  b = await startTestBroker({ consume: { minInvisibleMs: 50 } });
  context = await launch();
});

after(async () => {
  await context?.close();
  profile?.cleanup();
  await closeAll();
  await b?.close();
});

const shot = (page: Page, name: string) =>
  page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });

test('topics, groups, lag, messages by key, dead letters: through the console', async () => {
  problems.length = 0;
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(`${b.adminUrl}/console/`);
  await page.getByTestId('overview-stats').getByText('broker-0').waitFor();

  // Create a topic.
  const topic = uniqueName('WebT');
  await page.getByRole('link', { name: 'Topics' }).click();
  const tform = page.getByTestId('topic-form');
  await tform.locator('input[name=topic]').fill(topic);
  await tform.locator('select[name=messageType]').selectOption('NORMAL');
  await tform.locator('input[name=queues]').fill('2');
  await tform.getByRole('button', { name: 'Create topic' }).click();
  await page.locator(`tr[data-topic="${topic}"]`).waitFor();
  assert.equal(b.running.broker.topics.get(topic)?.writeQueueNums, 2);

  // Create a group whose messages go to the DLQ after one failed delivery.
  const group = uniqueName('WebG');
  await page.getByRole('link', { name: 'Consumer groups' }).click();
  const gform = page.getByTestId('group-form');
  await gform.locator('input[name=group]').fill(group);
  await gform.locator('input[name=retryMaxTimes]').fill('0');
  await gform.locator('select[name=policy]').selectOption('CUSTOMIZED');
  await gform.locator('input[name=next]').fill('100, 200');
  await gform.getByRole('button', { name: 'Create group' }).click();
  await page.locator(`tr[data-group="${group}"]`).waitFor();
  assert.equal(b.running.broker.groups.get(group)?.retryMaxTimes, 0);

  // A simple consumer joins (nothing to receive yet); the group page shows lag 0.
  const consumer = use(
    new SimpleConsumer({
      endpoints: b.endpoints,
      group,
      subscriptions: { [topic]: '*' },
      awaitDurationMs: 200,
    }),
  );
  assert.deepEqual(await consumer.receive(16, 30_000), []);
  await page.locator(`tr[data-group="${group}"] a`).click();
  const lag = page.getByTestId('detail-lag');
  await waitText(lag, '0');

  // Send ten: the lag goes up.
  const producer = use(new Producer({ endpoints: b.endpoints }));
  const key = uniqueName('order');
  for (let i = 0; i < 10; i++) {
    await producer.send({
      topic,
      body: JSON.stringify({ order: i, item: 'book' }),
      keys: i === 3 ? [key] : [],
    });
  }
  await waitText(lag, '10');
  await page.getByTestId(`lag-${topic}`).waitFor();
  await shot(page, 'group-lag-up');

  // Receive four (in flight), then ack everything: the lag comes down.
  const first = await consumer.receive(4, 30_000);
  assert.equal(first.length, 4);
  await waitText(page.getByTestId(`lag-${topic}`).getByTestId('topic-inflight-total'), '4');
  await waitText(lag, '10');
  for (const m of first) await consumer.ack(m);
  await waitText(lag, '6');
  let rest = 0;
  while (rest < 6) {
    const batch = await consumer.receive(16, 30_000);
    for (const m of batch) await consumer.ack(m);
    rest += batch.length;
  }
  await waitText(lag, '0');
  await page.getByRole('table').first().waitFor();
  await shot(page, 'group-detail');

  // One message that is never acked: its single attempt expires and it goes to the DLQ.
  const deadKey = uniqueName('dead');
  await producer.send({ topic, body: 'cannot be processed', keys: [deadKey] });
  const doomed = await consumer.receive(1, 100);
  assert.equal(doomed.length, 1);
  const dlq = page.getByTestId('dlq');
  await dlq.locator('tr[data-message]').waitFor({ timeout: 10_000 });
  await shot(page, 'dead-letters');
  await dlq.getByTestId('resend-one').click();
  await waitText(page.getByTestId('dlq-note'), `Resent 1 message(s) to ${group}.`);
  // It is delivered to the group again.
  let again: Awaited<ReturnType<typeof consumer.receive>> = [];
  await waitFor(
    async () => {
      again = await consumer.receive(1, 30_000);
      return again.length === 1;
    },
    { timeoutMs: 10_000, what: 'the resent message' },
  );
  assert.deepEqual(again[0]!.keys, [deadKey]);
  await consumer.ack(again[0]!);

  // Find a message by key: its body as JSON, its deliveries.
  await page.getByRole('link', { name: 'Messages' }).click();
  const search = page.getByTestId('message-search');
  await search.locator('select[name=mode]').selectOption('key');
  await search.locator('input[name=key]').fill(key);
  await search.getByRole('button', { name: 'Search' }).click();
  const detail = page.getByTestId('message-detail');
  await detail.waitFor();
  assert.match(await page.getByTestId('message-body').innerText(), /"order": 3/);
  await waitText(detail.getByTestId('delivery-outcome').first(), 'ACKED');
  await shot(page, 'message');

  // The dead letter's story: expired, to the DLQ, resent by an operator, delivered again and acked.
  await page.goto(`${b.adminUrl}/console/#/messages?key=${deadKey}`);
  // The page shows the previous message until the new search answers: wait for this one's outcomes.
  const outcomes = detail.getByTestId('delivery-outcome');
  const expected = ['EXPIRED', 'RESENT FROM DLQ', 'ACKED'];
  await waitFor(async () => (await outcomes.allInnerTexts()).join() === expected.join(), {
    timeoutMs: 10_000,
    what: `the deliveries of the dead letter (${expected.join(', ')})`,
  }).catch(async (err: Error) => {
    throw new Error(`${err.message}; shown: ${(await outcomes.allInnerTexts()).join(', ')}`);
  });
  assert.match(await detail.innerText(), new RegExp(deadKey));

  // Delete the topic from the list.
  await page.getByRole('link', { name: 'Topics' }).click();
  await page.getByTestId(`delete-${topic}`).click();
  await page.getByTestId(`delete-${topic}-yes`).click();
  await page.locator(`tr[data-topic="${topic}"]`).waitFor({ state: 'detached' });
  assert.equal(b.running.broker.topics.get(topic), undefined);

  assert.deepEqual(problems, []);
});

test('the overview charts live throughput', async () => {
  problems.length = 0;
  const page = context.pages()[0] ?? (await context.newPage());
  const topic = uniqueName('Orders');
  const group = uniqueName('OrderProcessors');
  await b.running.broker.topics.upsert(topic, {});
  await b.running.broker.groups.upsert(group, {});
  await page.goto(`${b.adminUrl}/console/#/`);
  await page.getByTestId('overview-stats').waitFor();
  const producer = use(new Producer({ endpoints: b.endpoints }));
  const consumer = use(
    new SimpleConsumer({
      endpoints: b.endpoints,
      group,
      subscriptions: { [topic]: '*' },
      awaitDurationMs: 200,
    }),
  );
  // Traffic runs while the chart is watched: at least 5 s of it, and until the chart shows it.
  let stop = false;
  let sent = 0;
  const traffic = (async () => {
    while (!stop) {
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          producer.send({ topic, body: `event ${sent + i}`, keys: [`k${i}`] }),
        ),
      );
      sent += 20;
      for (const m of await consumer.receive(32, 30_000)) await consumer.ack(m);
    }
  })();
  try {
    const until = Date.now() + 5000;
    const legend = page.locator('figure.chart').first().locator('.legend b').first();
    await waitFor(
      async () => Date.now() >= until && Number((await legend.innerText()).replace(/[^0-9.]/g, '')) > 0,
      { timeoutMs: 30_000, what: 'a non-zero rate in the chart' },
    );
    await shot(page, 'overview');
  } finally {
    stop = true;
    await traffic;
  }
  assert.deepEqual(problems, []);
});

test('with an admin token, the console asks for it', async () => {
  problems.length = 0;
  const token = 'console-token-0123456789';
  const tb = await startTestBroker({ adminToken: token });
  const page = await context.newPage();
  try {
    await page.goto(`${tb.adminUrl}/console/`);
    const prompt = page.getByRole('dialog', { name: 'Admin token' });
    await prompt.waitFor();
    await prompt.locator('input[name=token]').fill('not-the-token-000000');
    await prompt.getByRole('button', { name: 'Continue' }).click();
    await prompt.getByText('That token was refused.').waitFor();
    await prompt.locator('input[name=token]').fill(token);
    await prompt.getByRole('button', { name: 'Continue' }).click();
    await page.getByTestId('overview-stats').getByText('broker-0').waitFor();
    assert.equal(await prompt.count(), 0);
  } finally {
    await page.close();
    await tb.close();
  }
  assert.deepEqual(problems, []);
});

test("with access control on, the console signs in with a super user's keys and signs every request", async () => {
  problems.length = 0;
  const tb = await startTestBroker({ aclEnabled: true, aclInitUser: 'console-admin:console-secret-0123' });
  const page = await context.newPage();
  try {
    const unsigned = await fetch(`${tb.adminUrl}/api/overview`);
    assert.equal(unsigned.status, 401, 'the API itself refuses an unsigned request');
    await page.goto(`${tb.adminUrl}/console/`);
    const prompt = page.getByRole('dialog', { name: 'Access keys' });
    await prompt.waitFor();
    await prompt.locator('input[name=accessKey]').fill('console-admin');
    await prompt.locator('input[name=secretKey]').fill('not-the-secret');
    await prompt.getByRole('button', { name: 'Sign in' }).click();
    await prompt.getByText('Those keys were refused.').waitFor();
    await prompt.locator('input[name=secretKey]').fill('console-secret-0123');
    await prompt.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('overview-stats').getByText('broker-0').waitFor();
    assert.equal(await prompt.count(), 0);
    await page.goto(`${tb.adminUrl}/console/#/topics`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await prompt.waitFor();
  } finally {
    await page.close();
    await tb.close();
  }
  assert.deepEqual(problems, []);
});

/** Wait until an element's text is exactly `text`. */
async function waitText(
  locator: ReturnType<Page['locator']>,
  text: string,
  timeoutMs = 10_000,
): Promise<void> {
  await waitFor(async () => (await locator.innerText().catch(() => '')).trim() === text, {
    timeoutMs,
    what: `"${text}" on the page`,
  });
}
