/**
 * The example tools on embedded defaults: each example component with the
 * grant and default policy it needs, and nothing more. Components given with
 * `--load` get no grant (DENY_ALL, MINIMAL) until the config file says otherwise.
 */
import type { WasmLoadOptions } from '../core/registry.js';

export const EXAMPLE_LOAD_OPTIONS: Readonly<Record<string, WasmLoadOptions>> = {
  // read_file / list_dir: the worktree, read-only, and nothing else.
  files: {
    grant: { privilege: 'DEFAULT' },
    defaultPolicy: { privilege_level: 'DEFAULT', worktree_required: true },
  },
  // http_get: no network unless a call asks for it (up to public addresses only).
  net: {
    grant: { network: 'EGRESS_UNRESTRICTED' },
    defaultPolicy: { network_policy: 'DENY_ALL' },
  },
};
