/**
 * Names for a load's tools: a tool keeps its own name unless it is taken
 * (by a registered tool, or an earlier tool of the same load); then it is
 * `<component>.<tool>`, and reported. Collisions are never silent, and a
 * namespaced name that is taken too fails the whole load.
 */
import { ToolhostError } from '../base/errors.js';
import type { LoadedComponentTools, WasmLoadReport } from './registry-types.js';
import type { Tool } from './tool.js';

export interface ComponentNamePlan {
  /** Each tool under the name it will be registered as. */
  plan: Array<{ name: string; tool: Tool }>;
  report: WasmLoadReport;
}

export function planComponentNames(loaded: readonly LoadedComponentTools[], taken: Set<string>): ComponentNamePlan {
  const plan: ComponentNamePlan['plan'] = [];
  const report: WasmLoadReport = { components: [], renamed: [] };
  for (const component of loaded) {
    const names: string[] = [];
    for (const tool of component.tools) {
      let name = tool.name;
      if (taken.has(name)) {
        name = `${component.component}.${tool.name}`;
        if (taken.has(name)) {
          throw new ToolhostError('COMPONENT_INVALID', `component "${component.component}": tool "${tool.name}" collides with "${name}", which is already registered`);
        }
        report.renamed.push({ component: component.component, tool: tool.name, registeredAs: name });
      }
      taken.add(name);
      names.push(name);
      plan.push({ name, tool: name === tool.name ? tool : { ...tool, name, invoke: tool.invoke.bind(tool) } });
    }
    const { tools: _tools, ...rest } = component;
    report.components.push({ ...rest, tools: names });
  }
  return { plan, report };
}

/** Up to three of `names` that look like `name` (for TOOL_NOT_FOUND's suggestions). */
export function similarNames(names: readonly string[], name: string): string[] {
  const wanted = name.toLowerCase();
  return names.filter((candidate) => {
    const lower = candidate.toLowerCase();
    return lower.endsWith(`.${wanted}`) || lower.includes(wanted) || (wanted.length > 3 && wanted.includes(lower));
  }).slice(0, 3);
}
