// The {{name}} tool component. Build it with `npm run build` (toolhost build),
// which bundles and componentizes this file into dist/{{name}}.wasm.
// The 0.2.0 tool world (package.json: "toolhost": { "world": "0.2.0" }): a title and annotations below;
// a tool may also return content items (mcpResult) and ask the client (sample, elicit).
import { cancelled, context, delta, getState, log, progress, setState } from 'toolhost:tool/host@0.2.0';
import { parseArgs, toolError } from 'toolhost/guest';
import { defineMcpComponent } from 'toolhost/guest/mcp';

const TOTAL_KEY = 'greetings.total';

export const tool = defineMcpComponent('{{name}}', [
  {
    name: '{{tool}}',
    title: 'Greeter',
    // What the author says; the host lists what the tool's grant allows (never safer than the grant).
    // Conversation state is the conversation's: the tool changes nothing outside it.
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    description: 'Greets someone `times` times, streaming each greeting; counts the greetings of the conversation.',
    inputSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, description: 'Who to greet.' },
        times: { type: 'integer', minimum: 1, maximum: 100, description: 'How many greetings (default 1).' },
      },
      required: ['name'],
      additionalProperties: false,
    },
    outputSchema: {
      type: 'object',
      properties: { greetings: { type: 'array', items: { type: 'string' } }, total: { type: 'integer' } },
      required: ['greetings', 'total'],
    },
    streaming: true,
    idempotent: false,
    run(argsText) {
      const { name, times = 1 } = parseArgs(argsText);
      if (name.trim() === '') throw toolError('EMPTY_NAME', 'name must not be blank');
      log('debug', `call ${context().callId} greets ${name}`);

      const greetings = [];
      for (let i = 1; i <= times; i += 1) {
        if (cancelled()) throw toolError('STOPPED', `stopped after ${i - 1} greetings`);
        const greeting = `Hello, ${name}!`;
        greetings.push(greeting);
        delta(JSON.stringify({ greeting, n: i }));
        progress((i / times) * 100, `${i} of ${times}`);
      }

      // Conversation state: JSON text, scoped to the caller's conversation id.
      const saved = getState(TOTAL_KEY);
      const total = (saved === undefined ? 0 : Number(JSON.parse(saved))) + times;
      setState(TOTAL_KEY, JSON.stringify(total));
      return { greetings, total };
    },
  },
]);
