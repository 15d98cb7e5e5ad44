// Component `conformance`: the tools, prompts and resources the official MCP
// conformance suite (@modelcontextprotocol/conformance, server scenarios)
// calls, as a sandboxed toolhost component.
//
// Built with componentize-js against wit/v0.3/tool.wit, world `mcp-provider`
// (tools with MCP content items, `sample`, `elicit` and keyed rounds of
// requests (`ask`) through the calling client, prompts and resources), with
// the JS toolkit's errors. Served by
// `toolhost serve --config conformance.yaml`; run the suite with
// `npm run conformance` (scripts/conformance.mjs).

import { ask as askRound, elicit, log, progress, sample } from 'toolhost:tool/host@0.3.0';
import { content, defineMcpComponent, mcpResult } from '../js-sdk/mcp.js';
import { hostCall, parseArgs, requireString, toolError } from '../js-sdk/toolkit.js';

// A 1x1 red PNG and a minimal WAV (a RIFF header with no samples).
const PNG = base64Bytes('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==');
const WAV = base64Bytes('UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=');

function base64Bytes(text) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const clean = text.replace(/=+$/, '');
  const out = new Uint8Array(Math.floor((clean.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let index = 0;
  for (const char of clean) {
    value = (value << 6) | alphabet.indexOf(char);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[index++] = (value >> bits) & 0xff;
    }
  }
  return out;
}

/** Busy-wait: a guest has no timer, and the suite wants notifications spread over time. */
function pause(ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) { /* wait */ }
}

const { text, image } = content;
const embedded = content.resource;
const output = (items) => mcpResult(items);

const EMPTY = { type: 'object', properties: {} };

const TOOLS = {
  test_simple_text: { description: 'Returns simple text.', run: () => output([text('This is a simple text response for testing.')]) },
  test_image_content: { description: 'Returns an image.', run: () => output([image(PNG, 'image/png')]) },
  test_audio_content: { description: 'Returns audio.', run: () => output([content.audio(WAV, 'audio/wav')]) },
  test_embedded_resource: {
    description: 'Returns an embedded resource.',
    run: () => output([embedded('test://embedded-resource', 'text/plain', 'This is an embedded resource content.')]),
  },
  test_multiple_content_types: {
    description: 'Returns text, an image and a resource.',
    run: () => output([text('Multiple content types test:'), image(PNG, 'image/png'), embedded('test://mixed-content-resource', 'application/json', '{"test":"data","value":123}')]),
  },
  test_logging_tool: {
    description: 'Logs one message: a client that sent no log level must not receive it (2026-07-28).',
    run: () => {
      log('info', 'test_logging_tool ran');
      return output([text('Logging tool executed')]);
    },
  },
  test_tool_with_logging: {
    description: 'Logs three messages while it runs.',
    run: () => {
      log('info', 'Tool execution started');
      pause(50);
      log('info', 'Tool processing data');
      pause(50);
      log('info', 'Tool execution completed');
      return output([text('Tool with logging executed successfully')]);
    },
  },
  test_error_handling: {
    description: 'Always fails.',
    run: () => {
      throw toolError('TEST_ERROR', 'This tool intentionally returns an error for testing');
    },
  },
  test_tool_with_progress: {
    description: 'Reports progress 0, 50 and 100.',
    run: () => {
      progress(0, undefined);
      pause(50);
      progress(50, undefined);
      pause(50);
      progress(100, undefined);
      return output([text('Tool with progress executed successfully')]);
    },
  },
  test_sampling: {
    description: 'Asks the client\'s model.',
    inputSchema: { type: 'object', properties: { prompt: { type: 'string', description: 'The prompt to send to the LLM' } }, required: ['prompt'] },
    run: (args) => {
      const prompt = requireString(args, 'prompt');
      const answer = ask(() => sample({ messages: [{ role: 'user', content: text(prompt) }], systemPrompt: undefined, maxTokens: 100, temperature: undefined, stopSequences: [], modelPreferences: undefined }));
      return output([text(`LLM response: ${answer.content.tag === 'text' ? answer.content.val : `[${answer.content.tag}]`}`)]);
    },
  },
  test_elicitation: {
    description: 'Asks the client\'s user.',
    inputSchema: { type: 'object', properties: { message: { type: 'string', description: 'The message to show the user' } }, required: ['message'] },
    run: (args) => {
      const schema = {
        type: 'object',
        properties: { username: { type: 'string', description: 'User\'s response' }, email: { type: 'string', description: 'User\'s email address' } },
        required: ['username', 'email'],
      };
      const answer = ask(() => elicit(requireString(args, 'message'), JSON.stringify(schema)));
      return output([text(`User response: action=${answer.action}, content=${answer.content ?? '{}'}`)]);
    },
  },
  test_elicitation_sep1034_defaults: {
    description: 'Asks with defaults for every primitive type (SEP-1034).',
    run: () => {
      const schema = {
        type: 'object',
        properties: {
          name: { type: 'string', description: 'User name', default: 'John Doe' },
          age: { type: 'integer', description: 'User age', default: 30 },
          score: { type: 'number', description: 'User score', default: 95.5 },
          status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
          verified: { type: 'boolean', description: 'Verification status', default: true },
        },
        required: [],
      };
      const answer = ask(() => elicit('Please review and update the form fields with defaults', JSON.stringify(schema)));
      return output([text(`Elicitation completed: action=${answer.action}, content=${answer.content ?? '{}'}`)]);
    },
  },
  test_elicitation_sep1330_enums: {
    description: 'Asks with every enum form (SEP-1330).',
    run: () => {
      const schema = {
        type: 'object',
        properties: {
          untitledSingle: { type: 'string', description: 'Untitled single-select', enum: ['option1', 'option2', 'option3'] },
          titledSingle: { type: 'string', description: 'Titled single-select', oneOf: [{ const: 'value1', title: 'First Option' }, { const: 'value2', title: 'Second Option' }, { const: 'value3', title: 'Third Option' }] },
          legacyEnum: { type: 'string', description: 'Legacy titled enum', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
          untitledMulti: { type: 'array', description: 'Untitled multi-select', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
          titledMulti: { type: 'array', description: 'Titled multi-select', items: { anyOf: [{ const: 'value1', title: 'First Choice' }, { const: 'value2', title: 'Second Choice' }, { const: 'value3', title: 'Third Choice' }] } },
        },
        required: [],
      };
      const answer = ask(() => elicit('Please select options from the enum fields', JSON.stringify(schema)));
      return output([text(`Elicitation completed: action=${answer.action}, content=${answer.content ?? '{}'}`)]);
    },
  },
  // SEP-2322 (2026-07-28): a tool that asks its caller is parked by the host, which answers the request with an
  // input_required result; the client's retry carries the answer, and the guest resumes where it asked. On
  // 2025-11-25 the same host calls are server-to-client requests. The tools below ask through the same `sample`
  // and `elicit` host calls as test_sampling and test_elicitation: the protocol is the host's business.
  // The 0.3.0 world's `ask` names the requests: the suite answers them under the keys it expects.
  test_input_required_result_elicitation: {
    description: 'Asks the caller\'s name (elicitation, under the key user_name), then greets it.',
    run: () => {
      const [answer] = ask(() => askRound([{ key: 'user_name', request: elicitation('What is your name?', oneField('name', 'string')) }]));
      return output([text(`Hello, ${field(answer.response.val, 'name') ?? 'stranger'}!`)]);
    },
  },
  test_input_required_result_list_roots: {
    description: 'Asks which roots the client exposes (roots/list, under the key client_roots), then lists them.',
    run: () => {
      const [answer] = ask(() => askRound([{ key: 'client_roots', request: { tag: 'roots' } }]));
      return output([text(`roots: ${answer.response.val.map((root) => root.uri).join(', ') || '(none)'}`)]);
    },
  },
  test_input_required_result_multiple_inputs: {
    description: 'Asks three things in one round: the user\'s name, a greeting from the model, and the client\'s roots.',
    run: () => {
      const answers = ask(() => askRound([
        { key: 'user_name', request: elicitation('What is your name?', oneField('name', 'string')) },
        { key: 'greeting', request: { tag: 'sampling', val: samplingRequest('Generate a greeting', 50) } },
        { key: 'client_roots', request: { tag: 'roots' } },
      ]));
      const by = Object.fromEntries(answers.map((answer) => [answer.key, answer.response.val]));
      return output([text(`multiple-inputs-ok: name=${field(by.user_name, 'name') ?? '?'}, greeting=${samplingText(by.greeting)}, roots=${by.client_roots.length}`)]);
    },
  },
  test_input_required_result_sampling: {
    description: 'Asks the caller\'s model a question (sampling), then returns its answer.',
    run: () => output([text(`The model says: ${samplingText(ask(() => sample(samplingRequest('What is the capital of France?', 100))))}`)]),
  },
  test_input_required_result_request_state: {
    description: 'Asks for a confirmation; its result says state-ok once the retry reached the parked call.',
    run: () => {
      const answer = ask(() => elicit('Please confirm', JSON.stringify(oneField('ok', 'boolean'))));
      return output([text(`state-ok: action=${answer.action}, ok=${field(answer, 'ok')}`)]);
    },
  },
  test_input_required_result_multi_round: {
    description: 'Asks twice in a row (two rounds, each with its own requestState).',
    run: () => {
      const name = field(ask(() => elicit('Step 1: What is your name?', JSON.stringify(oneField('name', 'string')))), 'name');
      const color = field(ask(() => elicit('Step 2: What is your favorite color?', JSON.stringify(oneField('color', 'string')))), 'color');
      return output([text(`multi-round complete: ${name ?? '?'} likes ${color ?? '?'}`)]);
    },
  },
  test_input_required_result_tampered_state: {
    description: 'Asks for a confirmation: a retry with any other requestState than the one handed out is refused.',
    run: () => {
      const answer = ask(() => elicit('Please confirm', JSON.stringify(oneField('ok', 'boolean'))));
      return output([text(`confirmed: ${answer.action}`)]);
    },
  },
  test_input_required_result_capabilities: {
    description: 'Asks only for what the client declared: elicitation when it can, then sampling when it can.',
    run: () => {
      const received = [];
      const elicited = askIfDeclared(() => elicit('Elicitation input', JSON.stringify(oneField('value', 'string'))));
      if (elicited !== undefined) received.push('elicitation');
      const sampled = askIfDeclared(() => sample(samplingRequest('Sample request', 50)));
      if (sampled !== undefined) received.push('sampling');
      return output([text(received.length === 0 ? 'No supported capabilities declared' : `capabilities-ok: received ${received.join(',')}`)]);
    },
  },
  // SEP-2575 diagnostics (2026-07-28, stateless): a call that needs a capability its client did not declare ends
  // with MissingRequiredClientCapabilityError (-32021, HTTP 400), which the host answers when the host refused
  // the tool's request for that reason; a tool asking an able client answers input_required on its own request.
  test_missing_capability: {
    description: 'Needs the client\'s sampling capability (undeclared: -32021 on 2026-07-28).',
    run: () => output([text(`Success: ${samplingText(ask(() => sample(samplingRequest('Reply with anything', 10))))}`)]),
  },
  test_streaming_elicitation: {
    description: 'Reports progress, then asks the caller (its request\'s stream carries only notifications and the result).',
    run: () => {
      progress(50, 'asking');
      const answer = ask(() => elicit('Streaming elicitation test', JSON.stringify(oneField('confirm', 'boolean'))));
      return output([text(`Streaming complete: ${answer.action}`)]);
    },
  },
  // SEP-1699 (2025-11-25): the suite calls it on a POST SSE stream and checks the transport's priming event and
  // retry field; closing the stream mid-call and replaying the rest is the transport's (servers/mcp-legacy.ts).
  test_reconnection: {
    description: 'Runs for a moment, so the client may lose and resume its stream (SEP-1699), then answers.',
    run: () => {
      progress(0, 'started');
      pause(100);
      return output([text('Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.')]);
    },
  },
  json_schema_2020_12_tool: {
    description: 'Tool with JSON Schema 2020-12 features',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { address: { $anchor: 'address', type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false,
      // The suite's 2020-12 keywords (SEP-2106): composition, conditionals, an anchor; none narrows what is accepted.
      allOf: [{ anyOf: [{ required: ['name'] }, { type: 'object' }] }],
      if: { properties: { name: { const: 'anonymous' } }, required: ['name'] },
      then: { type: 'object' },
      else: { type: 'object' },
    },
    run: (args) => output([text(`JSON Schema 2020-12 tool called with ${JSON.stringify(args)}`)]),
  },
  // SEP-2243 (2026-07-28): `x-mcp-header` makes a 2026 client mirror the argument into an `Mcp-Param-Region`
  // header, which the host checks against the body before the call starts (HTTP 400, -32020 when they disagree).
  test_custom_header: {
    description: 'Echoes its region, which clients also send as the Mcp-Param-Region header.',
    inputSchema: { type: 'object', properties: { region: { type: 'string', description: 'Where to route the call', 'x-mcp-header': 'Region' } }, required: ['region'] },
    run: (args) => output([text(`region=${requireString(args, 'region')}`)]),
  },
};

/** A host call that returns a result: its error (the host's refusal) becomes this tool's error (the toolkit's hostCall). */
const ask = hostCall;

/** An elicitation schema of one required field. */
function oneField(name, type) {
  return { type: 'object', properties: { [name]: { type } }, required: [name] };
}

/** One field of an accepted elicitation's answer (undefined when declined or absent). */
/** An elicitation request of a round (form mode). */
function elicitation(message, schema) {
  return { tag: 'elicitation', val: { message, requestedSchema: JSON.stringify(schema) } };
}

function field(answer, name) {
  if (answer.action !== 'accept' || answer.content === undefined) return undefined;
  const value = JSON.parse(answer.content)[name];
  return value === undefined ? undefined : value;
}

function samplingRequest(prompt, maxTokens) {
  return { messages: [{ role: 'user', content: text(prompt) }], systemPrompt: undefined, maxTokens, temperature: undefined, stopSequences: [], modelPreferences: undefined };
}

function samplingText(answer) {
  return answer.content.tag === 'text' ? answer.content.val : `[${answer.content.tag}]`;
}

/** A request the caller may not be able to answer: undefined when the client did not declare the capability. */
function askIfDeclared(request) {
  try {
    return hostCall(request);
  } catch (e) {
    if (e && e.code === 'CLIENT_UNSUPPORTED') return undefined;
    throw e;
  }
}

export const tool = defineMcpComponent('conformance', Object.entries(TOOLS).map(([name, spec]) => ({
  name,
  description: spec.description,
  inputSchema: spec.inputSchema ?? EMPTY,
  run: (argsText) => spec.run(parseArgs(argsText)),
})));

const PROMPTS = [
  { name: 'test_simple_prompt', title: undefined, description: 'A simple prompt without arguments', arguments: [] },
  {
    name: 'test_prompt_with_arguments',
    title: undefined,
    description: 'A prompt with arguments',
    arguments: [{ name: 'arg1', description: 'First test argument', required: true }, { name: 'arg2', description: 'Second test argument', required: true }],
  },
  { name: 'test_prompt_with_embedded_resource', title: undefined, description: 'A prompt with an embedded resource', arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }] },
  { name: 'test_prompt_with_image', title: undefined, description: 'A prompt with an image', arguments: [] },
  // SEP-2322 on a request that is not a tool call: the prompt asks its caller, as a tool does (parked on 2026-07-28).
  { name: 'test_input_required_result_prompt', title: undefined, description: 'Asks the caller for context (elicitation), then returns a prompt with it', arguments: [] },
];

export const prompts = {
  listPrompts() {
    return PROMPTS;
  },
  getPrompt(name, pairs) {
    const args = Object.fromEntries(pairs);
    const user = (content) => ({ role: 'user', content });
    switch (name) {
      case 'test_simple_prompt':
        return { description: undefined, messages: [user(text('This is a simple prompt for testing.'))] };
      case 'test_prompt_with_arguments':
        return { description: undefined, messages: [user(text(`Prompt with arguments: arg1='${args.arg1 ?? ''}', arg2='${args.arg2 ?? ''}'`))] };
      case 'test_prompt_with_embedded_resource':
        return { description: undefined, messages: [user(embedded(args.resourceUri ?? 'test://example-resource', 'text/plain', 'Embedded resource content for testing.')), user(text('Please process the embedded resource above.'))] };
      case 'test_prompt_with_image':
        return { description: undefined, messages: [user(image(PNG, 'image/png')), user(text('Please analyze the image above.'))] };
      case 'test_input_required_result_prompt': {
        const answer = ask(() => elicit('What context should the prompt use?', JSON.stringify(oneField('context', 'string'))));
        return { description: undefined, messages: [user(text(`Prompt with context: ${field(answer, 'context') ?? 'none'}`))] };
      }
      default:
        throw toolError('UNKNOWN_PROMPT', `no prompt named "${name}"`);
    }
  },
  completeArgument(_prompt, _argument, value) {
    return ['paris', 'park', 'party'].filter((candidate) => candidate.startsWith(value));
  },
};

const RESOURCES = [
  { uri: 'test://static-text', name: 'static-text', title: undefined, description: 'A static text resource', mimeType: 'text/plain' },
  { uri: 'test://static-binary', name: 'static-binary', title: undefined, description: 'A static binary resource (a PNG)', mimeType: 'image/png' },
  { uri: 'test://watched-resource', name: 'watched-resource', title: undefined, description: 'A resource clients may subscribe to', mimeType: 'text/plain' },
];

export const resources = {
  listResources() {
    return RESOURCES;
  },
  listTemplates() {
    return [{ uriTemplate: 'test://template/{id}/data', name: 'template-data', title: undefined, description: 'Data by id', mimeType: 'application/json' }];
  },
  readResource(uri) {
    if (uri === 'test://static-text') return [{ uri, mimeType: 'text/plain', body: { tag: 'text', val: 'This is the content of the static text resource.' } }];
    if (uri === 'test://static-binary') return [{ uri, mimeType: 'image/png', body: { tag: 'blob', val: PNG } }];
    if (uri === 'test://watched-resource') return [{ uri, mimeType: 'text/plain', body: { tag: 'text', val: 'Watched resource content.' } }];
    const match = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
    if (match) return [{ uri, mimeType: 'application/json', body: { tag: 'text', val: JSON.stringify({ id: match[1], templateTest: true, data: `Data for ID: ${match[1]}` }) } }];
    throw toolError('NOT_FOUND', `no resource ${uri}`);
  },
  completeTemplate(_template, _variable, value) {
    return ['1', '2', '3', '123'].filter((candidate) => candidate.startsWith(value));
  },
};
