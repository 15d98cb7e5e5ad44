/**
 * The resumable-stream tests' tool: two progress steps, then it waits until the test releases it, a third step,
 * then its result, so that a test can drop and resume a stream between the steps.
 */
import { defineNativeTool, type Tool } from '../host/index.js';

/** The tool; `held` gets, at each call, the function that lets that call go on. */
export function threeStepsTool(held: (release: () => void) => void): Tool {
  return defineNativeTool({
    name: 'three_steps',
    description: 'Two steps, waits to be released, a third, then its result.',
    inputSchema: { type: 'object' },
    streaming: true,
    run: async (_args, _ctx, events) => {
      events.progress(10, 'one');
      events.progress(20, 'two');
      await new Promise<void>((resolve) => held(resolve));
      events.progress(30, 'three');
      return { steps: 3 };
    },
  });
}
