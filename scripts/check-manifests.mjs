// Checks the deployment files without a cluster: every YAML under deploy/ parses, every
// kustomization's resources, components and patches exist (and no manifest is left unlisted),
// each overlay's objects hold together (Services select a Deployment or StatefulSet, probes and targetPorts name
// declared ports, patches and the HPA target existing objects, config references resolve), and
// every Deployment and StatefulSet has an image, probes, resources and a non-root, read-only security context.
// When `kubectl` or `kustomize` is on PATH each overlay is also rendered for real and the rendered
// objects get the same checks (so do the examples under deploy/examples, rendered). Every object, as written and as rendered, is validated against the
// Kubernetes OpenAPI schemas (kubernetes-models, and its sibling packages for the CRDs:
// scripts/manifests/schemas.mjs): an unknown field, a wrong type or a missing required field fails.
// Every namespaced object an overlay renders must have a namespace (scripts/manifests/namespaces.mjs),
// and its NetworkPolicies, evaluated as a network plugin enforces them, must allow each flow the
// gateway needs and no other way into auth, the router, the executors or metering, nor the
// executors' egress to metadata or cluster addresses (scripts/manifests/connectivity.mjs).
// How it runs (scripts/manifests/operations.mjs): NATS probed as the official chart does, with
// GOMEMLIMIT under its memory limit, its JetStream storage bounded (max_file_store,
// max_memory_store) under its volume and memory and over the usage stream's USAGE_STREAM_MAX_BYTES,
// with the official NATS exporter beside it, scraped (scripts/manifests/nats-storage.mjs); gateway
// probes that wait for a busy pod, a startup probe before liveness (auth's and metering's outlasting
// a Redis or NATS outage), liveness slower than readiness; gateway Deployments and NATS spread over
// zones and hosts, PodDisruptionBudgets of maxUnavailable 1, autoscalers for the edges, executors,
// auth, metering and the guard in the prod overlays, each on CPU, on a custom metric only beside an adapter and
// at deploy/README.md's capacity table's target; each Secret only to the services that read it (the
// executors never hold Redis's); gateway-config hashed, the catalog and plans hashed or kept by name
// for live reload (then mounted as directories, reloading on), each read by its rendered name; and a
// public entry point (the HTTPRoute of components/gateway-api in the prod overlays, the Ingress of
// the optional ingress-nginx component) that keeps /admin, /console and the admin port private, lets
// streams run an hour unbuffered and takes the edge's body limit.
// Each service of each rendered overlay gets what its config schema reads (its build's
// services/<name>/dist/config.js): every required variable set, every ConfigMap and Secret it takes
// rendered or created by the operator (deploy/README.md), every address it connects to a Service the
// overlay renders, never the pod itself (scripts/manifests/environment.mjs); and every HTTPRoute and
// Ingress to the edge routes exactly the paths the edge's public port serves (its table,
// services/edge/src/public-paths.ts), with MCP_OAUTH_REDIRECT_URL on the route's host and a route
// timeout past the WebSocket's lifetime and a margin (scripts/manifests/public-routes.mjs).
// docker-compose.yml is parsed and checked for the services it must run, and NATS's storage bounds.
// Alerting rules (PrometheusRule): every alert has a severity, a summary, a description and a
// runbook under docs/runbooks/ named after it, and every metric the rules read is one a service
// declares, with the labels the rules use. Where `promtool` is on PATH (scripts/test.sh installs
// it) the rule groups are also checked by `promtool check rules` and unit-tested by
// `promtool test rules` with the `*.test.yaml` files beside them that read them (their rule_files).
//
//   node scripts/check-manifests.mjs        exit 0 when all hold, 1 with a list of problems
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, parse, stringify } from 'yaml';
import { connectivityProblems, gatewayConfigOf } from './manifests/connectivity.mjs';
import { configSchemas, environmentProblems } from './manifests/environment.mjs';
import { publicPaths, publicRouteProblems } from './manifests/public-routes.mjs';
import { namespaceProblems } from './manifests/namespaces.mjs';
import { natsUserProblems } from './manifests/nats-users.mjs';
import {
  autoscalerMetricProblems,
  autoscalerProblems,
  capacityTargets,
  OPERATOR_SECRETS,
  operationProblems,
  productionEntryProblems,
} from './manifests/operations.mjs';
import { cloudIdentityProblems } from './manifests/cloud-identity.mjs';
import { findRenderer, render, renderComponent } from './manifests/render.mjs';
import { schemaProblems } from './manifests/schemas.mjs';
import { productionMonitoringProblems } from './manifests/monitoring.mjs';
import { shutdownProblems } from './manifests/shutdown.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const deployDir = join(root, 'deploy');
const SERVICES = ['edge', 'auth', 'router', 'executor', 'metering', 'mcp', 'guard', 'cache', 'batch'];
const GRPC_PORTS = { auth: 50051, router: 50052, executor: 50053, metering: 50054, guard: 50056, mcp: 50057 };
/**
 * The services probed over HTTP (/readyz, /healthz) instead, with the port they are probed on (its
 * name and number): the edge on its API port, the cache on its metrics port, whose /readyz says
 * whether its settings are read (its gRPC health does not), the batch service on its metrics port,
 * whose /readyz says whether its PostgreSQL is connected and migrated.
 */
const HTTP_PROBE_PORTS = { edge: ['http', 8080], cache: ['metrics', 9108], batch: ['metrics', 9109] };
/**
 * Metrics the rules may read before any service declares them, each with the change that adds it.
 * Once a service declares one, the check fails until it is removed from here.
 */
const PENDING_METRICS = {};
/** Labels Prometheus adds at scrape (the PodMonitor's target labels) or histograms carry; no service declares them. */
const SCRAPE_LABELS = new Set(['namespace', 'pod', 'container', 'job', 'instance', 'endpoint', 'le', 'service']);

/** Records the schema problems of objects (scripts/manifests/schemas.mjs) as checks. */
async function validateSchemas(label, objects) {
  const found = await schemaProblems(label, objects);
  for (const problem of found) check(false, problem);
  check(true, `${label}: schemas`);
}

const problems = [];
let checks = 0;
const rel = (path) => relative(root, path) || '.';
/** Records one check; `ok` false adds the message to the problems. */
function check(ok, message) {
  checks += 1;
  if (!ok) problems.push(message);
  return ok;
}

/** Every file below a folder. */
function walk(folder) {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

/** Parses a YAML file into its documents (nulls dropped); records parse errors. */
function loadYaml(path) {
  const documents = parseAllDocuments(readFileSync(path, 'utf8'), { merge: true }); // compose uses << merge keys
  const parsed = [];
  for (const document of documents) {
    if (!check(document.errors.length === 0, `${rel(path)}: YAML error: ${document.errors[0]?.message}`)) continue;
    const value = document.toJS();
    if (value !== null && value !== undefined) parsed.push(value);
  }
  return parsed;
}

const kustomizationFile = (folder) => ['kustomization.yaml', 'kustomization.yml', 'Kustomization'].map((name) => join(folder, name)).find(existsSync);

// 1. Every YAML file under deploy/ parses, and every object in it has apiVersion, kind and a name,
// except the data files a generator turns into a ConfigMap (the catalog, the plans).
const yamlFiles = walk(deployDir).filter((path) => /\.ya?ml$/.test(path));
check(yamlFiles.length > 0, 'deploy/ has no YAML files');
const DATA_FILES = new Set(['catalog.yaml', 'plans.yaml'].map((name) => join(deployDir, 'base', name)));
/** promtool's unit tests of alerting rules (`<name>.test.yaml` beside the PrometheusRule): data, not manifests. */
const isRuleTest = (path) => /\.test\.ya?ml$/.test(path);
for (const path of yamlFiles) {
  if (DATA_FILES.has(path) || isRuleTest(path)) {
    loadYaml(path);
    continue;
  }
  for (const object of loadYaml(path)) {
    check(typeof object.apiVersion === 'string' && typeof object.kind === 'string', `${rel(path)}: an object without apiVersion or kind`);
    if (!/^kustomization\.ya?ml$/.test(path.split('/').pop())) check(Boolean(object.metadata?.name), `${rel(path)}: a ${object.kind} without metadata.name`);
  }
}

/**
 * Collects a kustomization's objects the simple way (resources and components, recursively, patches
 * checked for their target but not applied) and checks its references on the way.
 */
function collect(folder, seen = new Set()) {
  const file = kustomizationFile(folder);
  if (!check(Boolean(file), `${rel(folder)}: no kustomization.yaml`)) return { objects: [], patches: [] };
  if (seen.has(folder)) return { objects: [], patches: [] };
  seen.add(folder);
  const [kustomization = {}] = loadYaml(file);
  const isComponent = kustomization.kind === 'Component';
  check(
    isComponent ? kustomization.apiVersion === 'kustomize.config.k8s.io/v1alpha1' : kustomization.kind === 'Kustomization',
    `${rel(file)}: kind must be Kustomization (or Component with apiVersion kustomize.config.k8s.io/v1alpha1)`,
  );
  const objects = [];
  const patches = [];
  const listed = new Set([file]);
  for (const entry of kustomization.resources ?? []) {
    const path = resolve(folder, entry);
    if (!check(existsSync(path), `${rel(file)}: resource ${entry} does not exist`)) continue;
    if (statSync(path).isDirectory()) {
      const nested = collect(path, seen);
      objects.push(...nested.objects);
      patches.push(...nested.patches);
    } else {
      listed.add(path);
      objects.push(...loadYaml(path).map((object) => ({ ...object, source: rel(path) })));
    }
  }
  for (const entry of kustomization.components ?? []) {
    const path = resolve(folder, entry);
    if (!check(existsSync(path) && statSync(path).isDirectory(), `${rel(file)}: component ${entry} is not a folder`)) continue;
    const componentFile = kustomizationFile(path);
    const [component = {}] = componentFile ? loadYaml(componentFile) : [];
    check(component.kind === 'Component', `${rel(file)}: component ${entry} is not a kind: Component`);
    const nested = collect(path, seen);
    objects.push(...nested.objects);
    patches.push(...nested.patches);
  }
  for (const entry of [...(kustomization.patches ?? []), ...(kustomization.patchesStrategicMerge ?? []).map((path) => ({ path }))]) {
    if (typeof entry.patch === 'string') continue; // inline patch
    const path = resolve(folder, entry.path ?? '');
    if (!check(Boolean(entry.path) && existsSync(path), `${rel(file)}: patch ${entry.path} does not exist`)) continue;
    listed.add(path);
    for (const patch of loadYaml(path))
      patches.push({ kind: entry.target?.kind ?? patch.kind, name: entry.target?.name ?? patch.metadata?.name, source: rel(path) });
  }
  for (const generator of [...(kustomization.configMapGenerator ?? []), ...(kustomization.secretGenerator ?? [])]) {
    for (const entry of [...(generator.files ?? []), ...(generator.envs ?? [])]) {
      const path = resolve(folder, String(entry).split('=').pop());
      check(existsSync(path), `${rel(file)}: generator ${generator.name} file ${entry} does not exist`);
      listed.add(path);
    }
    const kind = generator.name && kustomization.secretGenerator?.includes(generator) ? 'Secret' : 'ConfigMap';
    // `behavior: merge` or `replace` changes the bases' object of that name: a patch, not another object.
    if (['merge', 'replace'].includes(generator.behavior)) patches.push({ kind, name: generator.name, source: rel(file) });
    else objects.push({ apiVersion: 'v1', kind, metadata: { name: generator.name }, data: generatedData(folder, generator), source: rel(file) });
  }
  for (const entry of kustomization.replicas ?? []) patches.push({ kind: 'Deployment', name: entry.name, source: `${rel(file)} replicas` });
  // A manifest in this folder that no kustomization lists is never deployed: most likely a mistake.
  for (const name of readdirSync(folder).filter((name) => /\.ya?ml$/.test(name) && !isRuleTest(name))) {
    check(listed.has(join(folder, name)), `${rel(join(folder, name))}: not listed in ${rel(file)}`);
  }
  return { objects, patches };
}

/** A generator's `envs` files and `literals` as data (VARIABLE=value lines; `#` comments and blank lines skipped). */
function generatedData(folder, generator) {
  const lines = [
    ...(generator.envs ?? []).flatMap((entry) => {
      const path = resolve(folder, String(entry));
      return existsSync(path) ? readFileSync(path, 'utf8').split('\n') : [];
    }),
    ...(generator.literals ?? []).map(String),
  ];
  const pairs = lines.filter((line) => line.includes('=') && !line.trimStart().startsWith('#')).map((line) => line.split(/=(.*)/s).slice(0, 2));
  return Object.fromEntries(pairs.map(([key, value]) => [key.trim(), value]));
}

const probeKinds = ['httpGet', 'grpc', 'tcpSocket', 'exec'];

/** Checks one set of objects (an overlay, collected or rendered) for consistency and hardening. */
function validate(label, objects, patches = []) {
  const byKind = (kind) => objects.filter((object) => object.kind === kind);
  const deployments = byKind('Deployment');
  // Every workload gets the same checks; Services may select any of them.
  const workloads = [...deployments, ...byKind('StatefulSet')];
  // Each gateway container's delay + grace + 5 s within its pod's grace period (manifests/shutdown.mjs).
  for (const problem of shutdownProblems(root, label, objects)) check(false, problem);
  const services = byKind('Service');
  const names = new Set(objects.map((object) => `${object.kind}/${object.metadata?.name}`));
  const where = (object) => `${label}: ${object.kind}/${object.metadata?.name}${object.source ? ` (${object.source})` : ''}`;

  for (const patch of patches)
    check(names.has(`${patch.kind}/${patch.name}`), `${label}: ${patch.source} patches ${patch.kind}/${patch.name}, which is not there`);
  for (const name of names)
    check(objects.filter((object) => `${object.kind}/${object.metadata?.name}` === name).length === 1, `${label}: ${name} is defined twice`);

  // Rendered, a workload an autoscaler owns carries no replica count (scripts/manifests/operations.mjs).
  for (const autoscaler of byKind('HorizontalPodAutoscaler')) {
    const target = workloads.find(
      (workload) => workload.kind === autoscaler.spec?.scaleTargetRef?.kind && workload.metadata?.name === autoscaler.spec?.scaleTargetRef?.name,
    );
    check(
      Boolean(target),
      `${where(autoscaler)}: scales ${autoscaler.spec?.scaleTargetRef?.kind}/${autoscaler.spec?.scaleTargetRef?.name}, which is not there`,
    );
  }

  for (const deployment of workloads) {
    const at = where(deployment);
    const template = deployment.spec?.template ?? {};
    const pod = template.spec ?? {};
    const selector = deployment.spec?.selector?.matchLabels ?? {};
    check(Object.keys(selector).length > 0, `${at}: spec.selector.matchLabels is empty`);
    check(
      Object.entries(selector).every(([key, value]) => template.metadata?.labels?.[key] === value),
      `${at}: the selector does not match the pod template's labels`,
    );
    const containers = pod.containers ?? [];
    check(containers.length > 0, `${at}: no containers`);
    check(
      pod.securityContext?.runAsNonRoot === true || containers.every((container) => container.securityContext?.runAsNonRoot === true),
      `${at}: runAsNonRoot is not set`,
    );
    const volumes = new Set(
      [...(pod.volumes ?? []), ...(deployment.spec?.volumeClaimTemplates ?? []).map((claim) => claim.metadata ?? {})].map((volume) => volume.name),
    );
    for (const container of containers) {
      const cat = `${at} container ${container.name}`;
      check(typeof container.image === 'string' && container.image.length > 0, `${cat}: no image`);
      const ports = new Map((container.ports ?? []).map((port) => [port.name, port.containerPort]));
      const portNumbers = new Set(ports.values());
      for (const probeName of ['readinessProbe', 'livenessProbe']) {
        const probe = container[probeName];
        if (!check(probe && probeKinds.some((kind) => probe[kind]), `${cat}: no ${probeName}`)) continue;
        const port = probe.httpGet?.port ?? probe.grpc?.port ?? probe.tcpSocket?.port;
        if (port !== undefined)
          check(
            typeof port === 'number' ? portNumbers.has(port) : ports.has(port),
            `${cat}: ${probeName} uses port ${port}, which the container does not declare`,
          );
      }
      check(Boolean(container.resources?.requests?.cpu && container.resources?.requests?.memory), `${cat}: resources.requests needs cpu and memory`);
      check(Boolean(container.resources?.limits?.memory), `${cat}: resources.limits.memory is not set`);
      check(container.securityContext?.readOnlyRootFilesystem === true, `${cat}: readOnlyRootFilesystem is not true`);
      check(container.securityContext?.allowPrivilegeEscalation === false, `${cat}: allowPrivilegeEscalation is not false`);
      for (const mount of container.volumeMounts ?? []) check(volumes.has(mount.name), `${cat}: mounts volume ${mount.name}, which the pod does not define`);
      for (const source of container.envFrom ?? []) {
        if (source.configMapRef)
          check(
            names.has(`ConfigMap/${source.configMapRef.name}`) || source.configMapRef.optional === true,
            `${cat}: envFrom ConfigMap ${source.configMapRef.name} is not there`,
          );
        if (source.secretRef)
          check(
            names.has(`Secret/${source.secretRef.name}`) || source.secretRef.optional === true || source.secretRef.name in OPERATOR_SECRETS,
            `${cat}: envFrom Secret ${source.secretRef.name} is neither there, nor optional, nor one the operator creates`,
          );
      }
      for (const variable of container.env ?? []) {
        const reference = variable.valueFrom?.secretKeyRef ?? variable.valueFrom?.configMapKeyRef;
        const kind = variable.valueFrom?.secretKeyRef ? 'Secret' : 'ConfigMap';
        if (reference)
          check(
            names.has(`${kind}/${reference.name}`) || reference.optional === true || (kind === 'Secret' && reference.name in OPERATOR_SECRETS),
            `${cat}: ${variable.name} refers to ${kind} ${reference.name}, which is neither there, nor optional, nor one the operator creates`,
          );
      }
    }
  }

  for (const service of services) {
    const at = where(service);
    const selector = service.spec?.selector ?? {};
    if (!check(Object.keys(selector).length > 0, `${at}: no selector`)) continue;
    const targets = workloads.filter((deployment) =>
      Object.entries(selector).every(([key, value]) => deployment.spec?.template?.metadata?.labels?.[key] === value),
    );
    if (!check(targets.length > 0, `${at}: selects no Deployment or StatefulSet`)) continue;
    for (const port of service.spec?.ports ?? []) {
      check(typeof port.port === 'number', `${at}: a port without a number`);
      if (typeof port.targetPort === 'string') {
        check(
          targets.every((deployment) =>
            deployment.spec.template.spec.containers.some((container) => (container.ports ?? []).some((declared) => declared.name === port.targetPort)),
          ),
          `${at}: targetPort ${port.targetPort} is not a named port of ${targets.map((deployment) => deployment.metadata.name).join(', ')}`,
        );
      }
    }
  }

  // The gateway's own shape: the base's services, gRPC ones probed over gRPC on their port, the edge,
  // the cache and the batch service over HTTP, and the edge reaching executors through the headless Service.
  for (const service of SERVICES) {
    const deployment = deployments.find((object) => object.metadata?.name === service);
    if (!check(Boolean(deployment), `${label}: no Deployment ${service}`)) continue;
    check(
      services.some((object) => object.metadata?.name === service),
      `${label}: no Service ${service}`,
    );
    const container = deployment.spec.template.spec.containers?.[0] ?? {};
    check(
      JSON.stringify(container.command ?? container.args ?? []).includes(`services/${service}/dist/main.js`),
      `${label}: Deployment ${service} does not run services/${service}/dist/main.js`,
    );
    if (GRPC_PORTS[service]) {
      check(
        container.readinessProbe?.grpc?.port === GRPC_PORTS[service] && container.livenessProbe?.grpc?.port === GRPC_PORTS[service],
        `${label}: ${service} must be probed over gRPC on ${GRPC_PORTS[service]}`,
      );
    } else {
      const ports = HTTP_PROBE_PORTS[service] ?? [];
      const onPort = (probe) => ports.includes(probe?.httpGet?.port);
      check(
        container.readinessProbe?.httpGet?.path === '/readyz' &&
          container.livenessProbe?.httpGet?.path === '/healthz' &&
          onPort(container.readinessProbe) &&
          onPort(container.livenessProbe),
        `${label}: ${service} must be probed on /readyz (readiness) and /healthz (liveness) of its ${ports[0]} port (${ports[1]})`,
      );
    }
  }
  // Generated, so rendered with its content's hash: gateway-config-<hash>.
  const config = gatewayConfigOf(byKind('ConfigMap'));
  if (check(Boolean(config), `${label}: no ConfigMap gateway-config`)) {
    // The edge's long-lived streams to auth, the router, the executors, the guard (its checks on
    // every request a policy names, its policy watch) and the cache (a lookup on every request a
    // setting covers, its settings watch) and the batch service (files uploaded and read as streams)
    // spread over every pod only through headless Services (a ClusterIP pins a connection, and its
    // streams, to one pod).
    for (const [variable, port] of [
      ['AUTH_SERVICE_ADDR', 50051],
      ['ROUTER_SERVICE_ADDR', 50052],
      ['EXECUTOR_SERVICE_ADDR', 50053],
      ['GUARD_SERVICE_ADDR', 50056],
      ['CACHE_SERVICE_ADDR', 50058],
      ['BATCH_SERVICE_ADDR', 50059],
    ]) {
      const address = String(config.data?.[variable] ?? '');
      const headlessName = /^dns:\/\/\/([^:.]+)/.exec(address)?.[1];
      const headless = services.find((object) => object.metadata?.name === headlessName);
      check(
        Boolean(headless) && headless.spec?.clusterIP === 'None' && address.endsWith(`:${port}`),
        `${label}: ${variable} (${address}) must be dns:///<headless Service>:${port}`,
      );
    }
  }
}

// 2. Each overlay (and the base) collected from its parts.
const overlays = existsSync(join(deployDir, 'overlays'))
  ? readdirSync(join(deployDir, 'overlays'))
      .map((name) => join(deployDir, 'overlays', name))
      .filter((path) => statSync(path).isDirectory())
  : [];
check(overlays.length > 0, 'deploy/overlays has no overlay');
for (const folder of [join(deployDir, 'base'), ...overlays]) {
  const { objects, patches } = collect(folder);
  validate(rel(folder), objects, patches);
  // Generated objects carry no data here; the rendered ones below are validated whole.
  await validateSchemas(
    rel(folder),
    objects.filter((object) => !String(object.source).endsWith('kustomization.yaml')),
  );
}
// Components are checked through the overlays that use them; a component no overlay uses is dead,
// but for the optional ones an operator adds, rendered below onto what they are added to:
// ingress-nginx (the retired controller, for the clusters that still run it) and aws-bedrock (an
// AWS identity for the executors) on the base, and autoscale-on-concurrency (needs a metrics
// adapter) on overlays/prod, whose autoscalers it patches.
const STANDALONE_COMPONENTS = {
  'ingress-nginx': 'base',
  'aws-bedrock': 'base',
  'autoscale-on-concurrency': 'overlays/prod',
  // The executors' (and the guard's, on GKE) cloud identities on GKE and AKS, like aws-bedrock's on EKS.
  'gke-workload-identity': 'base',
  'azure-workload-identity': 'base',
};
// Components that only open a flow under components/network-policy, for some clusters (the GKE
// metadata server for Vertex AI): rendered on the base with network-policy, their connectivity
// checked (the flow open to whom it is for, and to nobody else).
const POLICY_COMPONENTS = ['vertex-metadata-egress'];
// The policies with every store in the cluster (overlays/dev runs Redis, the Responses Redis, the
// cache's Redis, NATS, PostgreSQL and the request log) and the OTLP egress: each store's ingress policy checked against
// its clients, as an operator adding components/network-policy to such an overlay would have them.
const POLICIES_ON_STORES = { components: ['network-policy', 'otlp-egress'], onto: 'overlays/dev' };
/** API groups whose schema package is not installed: their objects are checked for consistency only. */
const UNSCHEMED_GROUPS = Object.entries({ 'gateway.networking.k8s.io': 'gateway-api', 'cert-manager.io': 'cert-manager' })
  .filter(([, name]) => !existsSync(join(root, 'node_modules', '@kubernetes-models', name)))
  .map(([group]) => group);
const componentsDir = join(deployDir, 'components');
if (existsSync(componentsDir)) {
  for (const name of readdirSync(componentsDir)) {
    const used = overlays.some((folder) =>
      (parse(readFileSync(kustomizationFile(folder) ?? '/dev/null', 'utf8') || '{}')?.components ?? []).some(
        (entry) => resolve(folder, entry) === join(componentsDir, name),
      ),
    );
    check(used || name in STANDALONE_COMPONENTS || POLICY_COMPONENTS.includes(name), `deploy/components/${name}: no overlay uses it`);
    collect(join(componentsDir, name));
  }
}

// 3. Render for real when a renderer is here (CI machines may have none); the rendered objects get
// the checks above, their namespaces, and the connectivity their NetworkPolicies allow.
const renderer = findRenderer();
// In CI the rendered checks must run: without a renderer they would be skipped unseen.
if (process.env.CI === 'true')
  check(
    renderer !== undefined,
    'no renderer on PATH (kubectl kustomize, or kustomize build): CI renders every overlay; install kubectl (kustomize v4 or later)',
  );
/** The autoscalers' per-pod targets, from deploy/README.md's capacity table. */
const capacity = capacityTargets(root);
/**
 * What each service reads (its built config schema) and the paths the edge's public port serves (its
 * built table): each rendered overlay must give every service what it reads (scripts/manifests/environment.mjs)
 * and route every public path (scripts/manifests/public-routes.mjs).
 */
const built = renderer ? await Promise.all([configSchemas(root), publicPaths(root)]).catch((error) => check(false, error.message)) : undefined;
const [schemas, publicPathTable] = Array.isArray(built) ? built : [];
/**
 * The environment and entry-point problems of a rendered set, once the builds are read; of a whole
 * overlay, or (`partial`) of a component on the base alone, which has no Redis or NATS of its own.
 */
const flowProblems = (label, objects, partial = false) =>
  schemas
    ? [
        ...(partial ? [] : [...environmentProblems(label, objects, schemas), ...natsUserProblems(label, objects)]),
        ...publicRouteProblems(label, objects, publicPathTable, schemas.edge, { overlay: !partial }),
      ]
    : [];
if (renderer) {
  for (const folder of overlays) {
    const label = `${rel(folder)} (rendered by ${renderer[0]})`;
    let objects;
    try {
      objects = render(renderer, folder);
    } catch (error) {
      check(false, `${rel(folder)}: ${renderer[0]} ${renderer[1].join(' ')} failed: ${String(error.stderr || error.message).trim()}`);
      continue;
    }
    validate(label, objects);
    await validateSchemas(
      label,
      objects.filter((object) => !UNSCHEMED_GROUPS.includes(String(object.apiVersion).split('/')[0])),
    );
    for (const problem of [
      ...namespaceProblems(label, objects),
      ...connectivityProblems(label, objects),
      ...operationProblems(root, label, objects),
      ...flowProblems(label, objects),
      ...cloudIdentityProblems(label, objects),
    ])
      check(false, problem);
    const production = basename(folder).startsWith('prod');
    for (const problem of [
      ...autoscalerProblems(label, objects, production),
      ...autoscalerMetricProblems(label, objects, capacity),
      ...(production ? productionEntryProblems(label, objects) : []),
      ...(production ? productionMonitoringProblems(label, objects) : []),
    ])
      check(false, problem);
    check(true, `${label}: namespaces, NetworkPolicy connectivity, probes, placement, rollout, autoscalers and entry point`);
  }
  // Each optional component onto what an operator adds it to, in a namespace, as an overlay would put it.
  for (const [name, onto] of Object.entries(STANDALONE_COMPONENTS)) {
    const label = `deploy/components/${name} on deploy/${onto} (rendered by ${renderer[0]})`;
    let objects;
    try {
      objects = renderComponent(renderer, deployDir, name, onto);
    } catch (error) {
      check(false, `${label}: ${String(error.stderr || error.message).trim()}`);
      continue;
    }
    validate(label, objects);
    for (const problem of [
      ...operationProblems(root, label, objects),
      ...flowProblems(label, objects, onto === 'base'),
      ...cloudIdentityProblems(label, objects),
    ])
      check(false, problem);
    // Added only beside an adapter (its kustomization says so): the targets still come from the table.
    for (const problem of autoscalerMetricProblems(label, objects, capacity, { adapter: false })) check(false, problem);
    await validateSchemas(
      label,
      objects.filter((object) => !UNSCHEMED_GROUPS.includes(String(object.apiVersion).split('/')[0])),
    );
  }
  // Each policy component on the base with the default policy, as an overlay would add it.
  for (const name of POLICY_COMPONENTS) {
    const label = `deploy/components/${name} with network-policy on deploy/base (rendered by ${renderer[0]})`;
    let objects;
    try {
      objects = renderComponent(renderer, deployDir, ['network-policy', name]);
    } catch (error) {
      check(false, `${label}: ${String(error.stderr || error.message).trim()}`);
      continue;
    }
    validate(label, objects);
    await validateSchemas(label, objects);
    for (const problem of [...connectivityProblems(label, objects), ...operationProblems(root, label, objects)]) check(false, problem);
    check(true, `${label}: NetworkPolicy connectivity`);
  }
  // The examples under deploy/examples (an overlay with something an operator adds, such as
  // CloudNativePG's Cluster), rendered and checked as the overlays are; the objects of an operator's
  // CRDs are not schema-checked here (their packages are not installed).
  const examplesDir = join(deployDir, 'examples');
  for (const name of existsSync(examplesDir) ? readdirSync(examplesDir).filter((entry) => kustomizationFile(join(examplesDir, entry))) : []) {
    const label = `deploy/examples/${name} (rendered by ${renderer[0]})`;
    let objects;
    try {
      objects = render(renderer, join(examplesDir, name));
    } catch (error) {
      check(false, `${label}: ${String(error.stderr || error.message).trim()}`);
      continue;
    }
    validate(label, objects);
    await validateSchemas(
      label,
      objects.filter((object) => [...UNSCHEMED_GROUPS, 'postgresql.cnpg.io'].every((group) => !String(object.apiVersion).startsWith(`${group}/`))),
    );
    for (const problem of [...namespaceProblems(label, objects), ...connectivityProblems(label, objects), ...operationProblems(root, label, objects)])
      check(false, problem);
  }
  {
    const label = `deploy/components/${POLICIES_ON_STORES.components.join(' and ')} on deploy/${POLICIES_ON_STORES.onto} (rendered by ${renderer[0]})`;
    try {
      const objects = renderComponent(renderer, deployDir, POLICIES_ON_STORES.components, POLICIES_ON_STORES.onto);
      validate(label, objects);
      await validateSchemas(label, objects);
      for (const problem of [...connectivityProblems(label, objects), ...flowProblems(label, objects)]) check(false, problem);
      check(true, `${label}: NetworkPolicy connectivity to every store`);
    } catch (error) {
      check(false, `${label}: ${String(error.stderr || error.message).trim()}`);
    }
  }
} else {
  console.log('check-manifests: no kubectl or kustomize here; overlays checked from their parts only');
}

// The catalog the base ships as a ConfigMap is the image's own.
const shippedCatalog = join(deployDir, 'base', 'catalog.yaml');
check(
  existsSync(shippedCatalog) && readFileSync(shippedCatalog, 'utf8') === readFileSync(join(root, 'packages', 'catalog', 'catalog.yaml'), 'utf8'),
  'deploy/base/catalog.yaml differs from packages/catalog/catalog.yaml: copy it over',
);
// So are the plans.
const shippedPlans = join(deployDir, 'base', 'plans.yaml');
check(
  existsSync(shippedPlans) && readFileSync(shippedPlans, 'utf8') === readFileSync(join(root, 'services', 'auth', 'plans.yaml'), 'utf8'),
  'deploy/base/plans.yaml differs from services/auth/plans.yaml: copy it over',
);

// The Secrets the operator creates are each documented with the command that creates them, in
// deploy/README.md or a deployment page of the docs (docs/deploy-*.md).
const docsDir = join(root, 'docs');
const deployPages = existsSync(docsDir)
  ? readdirSync(docsDir)
      .filter((name) => /^deploy-.*\.md$/.test(name))
      .map((name) => join(docsDir, name))
  : [];
const deployReadme = [join(deployDir, 'README.md'), ...deployPages]
  .filter(existsSync)
  .map((path) => readFileSync(path, 'utf8'))
  .join('\n');
for (const secret of Object.keys(OPERATOR_SECRETS))
  check(
    deployReadme.includes(`create secret generic ${secret}`),
    `deploy/README.md: no \`kubectl create secret generic ${secret}\` (there or in docs/deploy-*.md) for a Secret the workloads require`,
  );

// 4. Alerting rules.
checkAlertRules(
  yamlFiles.flatMap((path) =>
    loadYaml(path)
      .filter((object) => object.kind === 'PrometheusRule')
      .map((object) => ({ object, path })),
  ),
);

// 5. docker-compose.yml: parses, runs the dependencies and the base's services, edge on 8080, the
// cache's entries in a bounded, evicting Redis of their own.
const composePath = join(root, 'docker-compose.yml');
if (check(existsSync(composePath), 'docker-compose.yml is missing')) {
  const [compose = {}] = loadYaml(composePath);
  const composeServices = compose.services ?? {};
  for (const name of ['redis', 'redis-cache', 'nats', ...SERVICES]) {
    const service = composeServices[name];
    if (!check(Boolean(service), `docker-compose.yml: no service ${name}`)) continue;
    check(Boolean(service.image || service.build), `docker-compose.yml: ${name} has neither image nor build`);
    for (const dependency of Object.keys(service.depends_on ?? {}))
      check(dependency in composeServices, `docker-compose.yml: ${name} depends on unknown ${dependency}`);
  }
  check(JSON.stringify(composeServices.nats?.command ?? '').includes('-js'), 'docker-compose.yml: nats must run with -js');
  // JetStream bounded as in the deployment: a config (compose's `configs`) with max_file_store.
  const natsConfigs = (composeServices.nats?.configs ?? []).map((config) => compose.configs?.[config.source ?? config]?.content ?? '');
  check(
    natsConfigs.some((content) => /max_file_store\s*[:=]/.test(content) && /max_memory_store\s*[:=]/.test(content)),
    'docker-compose.yml: nats must read a config with max_file_store and max_memory_store (configs)',
  );
  check(
    (composeServices.edge?.ports ?? []).some((port) => String(port.published ?? port).includes('8080')),
    'docker-compose.yml: edge must publish 8080',
  );
  const cacheRedis = [composeServices['redis-cache']?.command ?? []].flat().map(String);
  const argument = (name) => cacheRedis[cacheRedis.indexOf(`--${name}`) + 1];
  check(
    cacheRedis.includes('--maxmemory') && !/^0/.test(argument('maxmemory')) && argument('maxmemory-policy') === 'allkeys-lru',
    'docker-compose.yml: redis-cache must run with --maxmemory and --maxmemory-policy allkeys-lru',
  );
  check(
    /^redis:\/\/redis-cache:/.test(String(composeServices.cache?.environment?.CACHE_REDIS_URL ?? '')),
    "docker-compose.yml: the cache's CACHE_REDIS_URL must name redis-cache, never the state Redis",
  );
}

/**
 * Every metric a service or package declares (`name: '...'` in its non-test sources, or the name
 * first passed to a row of a metric table: `metric.counter('...'`, `.counterBy(`, `.count(`,
 * `.countByReason(`, `.gauge(`, `.histogram(`), with the file declaring it (the text its labels are
 * looked for in).
 */
function declaredMetrics() {
  const declared = new Map();
  for (const top of ['services', 'packages']) {
    for (const unit of readdirSync(join(root, top))) {
      const source = join(root, top, unit, 'src');
      if (!existsSync(source)) continue;
      for (const path of walk(source).filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))) {
        const text = readFileSync(path, 'utf8');
        // A countByReason row's label is the table's own (`reason`), not written where the row is.
        for (const match of text.matchAll(/(?:name: |\.(count|countByReason|counter|counterBy|gauge|histogram)\(\s*)'((?:gateway|gen_ai)_[a-z0-9_]+)'/g))
          declared.set(match[2], match[1] === 'countByReason' ? `${text}\n'reason'` : text);
      }
    }
  }
  return declared;
}

/** The metric names and the label names a PromQL expression uses (recording rules' names, `a:b:c`, left out). */
function promqlNames(expression) {
  const text = expression.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const labels = new Set();
  for (const match of text.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g)) for (const label of match[1].split(',')) if (label.trim()) labels.add(label.trim());
  for (const match of text.matchAll(/\{([^}]*)\}/g))
    for (const matcher of match[1].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)) labels.add(matcher[1]);
  const metrics = new Set([...text.matchAll(/(?<![a-zA-Z0-9_:])((?:gateway|gen_ai)_[a-z0-9_]+)(?![a-z0-9_:])/g)].map((match) => match[1]));
  return { metrics, labels };
}

/**
 * Checks each PrometheusRule: alerts' labels and annotations, runbooks, the metrics and labels the
 * expressions use; then promtool's own check and unit tests of its groups, when promtool is here.
 */
function checkAlertRules(rules) {
  const declared = declaredMetrics();
  for (const [metric, reason] of Object.entries(PENDING_METRICS))
    check(!declared.has(metric), `scripts/check-manifests.mjs: ${metric} is declared now; remove it from PENDING_METRICS (${reason})`);
  const runbookIndex = join(root, 'docs', 'runbooks', 'README.md');
  const index = existsSync(runbookIndex) ? readFileSync(runbookIndex, 'utf8') : '';
  let promtool = true;
  try {
    execFileSync('promtool', ['--version'], { stdio: 'ignore' });
  } catch {
    promtool = false;
    console.log('check-manifests: no promtool here; alerting rules not checked or unit-tested by promtool (scripts/test.sh installs it)');
  }
  // Every promtool test beside a PrometheusRule must be run by one (its rule_files names one).
  const testsRun = new Set();
  for (const { object, path } of rules) {
    const at = `${rel(path)}: PrometheusRule ${object.metadata?.name}`;
    const groups = object.spec?.groups ?? [];
    for (const rule of groups.flatMap((group) => group.rules ?? [])) {
      const { metrics, labels } = promqlNames(String(rule.expr ?? ''));
      const name = rule.alert ?? rule.record;
      for (const metric of metrics) {
        const base = [metric, metric.replace(/_(bucket|count|sum)$/, '')].find((candidate) => declared.has(candidate) || candidate in PENDING_METRICS);
        if (!check(Boolean(base), `${at}: ${name} reads ${metric}, which no service declares`) || base in PENDING_METRICS) continue;
        const source = declared.get(base);
        for (const label of labels) {
          if (SCRAPE_LABELS.has(label)) continue;
          const onOther = [...metrics].some((other) => other !== metric && declared.get(other.replace(/_(bucket|count|sum)$/, ''))?.includes(`'${label}'`));
          check(source.includes(`'${label}'`) || onOther, `${at}: ${name} uses the label ${label}, which ${base} does not have`);
        }
      }
      if (!rule.alert) continue;
      check(['critical', 'warning', 'info'].includes(rule.labels?.severity), `${at}: ${rule.alert} has no severity label (critical, warning or info)`);
      for (const annotation of ['summary', 'description', 'runbook_url'])
        check(Boolean(rule.annotations?.[annotation]), `${at}: ${rule.alert} has no ${annotation} annotation`);
      // GatewayMeteringLagging -> docs/runbooks/gateway-metering-lagging.md (file names are kebab-case).
      const runbook = `docs/runbooks/${rule.alert.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()}.md`;
      check(String(rule.annotations?.runbook_url ?? '').endsWith(`/${runbook}`), `${at}: ${rule.alert}'s runbook_url must end with /${runbook}`);
      check(existsSync(join(root, runbook)), `${at}: ${rule.alert}'s runbook ${runbook} does not exist`);
      check(index.includes(`(${basename(runbook)})`), `docs/runbooks/README.md: does not link ${basename(runbook)} (${rule.alert})`);
    }
    if (!promtool) continue;
    // promtool reads plain Prometheus rule files: the PrometheusRule's groups, as one, with its tests beside it.
    const folder = mkdtempSync(join(tmpdir(), 'gateway-rules-'));
    try {
      const rulesFile = join(folder, `${basename(path).replace(/\.ya?ml$/, '')}.rules.yaml`);
      writeFileSync(rulesFile, stringify({ groups }));
      runPromtool(at, ['check', 'rules', rulesFile]);
      // The tests beside it that read this rule file (several PrometheusRules may share a folder).
      const tests = readdirSync(dirname(path))
        .filter(isRuleTest)
        .filter((test) => (loadYaml(join(dirname(path), test))[0]?.rule_files ?? []).includes(basename(rulesFile)));
      check(tests.length > 0, `${at}: no promtool unit test (*.test.yaml) beside it that reads ${basename(rulesFile)}`);
      for (const test of tests) {
        testsRun.add(join(dirname(path), test));
        copyFileSync(join(dirname(path), test), join(folder, test));
        runPromtool(`${at}: ${test}`, ['test', 'rules', join(folder, test)]);
      }
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }
  if (!promtool) return;
  for (const folder of new Set(rules.map(({ path }) => dirname(path))))
    for (const test of readdirSync(folder).filter(isRuleTest))
      check(testsRun.has(join(folder, test)), `${rel(join(folder, test))}: its rule_files name no PrometheusRule beside it, so it never runs`);
}

/** Runs promtool; its output is a problem when it fails. */
function runPromtool(label, args) {
  try {
    execFileSync('promtool', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    check(true, label);
  } catch (error) {
    check(false, `${label}: promtool ${args[0]} ${args[1]} failed:\n${String(error.stdout ?? '') + String(error.stderr ?? error.message)}`);
  }
}

if (problems.length > 0) {
  console.error(`check-manifests: ${problems.length} problem(s) in ${checks} checks:`);
  for (const problem of problems) console.error(`  - ${problem}`);
  process.exit(1);
}
console.log(`check-manifests: all ${checks} checks hold (${overlays.length} overlays${renderer ? `, rendered by ${renderer[0]}` : ''}, docker-compose.yml)`);
