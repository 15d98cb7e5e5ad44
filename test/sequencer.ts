/**
 * The order test files start in: vitest's own (longest recorded duration
 * first, so the short files even out the end on both workers), except that
 * files whose cost is paid while they are imported go first. A file's
 * recorded duration leaves out its import, so those sorted last and ran alone
 * at the very end while the other worker had nothing left to do.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Files that do their work at import (import-graph.test.ts: loading TypeScript and scanning every host source, ~1-2 s). */
const HEAVY_AT_IMPORT = ['test/import-graph.test.ts'];

export class ImportCostFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const heavy = (spec: TestSpecification): boolean => HEAVY_AT_IMPORT.some((file) => spec.moduleId.endsWith(file));
    return [...sorted.filter(heavy), ...sorted.filter((spec) => !heavy(spec))];
  }
}
