/** Vela's version, from package.json (one level above both src/ and dist/). */
import { readFileSync } from 'node:fs';

export const VELA_VERSION: string = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
