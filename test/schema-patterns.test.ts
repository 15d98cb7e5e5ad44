/**
 * A tool's input schema cannot stall the host (issue 11, "Found" 9): patterns
 * run on a linear-time engine, so a catastrophic one answers at once and other
 * calls are not delayed; a pattern that needs backtracking fails registration.
 * (With RegExp, the first test's 41 characters would take ~2^40 steps.)
 */
import { describe, expect, it } from 'vitest';
import { createRegistry, defineNativeTool, silentLogger } from '../host/index.js';
import { SchemaCompiler, toRe2Syntax } from '../host/core/schema.js';
import { MemoryAuditLog } from '../host/policy/memory-audit-log.js';

const catastrophic = defineNativeTool({
  name: 'catastrophic',
  description: 'A schema with a catastrophic pattern.',
  inputSchema: {
    type: 'object',
    properties: { s: { type: 'string', pattern: '^(a+)+$' }, t: { type: 'string', pattern: '^(\\w+\\s?)*$' } },
    patternProperties: { '^(x+x+)+y$': { type: 'string' } },
  },
  run: () => ({ ok: true }),
});
const honest = defineNativeTool({ name: 'honest', description: 'Answers.', inputSchema: { type: 'object' }, run: () => ({ ok: true }) });

describe('schema patterns', () => {
  it('answers a catastrophic pattern on a hostile input at once, and other calls beside it run', async () => {
    const registry = createRegistry({ logger: silentLogger, audit: new MemoryAuditLog() });
    registry.register(catastrophic);
    registry.register(honest);
    try {
      const hostile = `${'a'.repeat(40)}b`;
      const sentence = `${'An ordinary sentence with words '.repeat(8)}!`;
      // A refused call rejects `execute`: settle each into its error or its value.
      const settle = (name: string, args: Record<string, unknown>): Promise<unknown> =>
        registry.execute(name, args).then((result) => result.error ?? result.structuredContent, (error: { code: string; message: string }) => ({ code: error.code, message: error.message }));
      const [one, two, three, other] = await Promise.all([
        settle('catastrophic', { s: hostile }),
        settle('catastrophic', { t: sentence }),
        settle('catastrophic', { [`${'x'.repeat(40)}`]: 'v' }),
        settle('honest', {}),
      ]);
      expect(one).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('must match pattern') });
      expect(two).toMatchObject({ code: 'INVALID_INPUT' });
      expect(three).toEqual({ ok: true });
      expect(other).toEqual({ ok: true });
      expect((await registry.execute('catastrophic', { s: 'aaaa', t: 'two words' })).structuredContent).toEqual({ ok: true });
    } finally {
      await registry.close();
    }
  });

  it('refuses at registration a pattern that needs backtracking (lookaround, backreferences) with INVALID_INPUT', () => {
    const compiler = new SchemaCompiler();
    expect(() => compiler.compile('t', { type: 'string', pattern: '^(?!admin).*$' })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT', message: expect.stringContaining('linear time') }));
    expect(() => compiler.compile('t', { type: 'string', pattern: '(a)\\1' })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
  });

  it('keeps the ECMAScript escapes schemas use', () => {
    const validator = new SchemaCompiler().compile('t', { type: 'string', pattern: '^[\\u00e0-\\u00ff]+\\d{2}$' });
    expect(validator.check('\u00e9\u00e012')).toBeUndefined();
    expect(validator.check('e12')?.code).toBe('INVALID_INPUT');
    expect(toRe2Syntax('\\\\u0041 \\u{1F600}')).toBe('\\\\u0041 \\x{1F600}');
  });
});
