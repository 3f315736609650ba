// How a rendered overlay behaves in operation, each rule a function of the rendered objects that
// returns its problems: NATS probed as the official chart does, its storage bounded and exported
// (nats-storage.mjs), the gateway's pods spread over zones
// and hosts, drains that take one pod at a time, autoscalers where production needs them,
// configuration that rolls the pods it changes (or is reloaded in place), and a public entry point that streams, takes the
// edge's bodies and keeps the admin API and the console private.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { natsExporterProblems, natsStorageProblems } from './nats-storage.mjs';

const GATEWAY = ['edge', 'auth', 'router', 'executor', 'metering'];
/** The official NATS chart's probes, on the monitor port. */
const NATS_PROBES = { startupProbe: '/healthz', readinessProbe: '/healthz?js-server-only=true', livenessProbe: '/healthz?js-enabled-only=true' };
const SPREAD_KEYS = ['topology.kubernetes.io/zone', 'kubernetes.io/hostname'];
/** What production's autoscalers must scale (the router runs a fixed count). */
const AUTOSCALED = ['edge', 'executor', 'auth', 'metering'];
/** Generated ConfigMaps: rendered as <name>-<hash of the content>, so that a change rolls their readers. */
const GENERATED = ['gateway-config'];
/**
 * Generated ConfigMaps the services reload when their file changes (the catalog, the plans):
 * rendered with their hash (a change rolls their readers), or without it (components/live-config:
 * a change is applied in place and reloaded), and then mounted as a directory, never with subPath
 * (the kubelet never updates a subPath mount), with reloading on (CONFIG_RELOAD_INTERVAL_MS not 0).
 */
const RELOADED = ['gateway-catalog', 'gateway-plans'];
/** Paths only the edge's admin port serves. */
const PRIVATE_PATHS = ['/admin', '/console'];
/** A stream's longest silence and length the entry point must allow, in seconds. */
const STREAM_SECONDS = 3600;
const NGINX = 'nginx.ingress.kubernetes.io/';

const nameOf = (object) => object.metadata?.name;
const byKind = (objects, kind) => objects.filter((object) => object?.kind === kind);
const containersOf = (workload) => workload.spec?.template?.spec?.containers ?? [];

/** NATS servers (containers running a nats image, in a StatefulSet or dev's Deployment) without the official chart's probes. */
export function natsProbeProblems(label, objects) {
  return [...byKind(objects, 'StatefulSet'), ...byKind(objects, 'Deployment')].flatMap((set) =>
    containersOf(set)
      .filter((container) => /(^|\/)nats(:|@|$)/.test(String(container.image)))
      .flatMap((container) =>
        Object.entries(NATS_PROBES)
          .filter(([probe, path]) => container[probe]?.httpGet?.path !== path)
          .map(
            ([probe, path]) =>
              `${label}: ${set.kind} ${nameOf(set)}: the ${probe} must be GET ${path} (the official chart's), not ${container[probe]?.httpGet?.path ?? 'none'}`,
          ),
      ),
  );
}

/** Gateway Deployments whose pods may pile onto one zone or host: a spread over each, selecting their own pods. */
export function spreadProblems(label, objects) {
  return byKind(objects, 'Deployment')
    .filter((deployment) => GATEWAY.includes(nameOf(deployment)))
    .flatMap((deployment) => {
      const own = Object.entries(deployment.spec?.selector?.matchLabels ?? {});
      const podLabels = deployment.spec?.template?.metadata?.labels ?? {};
      const selectsOwn = (selector) => {
        const entries = Object.entries(selector?.matchLabels ?? {});
        return own.every(([key, value]) => selector?.matchLabels?.[key] === value) && entries.every(([key, value]) => podLabels[key] === value);
      };
      const constraints = deployment.spec?.template?.spec?.topologySpreadConstraints ?? [];
      return SPREAD_KEYS.filter((key) => !constraints.some((constraint) => constraint.topologyKey === key && selectsOwn(constraint.labelSelector))).map(
        (key) => `${label}: Deployment ${nameOf(deployment)} has no topologySpreadConstraint over ${key} selecting its own pods`,
      );
    });
}

/** PodDisruptionBudgets that let a drain evict more than one pod at once, or none ever. */
export function disruptionProblems(label, objects) {
  return byKind(objects, 'PodDisruptionBudget')
    .filter((budget) => budget.spec?.minAvailable !== undefined || !(typeof budget.spec?.maxUnavailable === 'number' && budget.spec.maxUnavailable <= 1))
    .map((budget) => `${label}: PodDisruptionBudget ${nameOf(budget)} must set maxUnavailable: 1 and no minAvailable`);
}

/**
 * Workloads an autoscaler scales that set a replica count (each apply would reset the autoscaler's),
 * and in production the Deployments no autoscaler scales.
 */
export function autoscalerProblems(label, objects, production) {
  const targets = byKind(objects, 'HorizontalPodAutoscaler').map((autoscaler) => autoscaler.spec?.scaleTargetRef ?? {});
  const fighting = objects.filter(
    (object) => object?.spec?.replicas !== undefined && targets.some((target) => target.kind === object.kind && target.name === nameOf(object)),
  );
  const scaled = new Set(targets.filter((target) => target.kind === 'Deployment').map((target) => target.name));
  return [
    ...fighting.map((object) => `${label}: ${object.kind} ${nameOf(object)} sets replicas although an autoscaler owns them`),
    ...(production ? AUTOSCALED.filter((name) => !scaled.has(name)) : []).map((name) => `${label}: no HorizontalPodAutoscaler scales Deployment ${name}`),
  ];
}

/** Every ConfigMap name a pod template reads, with where. */
function configMapReads(template) {
  const spec = template?.spec ?? {};
  const containers = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
  return [
    ...containers.flatMap((container) => (container.envFrom ?? []).map((source) => source.configMapRef?.name)),
    ...containers.flatMap((container) => (container.env ?? []).map((variable) => variable.valueFrom?.configMapKeyRef?.name)),
    ...(spec.volumes ?? []).flatMap((volume) => [volume.configMap?.name, ...(volume.projected?.sources ?? []).map((source) => source.configMap?.name)]),
  ].filter(Boolean);
}

/**
 * Generated ConfigMaps rendered without their hash, or read by a name that is not the rendered one
 * (a change would roll nothing); the catalog or the plans kept by name but mounted where a change
 * never arrives (subPath) or with reloading off; the plans not mounted where auth's AUTH_PLANS_PATH
 * reads them.
 */
export function configRolloutProblems(label, objects) {
  const problems = [];
  const configMaps = byKind(objects, 'ConfigMap');
  const hashedOf = (name) => configMaps.find((map) => new RegExp(`^${name}-[a-z0-9]{10}$`).test(nameOf(map)));
  const rendered = new Map(GENERATED.map((name) => [name, hashedOf(name)]));
  for (const [name, map] of rendered) if (!map) problems.push(`${label}: ConfigMap ${name} is not generated with a hash of its content`);
  // The reloaded ones: hashed, or kept by name for live reload.
  const live = new Map();
  for (const name of RELOADED) {
    const hashed = hashedOf(name);
    const named = configMaps.find((map) => nameOf(map) === name);
    if (hashed) rendered.set(name, hashed);
    else if (named) live.set(name, named);
  }
  const workloads = [...byKind(objects, 'Deployment'), ...byKind(objects, 'StatefulSet')];
  for (const workload of workloads)
    for (const read of configMapReads(workload.spec?.template))
      for (const [name, map] of [...rendered, ...live])
        if (map && read.startsWith(name) && read !== nameOf(map))
          problems.push(`${label}: ${workload.kind} ${nameOf(workload)} reads ConfigMap ${read}, not ${nameOf(map)}`);
  problems.push(...liveReloadProblems(label, workloads, live, gatewayConfigData(configMaps)));
  const auth = byKind(objects, 'Deployment').find((deployment) => nameOf(deployment) === 'auth');
  const plans = rendered.get('gateway-plans') ?? live.get('gateway-plans');
  if (auth && plans) {
    const spec = auth.spec.template.spec;
    const volume = (spec.volumes ?? []).find((candidate) => candidate.configMap?.name === nameOf(plans))?.name;
    const container = spec.containers[0];
    const path = container.env?.find((variable) => variable.name === 'AUTH_PLANS_PATH')?.value;
    const files = (container.volumeMounts ?? [])
      .filter((mount) => mount.name === volume)
      .flatMap((mount) => (mount.subPath ? [mount.mountPath] : Object.keys(plans.data ?? {}).map((key) => `${mount.mountPath.replace(/\/$/, '')}/${key}`)));
    if (!files.includes(path)) problems.push(`${label}: auth's AUTH_PLANS_PATH (${path ?? 'unset'}) is not a file of the mounted ConfigMap ${nameOf(plans)}`);
  }
  return problems;
}

/** The data of the rendered gateway-config (hashed or not). */
function gatewayConfigData(configMaps) {
  return configMaps.find((map) => /^gateway-config(-[a-z0-9]{10})?$/.test(nameOf(map) ?? ''))?.data ?? {};
}

/**
 * For the catalog and the plans kept by name (live reload): a pod that mounts one with subPath
 * (never updated by the kubelet), or reloading turned off (CONFIG_RELOAD_INTERVAL_MS=0), would go
 * on with the old file after an apply, and no rollout would fix it.
 */
function liveReloadProblems(label, workloads, live, configData) {
  const problems = [];
  if (live.size > 0 && String(configData.CONFIG_RELOAD_INTERVAL_MS ?? '') === '0')
    problems.push(`${label}: ${[...live.keys()].join(' and ')} are kept by name for live reload, but gateway-config sets CONFIG_RELOAD_INTERVAL_MS=0`);
  for (const workload of workloads) {
    const spec = workload.spec?.template?.spec ?? {};
    for (const [name] of live) {
      const volumes = (spec.volumes ?? []).filter((volume) => volume.configMap?.name === name).map((volume) => volume.name);
      for (const container of spec.containers ?? [])
        for (const mount of container.volumeMounts ?? [])
          if (volumes.includes(mount.name) && mount.subPath)
            problems.push(
              `${label}: ${workload.kind} ${nameOf(workload)} mounts ConfigMap ${name} with subPath, which never sees a change: mount its directory`,
            );
    }
  }
  return problems;
}

/** The edge's body limit: its rendered setting, else the default of services/edge/src/config.ts's schema. */
export function edgeBodyLimit(root, objects) {
  const edge = byKind(objects, 'Deployment').find((deployment) => nameOf(deployment) === 'edge');
  const set =
    containersOf(edge ?? {})[0]?.env?.find((variable) => variable.name === 'EDGE_BODY_LIMIT_BYTES')?.value ??
    objects.find((object) => object?.kind === 'ConfigMap' && /^gateway-config(-|$)/.test(nameOf(object)))?.data?.EDGE_BODY_LIMIT_BYTES;
  if (set !== undefined) return Number(set);
  const source = readFileSync(join(root, 'services', 'edge', 'src', 'config.ts'), 'utf8');
  const factors = /EDGE_BODY_LIMIT_BYTES:[^\n]*?default:\s*([\d\s*]+)/.exec(source)?.[1] ?? 'NaN';
  return factors.split('*').reduce((product, factor) => product * Number(factor.trim()), 1);
}

/** nginx's size (`16m`, `512k`, `1g`, bytes): binary units. */
const nginxBytes = (size) => {
  const [, number, unit = ''] = /^(\d+)([kmg]?)$/i.exec(String(size ?? '')) ?? [];
  return Number(number) * 1024 ** ' kmg'.indexOf(unit.toLowerCase() || ' ');
};
/** A Gateway API duration (`1h`, `3600s`, `1h30m`, `500ms`) in seconds. */
const durationSeconds = (duration) =>
  [...String(duration ?? '').matchAll(/(\d+)(ms|h|m|s)/g)].reduce(
    (total, [, number, unit]) => total + Number(number) * { h: 3600, m: 60, s: 1, ms: 0.001 }[unit],
    0,
  );
/** Whether a route's path (with its match type) sends a private path to the edge. */
const routesPrivate = (path, type) =>
  PRIVATE_PATHS.some((hidden) =>
    type === 'Exact' ? path === hidden || path.startsWith(`${hidden}/`) : `${hidden}/`.startsWith(`${path.replace(/\/$/, '')}/`) || path.startsWith(hidden),
  );

/**
 * Ingresses and HTTPRoutes that route the admin API or the console, target the edge's admin port,
 * cut streams short, buffer them, or take bodies of another size than the edge.
 */
export function entryPointProblems(label, objects, bodyLimit) {
  const problems = [];
  const adminPort = byKind(objects, 'Service')
    .flatMap((service) => service.spec?.ports ?? [])
    .find((port) => port.name === 'admin');
  const toAdmin = (port) => port !== undefined && (port === 'admin' || port === adminPort?.port);
  for (const ingress of byKind(objects, 'Ingress')) {
    const at = `${label}: Ingress ${nameOf(ingress)}`;
    // A default backend takes every path no rule names, /admin and /console among them.
    const paths = [
      ...(ingress.spec?.rules ?? []).flatMap((rule) => rule.http?.paths ?? []),
      ...(ingress.spec?.defaultBackend ? [{ path: '/', pathType: 'Prefix', backend: ingress.spec.defaultBackend }] : []),
    ];
    for (const { path = '/', pathType, backend } of paths) {
      if (routesPrivate(path, pathType)) problems.push(`${at} routes ${path} to the admin API or the console`);
      if (toAdmin(backend?.service?.port?.name ?? backend?.service?.port?.number)) problems.push(`${at} routes ${path} to the admin port`);
    }
    const annotation = (name) => ingress.metadata?.annotations?.[`${NGINX}${name}`];
    for (const name of ['proxy-read-timeout', 'proxy-send-timeout'])
      if (!(Number(annotation(name)) >= STREAM_SECONDS))
        problems.push(`${at}: ${NGINX}${name} must be at least ${STREAM_SECONDS} (streams), not ${annotation(name)}`);
    if (annotation('proxy-buffering') !== 'off') problems.push(`${at}: ${NGINX}proxy-buffering must be "off" (SSE)`);
    if (nginxBytes(annotation('proxy-body-size')) !== bodyLimit)
      problems.push(`${at}: ${NGINX}proxy-body-size (${annotation('proxy-body-size')}) must be the edge's body limit, ${bodyLimit} bytes`);
  }
  for (const route of byKind(objects, 'HTTPRoute')) {
    const at = `${label}: HTTPRoute ${nameOf(route)}`;
    for (const rule of route.spec?.rules ?? []) {
      for (const { path } of rule.matches?.length ? rule.matches : [{}]) {
        const { type = 'PathPrefix', value = '/' } = path ?? {};
        if (routesPrivate(value, type)) problems.push(`${at} routes ${value} to the admin API or the console`);
      }
      for (const backend of rule.backendRefs ?? []) if (toAdmin(backend.port)) problems.push(`${at} routes to the admin port`);
      for (const name of ['request', 'backendRequest'])
        if (!(durationSeconds(rule.timeouts?.[name]) >= STREAM_SECONDS))
          problems.push(`${at}: timeouts.${name} must be at least ${STREAM_SECONDS}s (streams), not ${rule.timeouts?.[name]}`);
    }
  }
  return problems;
}

/**
 * Every rule above (and nats-storage.mjs's) but production's autoscalers, on one rendered set.
 * @param {string} root the repository, for the edge's config schema
 */
export function operationProblems(root, label, objects) {
  return [
    ...natsProbeProblems(label, objects),
    ...natsStorageProblems(label, objects),
    ...natsExporterProblems(label, objects),
    ...spreadProblems(label, objects),
    ...disruptionProblems(label, objects),
    ...configRolloutProblems(label, objects),
    ...entryPointProblems(label, objects, edgeBodyLimit(root, objects)),
  ];
}
