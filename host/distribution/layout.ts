/**
 * The CNCF Wasm OCI artifact layout, and the shape checks a fetched manifest
 * must pass before any blob it names is fetched: an OCI image manifest whose
 * config is `application/vnd.wasm.config.v0+json` and whose one layer is a
 * component (`application/wasm`, or one of the component layer types Wassette
 * accepts). Also the cosign signature manifest's shape. Pure functions on
 * parsed JSON: no I/O.
 */
import { integrity } from './errors.js';

export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
export const OCI_EMPTY = 'application/vnd.oci.empty.v1+json';
export const DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json';
export const WASM_CONFIG = 'application/vnd.wasm.config.v0+json';
export const WASM_LAYER = 'application/wasm';
/** Layer types accepted for a component besides `application/wasm` (as Wassette accepts them). */
export const COMPONENT_LAYER_TYPES: ReadonlySet<string> = new Set([WASM_LAYER, 'application/vnd.wasm.content.layer.v1+wasm', 'application/vnd.bytecodealliance.wasm.component.layer.v0+wasm']);
export const OCI_EMPTY_CONFIG = 'application/vnd.oci.image.config.v1+json';
export const COSIGN_PAYLOAD = 'application/vnd.dev.cosign.simplesigning.v1+json';
export const COSIGN_SIGNATURE_ANNOTATION = 'dev.cosignproject.cosign/signature';
/** What a manifest GET accepts. */
export const MANIFEST_ACCEPT = [OCI_MANIFEST, DOCKER_MANIFEST].join(', ');

/** A content descriptor (the fields toolhost reads). */
export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

/** An image manifest (the fields toolhost reads). */
export interface ImageManifest {
  schemaVersion: 2;
  mediaType?: string;
  artifactType?: string;
  config: Descriptor;
  layers: Descriptor[];
  annotations?: Record<string, string>;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

function isDescriptor(value: unknown): value is Descriptor {
  if (typeof value !== 'object' || value === null) return false;
  const { mediaType, digest, size } = value as Record<string, unknown>;
  return typeof mediaType === 'string' && typeof digest === 'string' && DIGEST.test(digest) && Number.isSafeInteger(size) && (size as number) >= 0;
}

/**
 * Parse a manifest's bytes as an image manifest (OCI or Docker v2 schema 2).
 * @throws SOURCE_INTEGRITY (`layout`) for anything else.
 */
export function parseImageManifest(bytes: Uint8Array, source: string): ImageManifest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    throw integrity('layout', source, 'the manifest is not JSON');
  }
  const manifest = parsed as Partial<ImageManifest> | null;
  if (typeof manifest !== 'object' || manifest === null || manifest.schemaVersion !== 2) throw integrity('layout', source, 'the manifest is not an image manifest (schemaVersion 2)');
  if (manifest.mediaType !== undefined && manifest.mediaType !== OCI_MANIFEST && manifest.mediaType !== DOCKER_MANIFEST) {
    throw integrity('layout', source, `the manifest's media type is ${JSON.stringify(manifest.mediaType)}, not ${OCI_MANIFEST} (an index or a list is not a component)`);
  }
  if (!isDescriptor(manifest.config) || !Array.isArray(manifest.layers) || !manifest.layers.every(isDescriptor)) {
    throw integrity('layout', source, 'the manifest\'s config or layers are not valid descriptors');
  }
  return manifest as ImageManifest;
}

/**
 * Check a manifest is a Wasm component artifact: the Wasm config type and
 * exactly one component layer. Returns the layer.
 * @throws SOURCE_INTEGRITY (`layout`) naming what is wrong.
 */
export function componentLayer(manifest: ImageManifest, source: string): Descriptor {
  if (manifest.config.mediaType !== WASM_CONFIG) {
    throw integrity('layout', source, `the config's media type is ${JSON.stringify(manifest.config.mediaType)}, not ${WASM_CONFIG}: not a Wasm artifact`);
  }
  if (manifest.layers.length !== 1) {
    throw integrity('layout', source, `the manifest has ${manifest.layers.length} layers; a component artifact has exactly one`, { layers: manifest.layers.length });
  }
  const layer = manifest.layers[0]!;
  if (!COMPONENT_LAYER_TYPES.has(layer.mediaType)) {
    throw integrity('layout', source, `the layer's media type is ${JSON.stringify(layer.mediaType)}, not ${WASM_LAYER}`);
  }
  return layer;
}

/** The cosign signature tag of a manifest digest: `sha256-<hex>.sig`. */
export function cosignSignatureTag(digest: string): string {
  return `${digest.replace(':', '-')}.sig`;
}
