/**
 * An authoritative DNS server on loopback for tests: it answers A queries for the names it is
 * given, from a table the test changes while clients run (replicas added to and removed from a
 * name, as a Kubernetes headless Service does), with a TTL of 0 so nothing is cached. AAAA queries
 * for a known name get an empty answer, anything else NXDOMAIN. A gRPC target names it as its
 * authority: `dns://127.0.0.1:<port>/<name>:<grpc port>`.
 *
 * Only what the gateway's resolver sends is understood: one question per query, over UDP (RFC
 * 1035 section 4; an EDNS record in the query is ignored and none is sent back).
 */
import { createSocket, type RemoteInfo } from 'node:dgram';
import { isIPv4 } from 'node:net';

const TYPE_A = 1;
const CLASS_IN = 1;
const RCODE_NAME_ERROR = 3;

/** A running DNS server. */
export interface DnsServer {
  /** The UDP port it answers on, at 127.0.0.1. */
  readonly port: number;
  /** The gRPC target of `name` served by it: `dns://127.0.0.1:<port>/<name>:<grpcPort>`. */
  target(name: string, grpcPort: number): string;
  /** Sets the IPv4 addresses `name` resolves to (none: the name does not exist). */
  set(name: string, addresses: readonly string[]): void;
  /** How many queries it has answered, by name: a test can see clients asking again. */
  readonly queries: ReadonlyMap<string, number>;
  stop(): Promise<void>;
}

/** Starts the DNS server on a free UDP port of 127.0.0.1. */
export async function startDnsServer(records: Record<string, readonly string[]> = {}): Promise<DnsServer> {
  const table = new Map<string, readonly string[]>();
  const queries = new Map<string, number>();
  const set = (name: string, addresses: readonly string[]) => {
    for (const address of addresses) if (!isIPv4(address)) throw new Error(`not an IPv4 address: ${address}`);
    if (addresses.length === 0) table.delete(name.toLowerCase());
    else table.set(name.toLowerCase(), [...addresses]);
  };
  for (const [name, addresses] of Object.entries(records)) set(name, addresses);

  const socket = createSocket('udp4');
  socket.on('message', (query: Buffer, peer: RemoteInfo) => {
    const answer = respond(query, table, queries);
    if (answer) socket.send(answer, peer.port, peer.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => resolve());
  });
  const port = socket.address().port;
  return {
    port,
    target: (name, grpcPort) => `dns://127.0.0.1:${port}/${name}:${grpcPort}`,
    set,
    queries,
    stop: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}

/** The response to one query, or undefined for a packet that is not a query we can read. */
function respond(query: Buffer, table: Map<string, readonly string[]>, queries: Map<string, number>): Buffer | undefined {
  if (query.length < 12) return undefined;
  const flags = query.readUInt16BE(2);
  if (flags & 0x8000 || query.readUInt16BE(4) !== 1) return undefined;
  // The question: labels up to the root, then its type and class.
  const labels: string[] = [];
  let offset = 12;
  while (offset < query.length && query[offset] !== 0) {
    const length = query[offset]!;
    if (length > 63 || offset + 1 + length > query.length) return undefined;
    labels.push(query.toString('latin1', offset + 1, offset + 1 + length));
    offset += 1 + length;
  }
  const questionEnd = offset + 5;
  if (questionEnd > query.length) return undefined;
  const type = query.readUInt16BE(offset + 1);
  const questionClass = query.readUInt16BE(offset + 3);
  const name = labels.join('.').toLowerCase();
  queries.set(name, (queries.get(name) ?? 0) + 1);
  const addresses = table.get(name);
  const answers = addresses && type === TYPE_A && questionClass === CLASS_IN ? addresses : [];

  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0);
  // QR, the query's opcode and RD, AA, RA; NXDOMAIN for a name we do not have.
  const rcode = addresses ? 0 : RCODE_NAME_ERROR;
  header.writeUInt16BE(0x8000 | (flags & 0x7900) | 0x0400 | 0x0080 | rcode, 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(answers.length, 6);
  const records = answers.map((address) => {
    const record = Buffer.alloc(16);
    record.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
    record.writeUInt16BE(TYPE_A, 2);
    record.writeUInt16BE(CLASS_IN, 4);
    record.writeUInt32BE(0, 6); // TTL 0: the table may change at any moment
    record.writeUInt16BE(4, 10);
    for (const [index, part] of address.split('.').entries()) record.writeUInt8(Number(part), 12 + index);
    return record;
  });
  return Buffer.concat([header, query.subarray(12, questionEnd), ...records]);
}
