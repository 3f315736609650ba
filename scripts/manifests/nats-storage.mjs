// The NATS servers the manifests run, bounded and watched: each JetStream server's max_file_store
// set and under the volume its store is on (with headroom), its max_memory_store set and under the
// container's memory limit, the usage stream's USAGE_STREAM_MAX_BYTES within max_file_store (the
// server reserves it, and refuses a stream that does not fit), and the official NATS exporter beside
// each server on a port named `metrics` that a PodMonitor of the same render scrapes.
import { gatewayConfigOf } from './connectivity.mjs';

/** JetStream's storage may take at most this share of its volume: the rest is headroom for the filesystem and raft logs. */
const MAX_STORE_SHARE = 0.9;
/** USAGE_STREAM_MAX_BYTES when gateway-config does not set it (packages/messaging's USAGE_MAX_BYTES). */
const DEFAULT_STREAM_MAX_BYTES = 1024 ** 3;
const EXPORTER_IMAGE = /(^|\/)natsio\/prometheus-nats-exporter(:|@|$)/;

const nameOf = (object) => object.metadata?.name;
const byKind = (objects, kind) => objects.filter((object) => object?.kind === kind);
const isNats = (container) => /(^|\/)nats(:|@|$)/.test(String(container.image));

/** A NATS config size (`8GB`, `256MB`, `1024`: NATS counts K, M, G and T in powers of 1024) in bytes. */
export function natsSize(text) {
  const match = /^\s*"?(\d+(?:\.\d+)?)\s*([KMGT])?I?B?"?\s*$/i.exec(String(text));
  if (!match) return undefined;
  return Number(match[1]) * 1024 ** ' KMGT'.indexOf((match[2] ?? ' ').toUpperCase());
}

/** A Kubernetes quantity (`10Gi`, `512Mi`, `3G`) in bytes. */
export function quantityBytes(text) {
  const match = /^(\d+(?:\.\d+)?)([KMGTE]i?)?$/.exec(String(text ?? ''));
  if (!match) return undefined;
  const unit = match[2] ?? '';
  const power = ' KMGTE'.indexOf(unit[0] ?? ' ');
  return Number(match[1]) * (unit.endsWith('i') ? 1024 : 1000) ** Math.max(power, 0);
}

/** One setting of a NATS config text (`key: value` or `key = value`), or undefined. */
function setting(conf, key) {
  return new RegExp(`^\\s*${key}\\s*[:=]\\s*([^\\s#]+)`, 'm').exec(conf)?.[1];
}

/** Each NATS server container of the render, with its workload, its config text and the volume of its store. */
function natsServers(objects) {
  return [...byKind(objects, 'StatefulSet'), ...byKind(objects, 'Deployment')].flatMap((workload) => {
    const pod = workload.spec?.template?.spec ?? {};
    return (pod.containers ?? []).filter(isNats).map((container) => {
      const args = container.args ?? [];
      const configPath = args.includes('-c') ? args[args.indexOf('-c') + 1] : undefined;
      const mountOf = (path) =>
        (container.volumeMounts ?? []).filter((mount) => path?.startsWith(mount.mountPath)).sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
      const configMount = mountOf(configPath);
      const configMapName = (pod.volumes ?? []).find((volume) => volume.name === configMount?.name)?.configMap?.name;
      const configMap = byKind(objects, 'ConfigMap').find((map) => nameOf(map) === configMapName);
      const conf = configPath && configMap ? configMap.data?.[configPath.split('/').pop()] : undefined;
      const storeMount = mountOf(conf ? setting(conf, 'store_dir')?.replace(/"/g, '') : undefined);
      const volume = (pod.volumes ?? []).find((candidate) => candidate.name === storeMount?.name);
      const claim = (workload.spec?.volumeClaimTemplates ?? []).find((template) => template.metadata?.name === storeMount?.name);
      const volumeBytes = quantityBytes(claim?.spec?.resources?.requests?.storage ?? volume?.emptyDir?.sizeLimit);
      return { workload, pod, container, conf, volumeBytes };
    });
  });
}

/** NATS servers without bounded JetStream storage, or with more than their volume or memory holds, or less than the usage stream asks. */
export function natsStorageProblems(label, objects) {
  const problems = [];
  const streamMaxBytes = Number(gatewayConfigOf(objects)?.data?.USAGE_STREAM_MAX_BYTES ?? DEFAULT_STREAM_MAX_BYTES);
  for (const { workload, container, conf, volumeBytes } of natsServers(objects)) {
    const at = `${label}: ${workload.kind} ${nameOf(workload)}`;
    if (conf === undefined) {
      problems.push(`${at}: NATS runs without a config file from a ConfigMap (-c), so its max_file_store and max_memory_store are unset`);
      continue;
    }
    const fileStore = natsSize(setting(conf, 'max_file_store'));
    const memoryStore = natsSize(setting(conf, 'max_memory_store'));
    if (fileStore === undefined) problems.push(`${at}: jetstream has no max_file_store: JetStream would take the volume until it is full`);
    if (memoryStore === undefined) problems.push(`${at}: jetstream has no max_memory_store`);
    if (volumeBytes === undefined)
      problems.push(`${at}: the JetStream store_dir is not on a volume of known size (a volumeClaimTemplate, or an emptyDir with sizeLimit)`);
    else if (fileStore !== undefined && fileStore > volumeBytes * MAX_STORE_SHARE)
      problems.push(
        `${at}: max_file_store (${fileStore} bytes) leaves less than ${Math.round((1 - MAX_STORE_SHARE) * 100)}% of its ${volumeBytes}-byte volume free`,
      );
    const memoryLimit = quantityBytes(container.resources?.limits?.memory);
    if (memoryStore !== undefined && memoryLimit !== undefined && memoryStore >= memoryLimit / 2)
      problems.push(`${at}: max_memory_store (${memoryStore} bytes) is not under half of the container's memory limit (${memoryLimit} bytes)`);
    if (fileStore !== undefined && streamMaxBytes > fileStore)
      problems.push(`${at}: USAGE_STREAM_MAX_BYTES (${streamMaxBytes}) does not fit its max_file_store (${fileStore}): JetStream refuses the usage stream`);
  }
  return problems;
}

/** NATS servers without the official exporter beside them, or whose exporter no PodMonitor of the render scrapes. */
export function natsExporterProblems(label, objects) {
  const problems = [];
  const monitors = byKind(objects, 'PodMonitor');
  for (const { workload, pod } of natsServers(objects)) {
    const at = `${label}: ${workload.kind} ${nameOf(workload)}`;
    const exporter = (pod.containers ?? []).find((container) => EXPORTER_IMAGE.test(String(container.image)));
    if (!exporter) {
      problems.push(`${at}: no natsio/prometheus-nats-exporter container beside NATS: JetStream's storage is not exported`);
      continue;
    }
    if (!(exporter.args ?? []).some((arg) => /^-jsz(=|$)/.test(arg))) problems.push(`${at}: the NATS exporter does not export JetStream (-jsz)`);
    if (!(exporter.ports ?? []).some((port) => port.name === 'metrics')) problems.push(`${at}: the NATS exporter has no port named metrics`);
    if (monitors.length === 0) continue;
    const podLabels = workload.spec?.template?.metadata?.labels ?? {};
    const scraped = monitors.some((monitor) => {
      const selector = monitor.spec?.selector ?? {};
      const labelsMatch = Object.entries(selector.matchLabels ?? {}).every(([key, value]) => podLabels[key] === value);
      const expressionsMatch = (selector.matchExpressions ?? []).every((expression) =>
        expression.operator === 'In'
          ? (expression.values ?? []).includes(podLabels[expression.key])
          : expression.operator !== 'NotIn' || !(expression.values ?? []).includes(podLabels[expression.key]),
      );
      return labelsMatch && expressionsMatch && (monitor.spec?.podMetricsEndpoints ?? []).some((endpoint) => endpoint.port === 'metrics');
    });
    if (!scraped) problems.push(`${at}: no PodMonitor scrapes the NATS exporter's metrics port`);
  }
  return problems;
}
