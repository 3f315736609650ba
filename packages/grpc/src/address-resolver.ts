/**
 * The `dns:` name resolver of every gRPC channel in the process, in place of grpc-js's own.
 *
 * Why: grpc-js resolves a name again only when its load balancer asks, which it does when a
 * connection breaks. Replicas behind a name that are added later (an autoscaled executor pool,
 * pods behind a headless Service) are then never found while the existing connections stay up,
 * as keepalive keeps them: a new executor got no call at all. This resolver asks again every
 * `refreshMs` (and at once, rate-limited, when the load balancer asks), hands the load balancer
 * the new address set when it changed, and tells the watchers of the name (the call streams of
 * `StreamedCalls`, which spread again over the new set at once instead of at their age).
 *
 * A target with an authority (`dns://127.0.0.1:8600/executors:50053`) is resolved by that DNS
 * server (A and AAAA records), as gRPC's naming document specifies; grpc-js only honours the
 * authority under an environment variable. Without one, the system's resolver (getaddrinfo:
 * /etc/hosts, then DNS) answers, as in grpc-js. An IP address resolves to itself, once.
 *
 * A failed or empty resolution keeps the last good address set (a DNS server that is briefly
 * unreachable does not empty the channel); before any success it is reported as UNAVAILABLE.
 */
import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import * as grpc from '@grpc/grpc-js';

const { registerResolver, statusOrFromError, statusOrFromValue, splitHostPort } = grpc.experimental;

/** The channel option: how often a `dns:` name is resolved again, in ms (default DEFAULT_REFRESH_MS). */
export const REFRESH_OPTION = 'gateway.dns_refresh_ms';
/** How often a name is resolved again by default: a replica added joins within about this long. */
export const DEFAULT_REFRESH_MS = 5_000;
/** The shortest time between two resolutions of one name asked for by the load balancer. */
const MIN_INTERVAL_MS = 1_000;
/** How long one query to a named DNS server may take (c-ares: per try, two tries). */
const QUERY_TIMEOUT_MS = 2_000;
const DEFAULT_PORT = 443;

/** Told each time the address set of a name changes: the addresses, as `host:port`, sorted. */
export type AddressListener = (addresses: readonly string[]) => void;

/** The watchers of each name and its latest address set, by the name's key (see nameKey). */
const watched = new Map<string, { listeners: Set<AddressListener>; latest?: readonly string[] }>();

/**
 * The key of a `dns:` target, the same however it is written (`dns:///host:1`, `dns:host:1`,
 * `host:1`); undefined for another scheme (`ipv4:`, `unix:`), whose addresses never change.
 */
export function nameKey(target: string): string | undefined {
  let rest = target;
  let authority = '';
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) && !/^[^:]+:\d+$/.test(target)) {
    if (!target.startsWith('dns:')) return undefined;
    rest = target.slice('dns:'.length);
  }
  if (rest.startsWith('//')) {
    const slash = rest.indexOf('/', 2);
    if (slash < 0) return undefined;
    authority = rest.slice(2, slash);
    rest = rest.slice(slash + 1);
  }
  return `${authority}|${rest}`;
}

/**
 * Calls `listener` whenever the address set `target` resolves to changes (and at once with the
 * set known now, if any), as seen by any channel of the process to that target. Returns the
 * function that stops it. A target that is not a `dns:` name is never told anything.
 */
export function watchAddresses(target: string, listener: AddressListener): () => void {
  const key = nameKey(target);
  if (key === undefined) return () => undefined;
  let entry = watched.get(key);
  if (!entry) {
    entry = { listeners: new Set() };
    watched.set(key, entry);
  }
  entry.listeners.add(listener);
  const known = entry.latest;
  if (known) queueMicrotask(() => listener(known));
  const watching = entry;
  return () => {
    watching.listeners.delete(listener);
  };
}

/** Records a name's address set and tells its watchers when it changed. */
function publish(key: string, addresses: readonly string[]): void {
  let entry = watched.get(key);
  if (!entry) {
    entry = { listeners: new Set() };
    watched.set(key, entry);
  }
  const previous = entry.latest;
  if (previous && previous.length === addresses.length && previous.every((address, index) => address === addresses[index])) return;
  entry.latest = addresses;
  for (const listener of entry.listeners) listener(addresses);
}

type Endpoint = { addresses: Array<{ host: string; port: number }> };

/** The resolver grpc-js creates for each channel (and each health client) with a `dns:` target. */
class RefreshingDnsResolver implements grpc.experimental.Resolver {
  readonly #target: grpc.experimental.GrpcUri;
  readonly #listener: grpc.experimental.ResolverListener;
  readonly #key: string;
  readonly #host: string | undefined;
  readonly #port: number;
  readonly #refreshMs: number;
  readonly #resolver: InstanceType<typeof dns.Resolver> | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** When #timer fires (Unix ms). */
  #dueAt = 0;
  #resolving = false;
  /** Bumped by destroy: a resolution started before it reports nothing. */
  #generation = 0;
  #lastStartedAt = 0;
  #lastGood: readonly string[] | undefined;
  #reportedIp = false;

  constructor(target: grpc.experimental.GrpcUri, listener: grpc.experimental.ResolverListener, options: grpc.ChannelOptions) {
    this.#target = target;
    this.#listener = listener;
    const hostPort = splitHostPort(target.path);
    this.#host = hostPort?.host;
    this.#port = hostPort?.port ?? DEFAULT_PORT;
    this.#key = `${target.authority ?? ''}|${target.path}`;
    const refresh = Number(options[REFRESH_OPTION]);
    this.#refreshMs = Number.isFinite(refresh) && refresh > 0 ? refresh : DEFAULT_REFRESH_MS;
    if (target.authority) {
      this.#resolver = new dns.Resolver({ timeout: QUERY_TIMEOUT_MS, tries: 2 });
      this.#resolver.setServers([target.authority]);
    }
  }

  updateResolution(): void {
    if (this.#host === undefined) {
      setImmediate(() => this.#fail(`Failed to parse DNS address ${this.#describe()}`));
      return;
    }
    if (isIP(this.#host)) {
      if (this.#reportedIp) return;
      this.#reportedIp = true;
      const endpoints = [{ addresses: [{ host: this.#host, port: this.#port }] }];
      setImmediate(() => this.#listener(statusOrFromValue(endpoints), {}, null, ''));
      return;
    }
    // Asked by the load balancer (a connection failed): soon, never more than once a second.
    const wait = Math.max(0, this.#lastStartedAt + MIN_INTERVAL_MS - Date.now());
    this.#schedule(wait);
  }

  destroy(): void {
    this.#generation += 1;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#resolving = false;
    this.#lastGood = undefined;
    this.#reportedIp = false;
  }

  static getDefaultAuthority(target: grpc.experimental.GrpcUri): string {
    return target.path;
  }

  /** Resolves after `delayMs`, unless a resolution is due sooner or under way. */
  #schedule(delayMs: number): void {
    if (this.#resolving) return;
    const dueAt = Date.now() + delayMs;
    if (this.#timer && this.#dueAt <= dueAt) return;
    clearTimeout(this.#timer);
    this.#dueAt = dueAt;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#resolve();
    }, delayMs);
    this.#timer.unref();
  }

  async #resolve(): Promise<void> {
    const generation = this.#generation;
    this.#resolving = true;
    this.#lastStartedAt = Date.now();
    let hosts: string[] = [];
    try {
      hosts = await this.#lookup(this.#host!);
    } catch {
      hosts = [];
    }
    if (generation !== this.#generation) return;
    this.#resolving = false;
    // The next look, whatever this one found: the set may change at any time.
    this.#schedule(this.#refreshMs);
    if (hosts.length === 0) {
      if (this.#lastGood === undefined) this.#fail(`Name resolution failed for target ${this.#describe()}`);
      return;
    }
    const addresses = [...new Set(hosts)].sort().map((host) => (host.includes(':') ? `[${host}]:${this.#port}` : `${host}:${this.#port}`));
    const changed =
      this.#lastGood === undefined || addresses.length !== this.#lastGood.length || addresses.some((address, index) => address !== this.#lastGood![index]);
    if (!changed) return;
    this.#lastGood = addresses;
    const endpoints: Endpoint[] = [...new Set(hosts)].sort().map((host) => ({ addresses: [{ host, port: this.#port }] }));
    this.#listener(statusOrFromValue(endpoints), {}, null, '');
    publish(this.#key, addresses);
  }

  /** The name's addresses: from the target's DNS server when it names one, else the system's resolver. */
  async #lookup(host: string): Promise<string[]> {
    if (this.#resolver) {
      const answers = await Promise.allSettled([this.#resolver.resolve4(host), this.#resolver.resolve6(host)]);
      return answers.flatMap((answer) => (answer.status === 'fulfilled' ? answer.value : []));
    }
    const found = await dns.lookup(host, { all: true });
    return found.map((entry) => entry.address);
  }

  #fail(details: string): void {
    this.#listener(statusOrFromError({ code: grpc.status.UNAVAILABLE, details, metadata: new grpc.Metadata() }), {}, null, '');
  }

  #describe(): string {
    return `dns:${this.#target.authority !== undefined ? `//${this.#target.authority}/` : ''}${this.#target.path}`;
  }
}

let installed = false;

/** Makes RefreshingDnsResolver the resolver of `dns:` targets (and of targets with no scheme); once per process. */
export function installAddressResolver(): void {
  if (installed) return;
  installed = true;
  registerResolver('dns', RefreshingDnsResolver);
}
