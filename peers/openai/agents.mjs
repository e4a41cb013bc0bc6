// The scripted agents the npm client runs against (../openai-python/test_serve.py has the same
// ones): a talker that reasons and answers, an asker that calls the client's `get_weather`, a
// writer that calls its own `write_file`, a slow one for background runs and cancels.

export const ANSWER = ['Hello ', 'from ', 'agentwire.'];
export const WEATHER_ARGS = { city: 'Paris' };
export const FILE = { path: 'notes/openai.txt', content: 'written by the agent' };

const finish = { type: 'finish', reason: 'stop', usage: { input_tokens: 3, output_tokens: 4 } };

export const scripts = {
  'talker.json': {
    turns: [[{ type: 'reasoning_delta', text: 'The user says hello.' }, ...ANSWER.map((text) => ({ type: 'text_delta', text })), finish]],
  },
  'asker.json': {
    turns: [
      [
        { type: 'text_delta', text: 'Let me look.' },
        { type: 'tool_call_start', id: 'call_w1', name: 'get_weather' },
        { type: 'tool_call_delta', id: 'call_w1', args: '{"city":' },
        { type: 'tool_call_delta', id: 'call_w1', args: '"Paris"}' },
        { type: 'tool_call_end', id: 'call_w1' },
        { type: 'finish', reason: 'tool_calls' },
      ],
      [{ type: 'text_delta', text: 'It is sunny in Paris.' }, finish],
    ],
  },
  'writer.json': {
    turns: [
      [
        { type: 'tool_call_start', id: 'call_f1', name: 'write_file' },
        { type: 'tool_call_delta', id: 'call_f1', args: JSON.stringify(FILE) },
        { type: 'tool_call_end', id: 'call_f1' },
        { type: 'finish', reason: 'tool_calls' },
      ],
      [{ type: 'text_delta', text: 'Written.' }, finish],
    ],
  },
  'slow.json': {
    turns: [[...Array.from({ length: 40 }, (_, i) => ({ type: 'text_delta', text: `w${i} ` })), finish]],
  },
};

export const config = `
[[agents]]
name = "talker"
provider = "scripted"
script = "talker.json"

[[agents]]
name = "asker"
provider = "scripted"
script = "asker.json"
tools = []
schema = "function_calling"

[[agents]]
name = "writer"
provider = "scripted"
script = "writer.json"
tools = ["write_file"]
workspace = "ws"

[[agents]]
name = "slow"
provider = "scripted"
script = "slow.json"
tokens_per_second = 10.0
`;

export const weatherTool = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};
