/** Why a tool build failed: reported by `toolhost build` as one message, with exit status 1. */
export type BuildFailure =
  /** A compiler or packager the build needs is not installed (the message says how to install it). */
  | 'TOOLCHAIN_MISSING'
  /** The project's layout is not one `toolhost build` knows (no entry source, two languages, bad package.json). */
  | 'PROJECT_INVALID'
  /** The compiler or componentize-js refused the sources. */
  | 'COMPILE_FAILED'
  /** The component was built but does not fit the tool world (exports, imports, describe()). */
  | 'CHECK_FAILED';

export class BuildError extends Error {
  readonly kind: BuildFailure;

  constructor(kind: BuildFailure, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BuildError';
    this.kind = kind;
  }
}
