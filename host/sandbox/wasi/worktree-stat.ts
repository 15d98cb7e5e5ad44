/** fs stats as wasi:filesystem values, and wasi timestamps as `utimes` arguments. */
import type fs from 'node:fs';
import type { Datetime, DescriptorStat, DescriptorType, MetadataHashValue, NewTimestamp } from './shim.js';

export function typeOf(stats: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean; isFIFO(): boolean; isSocket(): boolean; isBlockDevice(): boolean; isCharacterDevice(): boolean }): DescriptorType {
  if (stats.isFile()) return 'regular-file';
  if (stats.isDirectory()) return 'directory';
  if (stats.isSymbolicLink()) return 'symbolic-link';
  if (stats.isFIFO()) return 'fifo';
  if (stats.isSocket()) return 'socket';
  if (stats.isBlockDevice()) return 'block-device';
  if (stats.isCharacterDevice()) return 'character-device';
  return 'unknown';
}

const NS = 1_000_000_000n;
const datetime = (ns: bigint): Datetime => ({ seconds: ns / NS, nanoseconds: Number(ns % NS) });

export function descriptorStat(stats: fs.BigIntStats): DescriptorStat {
  return {
    type: typeOf(stats),
    linkCount: stats.nlink,
    size: stats.size,
    dataAccessTimestamp: datetime(stats.atimeNs),
    dataModificationTimestamp: datetime(stats.mtimeNs),
    statusChangeTimestamp: datetime(stats.ctimeNs),
  };
}

export function metadataHashOf(stats: fs.BigIntStats): MetadataHashValue {
  return {
    upper: BigInt.asUintN(64, (stats.dev << 32n) ^ stats.ino),
    lower: BigInt.asUintN(64, stats.mtimeNs ^ (stats.ctimeNs << 1n) ^ (stats.size << 17n)),
  };
}

/** A timestamp for utimes, in seconds; `current` (ns) when the guest asks for no change. */
export function timeFor(requested: NewTimestamp, current: bigint): number {
  switch (requested.tag) {
    case 'no-change':
      return Number(current) / 1e9;
    case 'now':
      return Date.now() / 1000;
    case 'timestamp':
      return Number(requested.val.seconds) + requested.val.nanoseconds / 1e9;
  }
}
