/**
 * toolhost/authoring: build a tool project (C, JavaScript, TypeScript) into a
 * component, check a component against the tool world, start a new project.
 * What `toolhost init`, `build`, `dev` and `test` are built from.
 *
 * ```ts
 * import { buildProject } from 'toolhost/authoring';
 * const report = await buildProject('my-tool'); // writes dist/<name>.wasm
 * ```
 */
export { exampleToolsDir, cSdkDir, jsToolkitPath, worldWitPath } from './paths.js';
export { BuildError } from './errors.js';
export type { BuildFailure } from './errors.js';
export { buildProject, checkComponent, detectProject } from './project.js';
export type { BuildReport, ToolLanguage, ToolProject } from './project.js';
export { buildCComponent } from './c.js';
export type { CBuildOptions, CBuildResult } from './c.js';
export { buildJsComponent } from './js.js';
export type { JsBuildOptions, JsBuildResult } from './js.js';
export { initProject } from './scaffold.js';
export type { InitOptions, InitReport } from './scaffold.js';
