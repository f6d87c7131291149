/** Pages derived from code stay equal to the code they describe (`npm run docs` regenerates them). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { renderErrorsDoc } from '../../scripts/render-errors.js';
import { renderConfigDoc } from '../../scripts/render-config.js';

const doc = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');

test('docs/errors.md is generated from the code table and the error catalogue', () => {
  assert.equal(doc('errors.md'), renderErrorsDoc(), 'docs/errors.md is stale: run `npm run docs`');
});

test('docs/configuration.md lists every setting with its default, from the schema', () => {
  const page = doc('configuration.md');
  assert.equal(page, renderConfigDoc(page), 'docs/configuration.md is stale: run `npm run docs`');
});
