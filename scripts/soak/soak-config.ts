/**
 * The soak host's toolhost.yaml: the example tools and the hostile fixtures,
 * each with the grant its kinds need, a queue long enough for the soak's
 * concurrency (a full queue would fail honest calls OVERLOADED, which is
 * tested elsewhere), and a short cancel grace so a guest that ignores its
 * cancel is stopped soon. Everything else is the defaults `serve` runs with.
 */
import { join } from 'node:path';

/** `components`: assembled components (test/fixtures/wat/) loaded with the default grant. */
export function soakConfig(root: string, components: readonly string[], auditLog: string): string {
  const path = (...parts: string[]): string => JSON.stringify(join(root, ...parts));
  return `# Written by npm run soak (scripts/soak/soak-config.ts).
host:
  log_level: error
  cancel_grace_ms: 100
  pool:
    max_queue: 4096
  audit_log: ${JSON.stringify(auditLog)}
tools:
  - path: ${path('guest-tools', 'dist', 'ctools.wasm')}
    isolation: worker
    grant: { memory_mb: 16 }
  - path: ${path('guest-tools', 'dist', 'text.wasm')}
  - path: ${path('test', 'fixtures', 'dist', 'hostile.wasm')}
    grant: { memory_mb: 32 }
  - path: ${path('test', 'fixtures', 'dist', 'flood.wasm')}
  - path: ${path('test', 'fixtures', 'dist', 'http_flood.wasm')}
  - path: ${path('test', 'fixtures', 'dist', 'client_flood.wasm')}
  - path: ${path('test', 'fixtures', 'dist', 'schema_bomb.wasm')}
${components.map((file) => `  - path: ${JSON.stringify(file)}\n`).join('')}`;
}
