/**
 * The part of the WebAssembly JS API toolhost uses. TypeScript ships these
 * types only with the DOM libs, which do not describe Node.
 */
declare namespace WebAssembly {
  type ImportValue = unknown;
  type Imports = Record<string, Record<string, ImportValue>>;
  type Exports = Record<string, unknown>;

  class Module {
    constructor(bytes: ArrayBufferView | ArrayBuffer);
    static imports(module: Module): Array<{ module: string; name: string; kind: string }>;
    static exports(module: Module): Array<{ name: string; kind: string }>;
  }
  class Instance {
    constructor(module: Module, imports?: Imports);
    readonly exports: Exports;
  }
  class Memory {
    constructor(descriptor: { initial: number; maximum?: number; shared?: boolean });
    readonly buffer: ArrayBuffer;
    grow(delta: number): number;
  }
  class RuntimeError extends Error {}
  class CompileError extends Error {}
  class LinkError extends Error {}
  function compile(bytes: ArrayBufferView | ArrayBuffer): Promise<Module>;
  function validate(bytes: ArrayBufferView | ArrayBuffer): boolean;
}
