/** `toolhost inspect`: what a component is, without registering it anywhere. */
import { ToolhostError } from '../base/errors.js';
import { silentLogger } from '../base/logger.js';
import { sourceFromFile } from '../sandbox/load/component-file.js';
import { SandboxLoader } from '../sandbox/loader.js';

export interface InspectReport {
  path: string;
  id: string;
  wit: string;
  tools: Array<{ name: string; description: string; inputSchema: unknown; outputSchema?: unknown; idempotent: boolean; streaming: boolean }>;
}

export async function inspectComponent(path: string): Promise<InspectReport> {
  const source = await sourceFromFile(path);
  // jco loads only for a file that is a component at all (~65 ms of CPU).
  const { componentWit } = await import('@bytecodealliance/jco');
  let wit: string;
  try {
    wit = await componentWit(source.bytes);
  } catch (error) {
    throw new ToolhostError('COMPONENT_INVALID', `"${path}" is not a valid component: ${String((error as Error).message ?? error).split('\n')[0]}`);
  }
  // describe() is guest code: it runs in a sandbox worker, like any call.
  const loader = new SandboxLoader({ threads: 1 }, silentLogger);
  try {
    const loaded = await loader.loadSource(source);
    return {
      path: source.path ?? path,
      id: source.id,
      wit,
      tools: loaded.tools.map((tool) => ({
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema,
        ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
        idempotent: tool.idempotent,
        streaming: tool.streaming,
      })),
    };
  } finally {
    await loader.close();
  }
}
