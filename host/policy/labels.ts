/** The label vocabularies of ExecutionPolicy (sw4rm's ToolService), least to most permissive. */

export const NETWORK_LABELS = ['DENY_ALL', 'EGRESS_RESTRICTED', 'EGRESS_UNRESTRICTED', 'FULL_ACCESS'] as const;
export type NetworkLabel = (typeof NETWORK_LABELS)[number];

export const PRIVILEGE_LABELS = ['MINIMAL', 'DEFAULT', 'ELEVATED', 'PRIVILEGED'] as const;
export type PrivilegeLabel = (typeof PRIVILEGE_LABELS)[number];

/** Parse a label case-insensitively; `undefined` when it is not in the vocabulary. */
export function parseLabel<L extends string>(vocabulary: readonly L[], value: string): L | undefined {
  const upper = value.trim().toUpperCase();
  return vocabulary.find((label) => label === upper);
}

/** Rank of a label in its vocabulary (higher = more permissive). */
export function labelRank<L extends string>(vocabulary: readonly L[], label: L): number {
  return vocabulary.indexOf(label);
}

/**
 * The most a caller may ask for, whatever the tool's grant allows: an
 * authenticated server client's token scopes map to one (servers/auth). A
 * label left out is not capped by the caller; the grant still caps it.
 */
export interface LabelCeiling {
  network?: NetworkLabel;
  privilege?: PrivilegeLabel;
  /** What the ceiling comes from, named in refusals (e.g. `the token's scopes (tools:read)`). */
  source?: string;
}
