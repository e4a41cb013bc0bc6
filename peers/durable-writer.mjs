// The agent of the peers' durable tests (`test/durable.test.mjs`): `writer` asks to write a
// note with `write_file`, which needs a person's approval, then says "Done."; a 2 s lease, so
// a killed node's runs are taken over soon. Start it with `startAgentwire({ config, files,
// dirs: ['ws'] })`; the note lands in `ws/` of the server's directory.

export const FILE = { path: 'notes/durable.txt', content: 'written after approval' };
export const files = {
  'writer.json': {
    turns: [
      [
        { type: 'text_delta', text: 'Let me write it.' },
        { type: 'tool_call_start', id: 'c1', name: 'write_file' },
        { type: 'tool_call_delta', id: 'c1', args: JSON.stringify(FILE) },
        { type: 'tool_call_end', id: 'c1' },
        { type: 'finish', reason: 'tool_calls' },
      ],
      [
        { type: 'text_delta', text: 'Done.' },
        { type: 'finish', reason: 'stop' },
      ],
    ],
  },
};

export const config = `
[server]
lease_seconds = 2

[[agents]]
name = "writer"
provider = "scripted"
script = "writer.json"
tools = ["write_file"]
approval = ["write_file"]
workspace = "ws"
`;
