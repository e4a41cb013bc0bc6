// The web UI's build check: its plain ES modules (crates/server/webui) type-checked from their
// JSDoc by the pinned TypeScript (tsconfig.json: checkJs, strict, nothing emitted). The browser
// runs the files as they are; this is what catches a misspelt DOM call or a wrong argument.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const peer = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

test('tsc --checkJs finds no error in the web UI', () => {
  const tsc = path.join(peer, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', path.join(peer, 'tsconfig.json')], { encoding: 'utf8' });
  assert.equal(result.error, undefined);
  assert.equal(result.status, 0, `tsc found errors:\n${result.stdout}${result.stderr}`);
});
