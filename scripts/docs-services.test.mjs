/**
 * The documentation names the services there are: one per folder of services/ (a folder with a
 * package.json). docs/architecture.md draws each of them, gives each a row of its table with the
 * ports and the dependencies its configuration has (each service's `.env.example`, generated from its
 * config schema: `REDIS_URL` is Redis, `NATS_URL` NATS, `DATABASE_URL` PostgreSQL,
 * `<NAME>_SERVICE_ADDR` the service `<name>`), links each service's README, and its repository
 * layout names every folder of packages/ and every suite of bench/. docs/configuration.md's table
 * says which services read each variable as their `.env.example` files have it. And no page, folder
 * README or manifest comment counts the services as a number other than the folders': "the five
 * services", "all six services", "the gateway's 7 services". A page that means some of them names
 * them instead of counting them.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const ARCHITECTURE = join(ROOT, 'docs', 'architecture.md');

/** The services: the folders of services/ that are packages. */
const SERVICES = readdirSync(join(ROOT, 'services'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(ROOT, 'services', entry.name, 'package.json')))
  .map((entry) => entry.name)
  .sort();

const NUMBER_WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'];

/** The variables of a service's `.env.example` with their values (a commented-out one too). */
function variables(service) {
  const text = readFileSync(join(ROOT, 'services', service, '.env.example'), 'utf8');
  return new Map([...text.matchAll(/^(?:# )?([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((match) => [match[1], match[2]]));
}

/** What a service's configuration makes it talk to: other services, Redis, NATS, PostgreSQL. */
function dependenciesOf(service) {
  const result = new Set();
  for (const name of variables(service).keys()) {
    if (name === 'REDIS_URL' || name === 'RESPONSES_REDIS_URL' || name === 'CACHE_REDIS_URL') result.add('Redis');
    else if (name === 'NATS_URL') result.add('NATS');
    else if (name === 'DATABASE_URL') result.add('PostgreSQL');
    else if (name.endsWith('_SERVICE_ADDR')) result.add(name.slice(0, -'_SERVICE_ADDR'.length).toLowerCase().replaceAll('_', '-'));
  }
  return [...result].sort();
}

/** The ports a service listens on: its gRPC or HTTP port and its metrics port. */
function portsOf(service) {
  const own = variables(service);
  const prefix = service.toUpperCase().replaceAll('-', '_');
  const listen = own.get(`${prefix}_LISTEN_ADDR`)?.split(':').pop() ?? own.get(`${prefix}_PORT`);
  return [listen, own.get(`${prefix}_METRICS_PORT`)];
}

/** Whether `text` has `word` as a word of its own (`request-log` not inside `request-logs`). */
function hasWord(text, word) {
  return new RegExp(`(?<![\\w-])${word.replaceAll('-', '\\-')}(?![\\w-])`).test(text);
}

/** The rows of architecture.md's service table, each as its cells by column heading. */
function serviceTable() {
  const lines = readFileSync(ARCHITECTURE, 'utf8').split('\n');
  const head = lines.findIndex((line) => /^\| service \|/.test(line));
  const cells = (line) =>
    line
      .slice(1, -1)
      .split(' | ')
      .map((cell) => cell.trim());
  const headings = cells(lines[head]);
  const rows = [];
  for (const line of lines.slice(head + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(Object.fromEntries(cells(line).map((cell, index) => [headings[index], cell])));
  }
  return rows;
}

/** The names in a table cell that are services or the stores: what the cell says a service talks to. */
function namedIn(cell) {
  // A service some configuration has an address of counts too, in services/ or not (the guard
  // service's contract is in proto/ before its folder is).
  const addressed = SERVICES.flatMap((service) => dependenciesOf(service));
  return [...new Set([...SERVICES, ...addressed, 'Redis', 'NATS', 'PostgreSQL'])].filter((name) => hasWord(cell, name)).sort();
}

/** The documentation files: every markdown file outside dependencies and build output, and the manifests. */
function documentationFiles(dir = ROOT) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return ['node_modules', 'dist', '.git', '.run', 'cache'].includes(entry.name) ? [] : documentationFiles(path);
    const manifest = relative(ROOT, path).startsWith('deploy') && /\.ya?ml$/.test(entry.name);
    return entry.name.endsWith('.md') || manifest ? [path] : [];
  });
}

/**
 * "the five services", "all 6 services", "each of the six services": a count of all the services.
 * A qualified count ("the six gRPC services", "its three gRPC services" of auth's contracts) counts
 * some, or something else, and is not one.
 */
const COUNT = new RegExp(`\\b(?:the|all(?: the| of the)?|each of the|our|gateway's)\\s+(${NUMBER_WORDS.join('|')}|\\d+)\\s+services\\b`, 'gi');

/** Every count of the services in `text` (a phrase broken over lines too), with the line it starts on. */
function serviceCounts(text) {
  return [...text.matchAll(COUNT)].map((match) => {
    const word = match[1].toLowerCase();
    return {
      line: text.slice(0, match.index).split('\n').length,
      phrase: match[0].replaceAll(/\s+/g, ' '),
      count: /^\d+$/.test(word) ? Number(word) : NUMBER_WORDS.indexOf(word),
    };
  });
}

describe('the services the documentation names', () => {
  // A service added to services/ fails here first: draw it in architecture.md, then list it here.
  it('are the folders of services/', () => {
    expect(SERVICES).toEqual(['auth', 'batch', 'cache', 'edge', 'executor', 'guard', 'mcp', 'metering', 'request-log', 'router']);
  });

  it("architecture.md's diagram draws every service", () => {
    const diagram = /```\n([\s\S]*?)```/.exec(readFileSync(ARCHITECTURE, 'utf8'))[1];
    expect(SERVICES.filter((service) => !hasWord(diagram, service))).toEqual([]);
  });

  it("architecture.md's table has a row for each service and none for another", () => {
    const names = serviceTable().map((row) => /^\*\*([a-z-]+)\*\*/.exec(row.service)?.[1] ?? row.service);
    expect(names.sort()).toEqual(SERVICES);
  });

  it("each row's ports are those of the service's configuration", () => {
    for (const row of serviceTable()) {
      const service = /^\*\*([a-z-]+)\*\*/.exec(row.service)[1];
      const ports = portsOf(service);
      expect(ports.every(Boolean), `${service}: its ports in .env.example`).toBe(true);
      for (const port of ports) expect(row.ports, `${service}'s ports`).toMatch(new RegExp(`\\b${port}\\b`));
    }
  });

  it("each row names what the service's configuration makes it talk to, and nothing more", () => {
    for (const row of serviceTable()) {
      const service = /^\*\*([a-z-]+)\*\*/.exec(row.service)[1];
      expect(namedIn(row['talks to']), `what ${service} talks to`).toEqual(dependenciesOf(service));
    }
  });

  it("architecture.md's repository layout names every package and every benchmark suite", () => {
    const text = readFileSync(ARCHITECTURE, 'utf8');
    const layout = /## Repository layout\n\n```\n([\s\S]*?)```/.exec(text)[1];
    const folders = (dir) =>
      readdirSync(join(ROOT, dir), { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => entry.name);
    // A folder's entry: its line and the indented lines that continue it.
    const section = (name) => {
      const lines = layout.split('\n');
      const first = lines.findIndex((line) => line.startsWith(`${name}/`));
      const next = lines.findIndex((line, index) => index > first && /^\S/.test(line));
      return lines.slice(first, next).join('\n');
    };
    const suites = readdirSync(join(ROOT, 'bench'))
      .filter((file) => file.endsWith('.bench.ts'))
      .map((file) => file.slice(0, -'.bench.ts'.length));
    expect(folders('packages').filter((name) => !hasWord(section('packages'), name))).toEqual([]);
    expect(suites.filter((name) => !hasWord(section('bench'), name))).toEqual([]);
  });

  it("architecture.md links each service's README", () => {
    const text = readFileSync(ARCHITECTURE, 'utf8');
    expect(SERVICES.filter((service) => !text.includes(`](../services/${service}/README.md)`))).toEqual([]);
  });

  it("configuration.md's 'used by' names the services whose configuration has the variable", () => {
    const lines = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8').split('\n');
    const head = lines.findIndex((line) => line.startsWith('| variable |'));
    const rows = [];
    for (const line of lines.slice(head + 2)) {
      if (!line.startsWith('|')) break;
      const [variable, , usedBy] = line.slice(1, -1).split(' | ');
      rows.push({ name: /`([^`]+)`/.exec(variable)[1], usedBy });
    }
    const having = (name) => SERVICES.filter((service) => variables(service).has(name));
    const unchecked = [];
    for (const { name, usedBy } of rows) {
      const expected = name.startsWith('<SERVICE>_')
        ? // Each service's own, but for those with a row of their own.
          SERVICES.filter((service) => {
            const own = `${service.toUpperCase().replaceAll('-', '_')}${name.slice('<SERVICE>'.length)}`;
            return variables(service).has(own) && !rows.some((row) => row.name === own);
          })
        : having(name);
      if (expected.length === 0) {
        unchecked.push(name);
        continue;
      }
      expect(usedBy === 'all' ? SERVICES : namedIn(usedBy).filter((named) => SERVICES.includes(named)), `who uses ${name}`).toEqual(expected);
    }
    // Read by libraries (AWS's credential chain, OpenTelemetry), not by a config schema.
    expect(unchecked).toEqual(['AWS_*', 'OTEL_EXPORTER_OTLP_ENDPOINT']);
  });

  it('no documentation counts them as another number', () => {
    const wrong = [];
    for (const file of documentationFiles()) {
      const name = relative(ROOT, file);
      for (const { line, phrase, count } of serviceCounts(readFileSync(file, 'utf8'))) {
        if (count === SERVICES.length) continue;
        wrong.push(`${name}:${line}: "${phrase}" (there are ${SERVICES.length})`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('counts a count of the services, however it is written, and not a count of some', () => {
    expect(serviceCounts('It starts the five services as processes.').map((count) => count.count)).toEqual([5]);
    expect(serviceCounts("The gateway's 6 services, one file each.").map((count) => count.count)).toEqual([6]);
    expect(serviceCounts('All seven services run one image; each of the seven services too.').map((count) => count.count)).toEqual([7, 7]);
    expect(serviceCounts('a trace across all\nfive services').map((count) => count.line)).toEqual([1]);
    expect(serviceCounts('What two services share is a package; it spans two services.')).toEqual([]);
    expect(serviceCounts('The six gRPC services, and the messages its three gRPC services share.')).toEqual([]);
  });
});
