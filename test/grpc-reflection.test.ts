/**
 * Server reflection serves the real `.proto` files (issue 29): `sw4rm/tool.proto` importing
 * `google/protobuf/duration.proto`, health's and reflection's own files, and lists the reflection service itself.
 * A strict client (the rules Python's descriptor pool applies: every import present, every type reference defined
 * in the file or a file it imports, no symbol defined twice, the well-known types preloaded under their real
 * names) builds the ToolService from the reflection answers alone, then calls it.
 */
import * as grpc from '@grpc/grpc-js';
import { loadFileDescriptorSetFromBuffer } from '@grpc/proto-loader';
import descriptor from 'protobufjs/ext/descriptor/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineNativeTool, type ToolRegistry } from '../host/index.js';
import { startGrpcServer, type GrpcServerHandle } from '../host/servers/grpc/server.js';
import { makeRegistry } from './helpers.js';

interface FileProto {
  name: string;
  package?: string;
  dependency: string[];
  publicDependency: number[];
  messageType: MessageProto[];
  enumType: Array<{ name: string }>;
  service: Array<{ name: string; method: Array<{ name: string; inputType: string; outputType: string }> }>;
}
interface MessageProto {
  name: string;
  field: Array<{ name: string; typeName?: string }>;
  nestedType: MessageProto[];
  enumType: Array<{ name: string }>;
}
const { FileDescriptorProto, FileDescriptorSet } = descriptor as unknown as {
  FileDescriptorProto: { decode(bytes: Uint8Array): unknown; toObject(message: unknown, options: object): FileProto; encode(message: unknown): { finish(): Uint8Array } };
  FileDescriptorSet: { fromObject(value: object): unknown; encode(message: unknown): { finish(): Uint8Array } };
};

type Answer = {
  list_services_response?: { service: Array<{ name: string }> };
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  error_response?: { error_code: number; error_message: string };
};

/** One reflection conversation (v1, the bootstrap proto is the only thing a client knows up front). */
async function reflect(address: string, requests: Array<Record<string, unknown>>): Promise<Answer[]> {
  const { loadSync } = await import('@grpc/proto-loader');
  const { createRequire } = await import('node:module');
  const { dirname, join } = await import('node:path');
  const protoPath = join(dirname(createRequire(import.meta.url).resolve('@grpc/reflection')), '..', 'proto', 'grpc', 'reflection', 'v1', 'reflection.proto');
  const pkg = grpc.loadPackageDefinition(loadSync(protoPath, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true })) as unknown as {
    grpc: { reflection: { v1: { ServerReflection: grpc.ServiceClientConstructor } } };
  };
  const client = new pkg.grpc.reflection.v1.ServerReflection(address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    ServerReflectionInfo(): grpc.ClientDuplexStream<Record<string, unknown>, Answer>;
  };
  try {
    const stream = client.ServerReflectionInfo();
    const answers: Answer[] = [];
    const done = new Promise<void>((resolve, reject) => {
      stream.on('data', (answer: Answer) => answers.push(answer));
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    for (const request of requests) stream.write(request);
    stream.end();
    await done;
    return answers;
  } finally {
    client.close();
  }
}

/** The well-known files a strict client has already (Python's default pool), by the symbols they define. */
const PRELOADED: Record<string, string[]> = { 'google/protobuf/duration.proto': ['.google.protobuf.Duration'] };

/**
 * Add `files` to a strict descriptor pool, as Python's does: throws with its message on the first violation.
 * Returns the symbols defined, by file.
 */
function strictPool(files: FileProto[]): Map<string, string[]> {
  const pool = new Map<string, string[]>(Object.entries(PRELOADED));
  const ownerOf = new Map<string, string>();
  for (const [file, symbols] of pool) for (const symbol of symbols) ownerOf.set(symbol, file);
  const pending = files.filter((file) => !(file.name in PRELOADED));
  const defined = (file: FileProto): string[] => {
    const prefix = file.package ? `.${file.package}` : '';
    const out: string[] = [];
    const walk = (message: MessageProto, scope: string): void => {
      const name = `${scope}.${message.name}`;
      out.push(name);
      for (const nested of message.nestedType) walk(nested, name);
      for (const inner of message.enumType) out.push(`${name}.${inner.name}`);
    };
    for (const message of file.messageType) walk(message, prefix);
    for (const enumType of file.enumType) out.push(`${prefix}.${enumType.name}`);
    for (const service of file.service) out.push(`${prefix}.${service.name}`);
    return out;
  };
  while (pending.length > 0) {
    const index = pending.findIndex((file) => file.dependency.every((dep) => pool.has(dep)));
    if (index < 0) {
      const file = pending[0]!;
      throw new Error(`Depends on file '${file.dependency.find((dep) => !pool.has(dep))}', but it has not been loaded (${file.name})`);
    }
    const file = pending.splice(index, 1)[0]!;
    const symbols = defined(file);
    for (const symbol of symbols) {
      if (ownerOf.has(symbol)) throw new Error(`duplicate symbol ${symbol.slice(1)}: defined in ${ownerOf.get(symbol)} and ${file.name}`);
    }
    const visible = new Set([...symbols, ...file.dependency.flatMap((dep) => pool.get(dep) ?? [])]);
    const refs: string[] = [];
    const collect = (message: MessageProto): void => {
      for (const field of message.field) if (field.typeName) refs.push(field.typeName);
      for (const nested of message.nestedType) collect(nested);
    };
    file.messageType.forEach(collect);
    for (const service of file.service) for (const method of service.method) refs.push(method.inputType, method.outputType);
    for (const ref of refs) {
      if (!ref.startsWith('.')) throw new Error(`${file.name}: relative type name ${ref}`);
      if (visible.has(ref)) continue;
      const owner = ownerOf.get(ref) ?? files.find((other) => defined(other).includes(ref))?.name;
      throw new Error(owner ? `${ref.slice(1)} seems to be defined in ${owner}, which is not imported by ${file.name}` : `${file.name}: ${ref} is not defined`);
    }
    pool.set(file.name, symbols);
    for (const symbol of symbols) ownerOf.set(symbol, file.name);
  }
  return pool;
}

describe('gRPC server reflection', () => {
  let registry: ToolRegistry;
  let server: GrpcServerHandle;

  beforeAll(async () => {
    registry = makeRegistry();
    registry.register(defineNativeTool({
      name: 'size',
      description: 'Reports the length of its text.',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
      run: (args) => ({ length: ((args as { text?: string }).text ?? '').length }),
    }));
    server = await startGrpcServer(registry, { host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await server.close();
    await registry.close();
  });

  it('lists the ToolService, health and the reflection service itself', async () => {
    const [answer] = await reflect(server.address, [{ list_services: '*' }]);
    const names = answer!.list_services_response!.service.map((entry) => entry.name).sort();
    expect(names).toEqual(['grpc.health.v1.Health', 'grpc.reflection.v1.ServerReflection', 'grpc.reflection.v1alpha.ServerReflection', 'sw4rm.tool.ToolService']);
  });

  it('serves each file under its real path, with its imports', async () => {
    const [byName, bySymbol] = await reflect(server.address, [{ file_by_filename: 'sw4rm/tool.proto' }, { file_containing_symbol: 'google.protobuf.Duration' }]);
    const decode = (bytes: Buffer): FileProto => FileDescriptorProto.toObject(FileDescriptorProto.decode(bytes), { arrays: true, defaults: false });
    const files = byName!.file_descriptor_response!.file_descriptor_proto.map(decode);
    expect(files.map((file) => file.name)).toEqual(['sw4rm/tool.proto', 'google/protobuf/duration.proto']);
    expect(files[0]).toMatchObject({ package: 'sw4rm.tool', dependency: ['google/protobuf/duration.proto'] });
    expect(files[0]!.messageType.map((message) => message.name).sort()).toEqual(['ExecutionPolicy', 'ToolCall', 'ToolError', 'ToolFrame']);
    expect(bySymbol!.file_descriptor_response!.file_descriptor_proto.map(decode).map((file) => file.name)).toEqual(['google/protobuf/duration.proto']);
  });

  it('lets a strict client build every listed service from the answers alone, and call the ToolService', async () => {
    const [list] = await reflect(server.address, [{ list_services: '*' }]);
    const services = list!.list_services_response!.service.map((entry) => entry.name);
    const answers = await reflect(server.address, services.map((name) => ({ file_containing_symbol: name })));
    const raw = new Map<string, Buffer>();
    for (const answer of answers) {
      expect(answer.error_response).toBeUndefined();
      for (const bytes of answer.file_descriptor_response!.file_descriptor_proto) {
        const file = FileDescriptorProto.toObject(FileDescriptorProto.decode(bytes), { arrays: true, defaults: false });
        raw.set(file.name, bytes);
      }
    }
    const files = [...raw.values()].map((bytes) => FileDescriptorProto.toObject(FileDescriptorProto.decode(bytes), { arrays: true, defaults: false }));
    const pool = strictPool(files);
    for (const service of services) expect([...pool.values()].flat(), service).toContain(`.${service}`);

    const set = FileDescriptorSet.encode(FileDescriptorSet.fromObject({ file: [...raw.values()].map((bytes) => FileDescriptorProto.toObject(FileDescriptorProto.decode(bytes), {})) })).finish();
    const definition = loadFileDescriptorSetFromBuffer(Buffer.from(set), { keepCase: true, longs: String, defaults: true });
    const pkg = grpc.loadPackageDefinition(definition) as unknown as { sw4rm: { tool: { ToolService: grpc.ServiceClientConstructor } } };
    const client = new pkg.sw4rm.tool.ToolService(server.address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      Call(request: Record<string, unknown>, callback: (error: grpc.ServiceError | null, value?: { data: Buffer; final: boolean }) => void): void;
    };
    try {
      const frame = await new Promise<{ data: Buffer; final: boolean }>((resolve, reject) => {
        client.Call({ tool_name: 'size', args: Buffer.from('{"text":"four"}'), policy: { timeout: { seconds: 5 } } }, (error, value) => (error ? reject(error) : resolve(value!)));
      });
      expect(frame.final).toBe(true);
      expect(JSON.parse(frame.data.toString('utf8'))).toEqual({ length: 4 });
    } finally {
      client.close();
    }
  });

  it('is refused by the strict pool in the shape proto-loader alone produced (the check has teeth)', () => {
    const merged = (name: string, dependency: string[]): FileProto => ({ name, dependency, publicDependency: [], messageType: [], enumType: [], service: [] });
    const tool = { ...merged('sw4rm_tool.proto', []), package: 'sw4rm.tool', messageType: [{ name: 'ExecutionPolicy', field: [{ name: 'timeout', typeName: '.google.protobuf.Duration' }], nestedType: [], enumType: [] }] };
    const google = { ...merged('google_protobuf.proto', []), package: 'google.protobuf', messageType: [{ name: 'Duration', field: [], nestedType: [], enumType: [] }] };
    expect(() => strictPool([tool, google])).toThrow(/duplicate symbol google\.protobuf\.Duration|not imported by sw4rm_tool\.proto/);
    expect(() => strictPool([tool])).toThrow(/google\.protobuf\.Duration seems to be defined in google\/protobuf\/duration\.proto, which is not imported by sw4rm_tool\.proto/);
  });
});
