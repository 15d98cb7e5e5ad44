/** Where the files a tool build needs live inside the installed toolhost package. */
import { join } from 'node:path';
import { examplesDir, packageRoot } from '../config/package-root.js';

/** The tool world (`toolhost:tool@0.1.0`), shipped in the package. */
export function worldWitPath(): string {
  return join(packageRoot(), 'wit', 'tool.wit');
}

/** The 0.2.0 tool world (`toolhost:tool@0.2.0`: MCP content, metadata, sample and elicit), shipped in the package. */
export function worldV2WitPath(): string {
  return join(packageRoot(), 'wit', 'v0.2', 'tool.wit');
}

/** The 0.3.0 tool world (`toolhost:tool@0.3.0`: 0.2.0 plus `ask`, a keyed round of requests to the caller), shipped in the package. */
export function worldV3WitPath(): string {
  return join(packageRoot(), 'wit', 'v0.3', 'tool.wit');
}

/** The C SDK (`toolhost.h` and `toolhost.c`), shipped in the package and compiled into every C tool. */
export function cSdkDir(): string {
  return join(packageRoot(), 'guest-tools', 'c', 'sdk');
}

/** The JS/TS guest toolkit (`toolhost/guest`), shipped in the package. */
export function jsToolkitPath(): string {
  return join(packageRoot(), 'guest-tools', 'js-sdk', 'toolkit.js');
}

/** The JS/TS toolkit of the 0.2.0 world (`toolhost/guest/mcp`: defineMcpComponent), shipped in the package. */
export function jsMcpToolkitPath(): string {
  return join(packageRoot(), 'guest-tools', 'js-sdk', 'mcp.js');
}

/**
 * The installed example tools (`text`, `json`, `ctools`, `files`, `net`), or
 * undefined when none are built. Pass it to `registerWasmTools`.
 */
export function exampleToolsDir(): string | undefined {
  return examplesDir();
}
