/**
 * The limits on what a tool's JSON Schemas may make the main thread do: their
 * defaults, and the check of a caller's values. What each limit bounds is in
 * `schema-cost.ts` (registration) and `schema.ts` (each call); the config keys
 * are `host.guest_limits.schema_*`, `args_depth` and `validation_steps`.
 */

/** Limits on a schema (checked at registration) and on validating args against it (checked per call). */
export interface SchemaLimits {
  /** JSON values in one schema, every object counted each time it occurs (`schema_nodes`). */
  nodes: number;
  /** Levels a schema document may nest (`schema_depth`). */
  depth: number;
  /**
   * Schema checks that may apply to one value of the args, every `$ref`, `allOf`/`anyOf`/`oneOf`, `if`
   * and `not` expanded, an `enum` counting its values (`schema_fanout`).
   */
  fanout: number;
  /** Values of one `enum` (`schema_enum_values`). */
  enumValues: number;
  /** Characters of all the `pattern`s and `patternProperties` of one schema (`schema_pattern_chars`). */
  patternChars: number;
  /** Instructions of all of a schema's patterns compiled for RE2, bounded from their text (`{n,m}` repeats multiply it) (`schema_pattern_program`). */
  patternProgram: number;
  /** Levels a call's args may nest; checked before validation (`args_depth`). */
  argsDepth: number;
  /**
   * Work one validation may do: each value of the args, plus each schema check applied to it, plus each
   * pattern instruction times the characters it is run on (`validation_steps`).
   */
  validationSteps: number;
  /**
   * Wall time one task of the schema lane may take (compiling an imported MCP tool's schema, or checking a
   * call's args against it), in ms; past it the lane's worker is replaced (`schema_lane_ms`, see schema-lane.ts).
   */
  laneMs: number;
}

/** Sized so that the costliest schema and args within them stall the main thread for well under 50 ms. */
export const DEFAULT_SCHEMA_LIMITS: Readonly<SchemaLimits> = Object.freeze({
  nodes: 10_000,
  depth: 64,
  fanout: 2_000,
  enumValues: 1_000,
  patternChars: 10_000,
  patternProgram: 2_000,
  argsDepth: 256,
  validationSteps: 250_000,
  laneMs: 1_000,
});

/** The config key of each limit (what `registry.onLimitHit` reports). */
export const SCHEMA_LIMIT_KEYS: Readonly<Record<keyof SchemaLimits, string>> = Object.freeze({
  nodes: 'schema_nodes',
  depth: 'schema_depth',
  fanout: 'schema_fanout',
  enumValues: 'schema_enum_values',
  patternChars: 'schema_pattern_chars',
  patternProgram: 'schema_pattern_program',
  argsDepth: 'args_depth',
  validationSteps: 'validation_steps',
  laneMs: 'schema_lane_ms',
});

/** `limits` over the defaults, checked: each must be a positive integer. */
export function resolveSchemaLimits(limits: Partial<SchemaLimits> = {}): SchemaLimits {
  const resolved = { ...DEFAULT_SCHEMA_LIMITS, ...limits };
  for (const key of Object.keys(DEFAULT_SCHEMA_LIMITS) as Array<keyof SchemaLimits>) {
    if (!Number.isInteger(resolved[key]) || resolved[key] < 1) throw new TypeError(`options.schemaLimits.${key} must be a positive integer`);
  }
  return resolved;
}
