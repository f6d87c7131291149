/** `npm run docs`: regenerate the documentation that is derived from code. */
import { readFileSync, writeFileSync } from 'node:fs';
import { renderErrorsDoc } from './render-errors.js';
import { renderConfigDoc } from './render-config.js';

const doc = (name: string) => new URL(`../docs/${name}`, import.meta.url);

writeFileSync(doc('errors.md'), renderErrorsDoc());
writeFileSync(doc('configuration.md'), renderConfigDoc(readFileSync(doc('configuration.md'), 'utf8')));
