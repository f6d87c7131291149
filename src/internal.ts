/**
 * Internals for Vela's own tests and tools: what lies below the public entry points (the store
 * behind a broker, say). Nothing in src/ outside the composition root may import it; the lint
 * configuration enforces that.
 */
export { storeOf } from './broker/broker.js';
