// The `Chat` of `useChat` without a framework, for the tests: `ai` exports only AbstractChat,
// which needs a state store; this is the plain one, and a Chat that counts the requests it
// finished so a test can wait for the automatic sends an app relies on.

import assert from 'node:assert/strict';
import { AbstractChat } from 'ai';

/** The framework-free store a Chat needs. */
export class PlainChatState {
  constructor() {
    this.status = 'ready';
    this.error = undefined;
    this.messages = [];
  }
  pushMessage = (message) => {
    this.messages = this.messages.concat(structuredClone(message));
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index, message) => {
    this.messages = [...this.messages.slice(0, index), structuredClone(message), ...this.messages.slice(index + 1)];
  };
  snapshot = (thing) => structuredClone(thing);
}

/** A Chat as `useChat` makes one (`init` as AbstractChat takes it), counting finished requests. */
export class Chat extends AbstractChat {
  constructor(init) {
    super({
      ...init,
      state: new PlainChatState(),
      onFinish: () => {
        this.finished++;
      },
    });
    this.finished = 0;
  }

  /** Waits until `n` requests have finished and the chat is idle again. */
  async settled(n) {
    const deadline = Date.now() + 15_000;
    while (!(this.finished >= n && (this.status === 'ready' || this.status === 'error'))) {
      if (this.status === 'error') break;
      assert.ok(Date.now() < deadline, `chat still ${this.status} after ${this.finished} of ${n} requests`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}
