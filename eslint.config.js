import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Imports point down: protocol | remoting | admin | metrics | dashboard → broker → store → common.
 * The SDK (client/) shares only the wire codec with protocol/. Each rule below names a folder and
 * what it may not reach; a file that needs one of these imports is in the wrong room.
 */
const layer = (message, ...regexes) => ({
  'no-restricted-imports': ['error', { patterns: regexes.map((regex) => ({ regex, message })) }],
});
const EDGES = '(^|/)(protocol|remoting|admin|metrics|dashboard)/';
const ROOTS = '(^|/)(server|cli|internal)\\.js$|^(\\.\\./)+cli/';

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      'coverage/',
      'vela-data/',
      '.scratch/',
      '.bench-data/',
      '.cache/',
      '.interop-cache/',
      'test-artifacts/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        console: 'readonly',
        process: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        clearImmediate: 'readonly',
        performance: 'readonly',
        URL: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'off',
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/cli.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      'no-console': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  { files: ['src/common/*.ts'], rules: layer('common/ depends on nothing of ours', '^\\.\\./') },
  // Its subfolders (http2/) may use common/ itself, nothing above it.
  { files: ['src/common/*/**/*.ts'], rules: layer('common/ depends on nothing of ours', '^\\.\\./\\.\\./') },
  {
    files: ['src/store/**/*.ts'],
    rules: layer('store/ depends only on common/', '^\\.\\./(?!common/)'),
  },
  {
    files: ['src/broker/**/*.ts'],
    rules: layer('broker/ sees neither wire formats nor its callers', EDGES, '(^|/)client/', ROOTS),
  },
  {
    files: ['src/protocol/**/*.ts'],
    rules: layer(
      'edges talk to the broker (and metrics/), never to the store, another edge or the SDK',
      '(^|/)store/',
      '(^|/)client/',
      ROOTS,
      '(^|/)(remoting|admin|dashboard)/',
    ),
  },
  {
    files: ['src/remoting/**/*.ts'],
    rules: layer(
      'edges talk to the broker (and metrics/), never to the store, another edge or the SDK',
      '(^|/)store/',
      '(^|/)client/',
      ROOTS,
      '(^|/)(protocol|admin|dashboard)/',
    ),
  },
  {
    files: ['src/admin/**/*.ts'],
    rules: layer(
      'edges talk to the broker (and metrics/), never to the store, another edge or the SDK',
      '(^|/)store/',
      '(^|/)client/',
      ROOTS,
      '(^|/)(protocol|remoting)/',
    ),
  },
  {
    files: ['src/metrics/**/*.ts'],
    rules: layer(
      'edges talk to the broker (and metrics/), never to the store, another edge or the SDK',
      '(^|/)store/',
      '(^|/)client/',
      ROOTS,
      '(^|/)(protocol|remoting|admin|dashboard)/',
    ),
  },
  {
    files: ['src/dashboard/**/*.ts'],
    rules: layer(
      'edges talk to the broker (and metrics/), never to the store, another edge or the SDK',
      '(^|/)store/',
      '(^|/)client/',
      ROOTS,
      '(^|/)(protocol|remoting|metrics)/',
    ),
  },
  {
    files: ['src/bench/**/*.ts'],
    rules: layer(
      '`vela bench` is a client like any other: the SDK (client/) and common/ only',
      '(^|/)(broker|store|protocol|admin|remoting|metrics|dashboard)/',
      ROOTS,
    ),
  },
  {
    files: ['src/client/**/*.ts'],
    rules: layer(
      'the SDK shares only the wire codec with protocol/',
      '(^|/)(broker|store|admin|remoting|metrics|dashboard)/',
      '(^|/)protocol/(?!(codec|wire-types|body-digest|varint|transport/grpc-wire)\\.js$)',
      ROOTS,
    ),
  },
);
