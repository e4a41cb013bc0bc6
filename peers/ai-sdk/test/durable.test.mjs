// The real AI SDK `Chat` answering an approval somewhere other than where it was asked: after
// the server restarted (the run waited in its SQLite store), and through a second node on one
// PostgreSQL (AGENTWIRE_TEST_DATABASE_URL; skipped without it) while the first still runs it,
// and after the first was killed. Each time the SDK sends the answer by itself and the run goes
// on in the same assistant message: the tool writes its file once, and the model's last words
// follow.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';
import { Chat } from '../chat.mjs';
import { postgresSchemaUrl, startAgentwire } from '../../agentwire-server.mjs';
import { FILE, config, files } from '../../durable-writer.mjs';

const POSTGRES = process.env.AGENTWIRE_TEST_DATABASE_URL;

/** A Chat whose requests go to `server` (an object whose `url` the test changes, as a load
 * balancer would pick another node), sending the approval answer by itself. */
function chatOn(id, server) {
  const transport = new DefaultChatTransport({
    api: '/api/chat',
    fetch: (input, init) => fetch(new URL(String(input), server.url), init),
  });
  return new Chat({ id, transport, sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
}

/** Asks for the note; the approval the run waits for. */
async function ask(chat) {
  await chat.sendMessage({ text: 'Write the note' });
  assert.equal(chat.error, undefined, `chat error: ${chat.error?.message}`);
  const asked = chat.messages[1].parts.find((part) => part.type === 'tool-write_file');
  assert.equal(asked?.state, 'approval-requested', JSON.stringify(chat.messages[1].parts));
  return asked;
}

/** Approves it; checks the run went on in the same message and wrote the file in `dir`. */
async function approveAndCheck(chat, asked, dir) {
  const first = chat.messages[1];
  await chat.addToolApprovalResponse({ id: asked.approval.id, approved: true });
  await chat.settled(2);
  assert.equal(chat.error, undefined, `chat error: ${chat.error?.message}`);
  assert.equal(chat.messages.length, 2, 'the continuation extends the same assistant message');
  const message = chat.messages[1];
  assert.equal(message.id, first.id);
  const tool = message.parts.find((part) => part.type === 'tool-write_file');
  assert.equal(tool.state, 'output-available', JSON.stringify(tool));
  const texts = message.parts.filter((part) => part.type === 'text').map((part) => part.text);
  assert.deepEqual(texts, ['Let me write it.', 'Done.']);
  assert.equal(readFileSync(path.join(dir, 'ws', FILE.path), 'utf8'), FILE.content);
}

describe('AI SDK Chat: an approval answered elsewhere', () => {
  test('after the server restarted', async () => {
    const first = await startAgentwire({ config, files, dirs: ['ws'] });
    const target = { url: first.url };
    const chat = chatOn('chat-restart', target);
    const asked = await ask(chat);
    await first.stop({ keep: true });
    const second = await startAgentwire({ config, dir: first.dir });
    try {
      target.url = second.url;
      await approveAndCheck(chat, asked, second.dir);
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
        const target = { url: a.url };
        const chat = chatOn(`chat-nodes-${killed}-${Date.now()}`, target);
        const asked = await ask(chat);
        if (killed) await a.kill();
        target.url = b.url;
        await approveAndCheck(chat, asked, a.dir);
      } finally {
        await b.stop({ keep: true });
        await a.stop();
      }
    });
  }
});
