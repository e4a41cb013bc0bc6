// The real @ag-ui/client HttpAgent resuming an approval interrupt somewhere other than where it
// was raised: after the server restarted (the run waited in its SQLite store), and through a
// second node on one PostgreSQL (AGENTWIRE_TEST_DATABASE_URL; skipped without it) while the
// first still runs it, and after the first was killed. Each time the resume is accepted, every
// event passes both schemas, the tool writes its file once, and the model's last words follow.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { HttpAgent, buildResumeArray } from '@ag-ui/client';
import { run } from '../agent.mjs';
import { validateClient, validateOfficial } from '../support.mjs';
import { postgresSchemaUrl, startAgentwire } from '../../agentwire-server.mjs';
import { FILE, config, files } from '../../durable-writer.mjs';

const POSTGRES = process.env.AGENTWIRE_TEST_DATABASE_URL;

async function checkedRun(agent, params) {
  const out = await run(agent, params);
  assert.equal(out.error, null, `the client rejected the run: ${out.error}`);
  assert.deepEqual(out.warnings, [], 'the client warned');
  for (const event of out.events) {
    assert.equal(validateClient(event), null, `client schema: ${JSON.stringify(event)}`);
    assert.equal(validateOfficial(event), null, `official schema: ${JSON.stringify(event)}`);
  }
  return out;
}

/** Asks for the note on `url`: the agent, holding the interrupt the run raised. */
async function ask(url, threadId) {
  const agent = new HttpAgent({ url: `${url}/ag-ui`, threadId });
  agent.addMessage({ id: 'u1', role: 'user', content: 'Write the note' });
  const first = await checkedRun(agent, { runId: 'run-ask' });
  assert.equal(first.finished.outcome, 'interrupt', JSON.stringify(first.finished));
  assert.equal(agent.pendingInterrupts.length, 1);
  return agent;
}

/** Resumes the interrupt through `url`; checks the run went on and wrote the file in `dir`. */
async function resumeAndCheck(agent, url, dir) {
  agent.url = `${url}/ag-ui`;
  const [interrupt] = agent.pendingInterrupts;
  const resume = buildResumeArray(agent.pendingInterrupts, {
    [interrupt.id]: { status: 'resolved', payload: { approved: true } },
  });
  const second = await checkedRun(agent, { runId: 'run-resume', resume });
  assert.equal(second.finished.outcome, 'success', JSON.stringify(second.finished));
  assert.deepEqual(agent.pendingInterrupts, []);
  const results = agent.messages.filter((message) => message.role === 'tool' && message.toolCallId === interrupt.toolCallId);
  assert.equal(results.length, 1, JSON.stringify(agent.messages));
  assert.equal(agent.messages.at(-1).content, 'Done.');
  assert.equal(readFileSync(path.join(dir, 'ws', FILE.path), 'utf8'), FILE.content);
}

describe('AG-UI HttpAgent: an interrupt resumed elsewhere', () => {
  test('after the server restarted', async () => {
    const first = await startAgentwire({ config, files, dirs: ['ws'] });
    const agent = await ask(first.url, 'thread-restart');
    await first.stop({ keep: true });
    const second = await startAgentwire({ config, dir: first.dir });
    try {
      await resumeAndCheck(agent, second.url, second.dir);
    } finally {
      await second.stop();
    }
  });

  for (const killed of [false, true]) {
    const title = killed ? 'through another node, the first killed' : 'through another node';
    test(title, { skip: !POSTGRES && 'AGENTWIRE_TEST_DATABASE_URL is not set' }, async () => {
      const databaseUrl = postgresSchemaUrl();
      const a = await startAgentwire({ config, files, dirs: ['ws'], databaseUrl });
      const b = await startAgentwire({ config, dir: a.dir, databaseUrl });
      try {
        const agent = await ask(a.url, `thread-nodes-${killed}-${Date.now()}`);
        if (killed) await a.kill();
        await resumeAndCheck(agent, b.url, a.dir);
      } finally {
        await b.stop({ keep: true });
        await a.stop();
      }
    });
  }
});
