// Evaluates rendered NetworkPolicies the way a conforming network plugin enforces them, and checks
// the flows the gateway needs against them: each needed flow allowed, each other one into auth, the
// router, the executors and metering denied, the executors kept off metadata and cluster addresses.
//
// Semantics (https://kubernetes.io/docs/concepts/services-networking/network-policies/): a pod that
// no policy of its namespace selects for a direction is open in that direction; a selected one
// takes only what a rule of one of those policies allows. A connection needs both the source's
// egress and the destination's ingress. A peer with podSelector alone means pods of the policy's
// namespace; with namespaceSelector, pods of the matching namespaces (both: both must match); an
// ipBlock matches addresses in its cidr outside its except list. Ports may be named (the
// destination container's port of that name); protocol defaults to TCP; no ports means any.

/** Whether labels satisfy a label selector (matchLabels and matchExpressions; {} selects all). */
export function selects(selector, labels = {}) {
  if (!selector) return false;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, key);
    const ok = {
      In: has && values.includes(labels[key]),
      NotIn: !has || !values.includes(labels[key]),
      Exists: has,
      DoesNotExist: !has,
    }[operator];
    if (!ok) return false;
  }
  return true;
}

/** An address as [family, bigint]. */
function parseAddress(address) {
  if (address.includes(':')) {
    const [head, tail = ''] = address.split('::');
    const groups = (part) => (part ? part.split(':') : []);
    const left = groups(head);
    const right = address.includes('::') ? groups(tail) : [];
    const all = [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
    return [6, all.reduce((sum, group) => (sum << 16n) + BigInt(Number.parseInt(group || '0', 16)), 0n)];
  }
  return [4, address.split('.').reduce((sum, octet) => (sum << 8n) + BigInt(Number(octet)), 0n)];
}

/** Whether an address lies in a CIDR block. */
export function inCidr(address, cidr) {
  const [base, bits] = cidr.split('/');
  const [family, value] = parseAddress(address);
  const [blockFamily, blockValue] = parseAddress(base);
  if (family !== blockFamily) return false;
  const width = family === 4 ? 32n : 128n;
  const shift = width - BigInt(bits ?? width);
  return value >> shift === blockValue >> shift;
}

/**
 * An endpoint of a flow: a pod (`namespace`, `labels`, named `ports`, an `ip`) or an address
 * outside the cluster (`ip` alone).
 * @typedef {{ name: string, namespace?: string, labels?: Record<string,string>, ports?: Record<string,number>, ip: string }} Endpoint
 */

/** Whether a policy peer (from/to entry) matches an endpoint, for a policy in `namespace`. */
function peerMatches(peer, endpoint, namespace) {
  if (peer.ipBlock) return inCidr(endpoint.ip, peer.ipBlock.cidr) && !(peer.ipBlock.except ?? []).some((cidr) => inCidr(endpoint.ip, cidr));
  if (!endpoint.namespace) return false;
  const namespaceOk = peer.namespaceSelector
    ? selects(peer.namespaceSelector, { 'kubernetes.io/metadata.name': endpoint.namespace })
    : endpoint.namespace === namespace;
  return namespaceOk && (!peer.podSelector || selects(peer.podSelector, endpoint.labels));
}

/** Whether a policy's port list admits a port (number) on the destination, by number or by the destination's port name. */
function portMatches(ports, destination, port, protocol) {
  if (!ports || ports.length === 0) return true;
  return ports.some((entry) => {
    if ((entry.protocol ?? 'TCP') !== protocol) return false;
    if (entry.port === undefined) return true;
    const number = typeof entry.port === 'number' ? entry.port : destination.ports?.[entry.port];
    if (number === undefined) return false;
    return entry.endPort ? port >= number && port <= entry.endPort : port === number;
  });
}

/** The types a policy applies to (policyTypes, or Ingress plus Egress when it has egress rules). */
const policyTypes = (policy) => policy.spec?.policyTypes ?? ['Ingress', ...(policy.spec?.egress ? ['Egress'] : [])];

/** Whether one side (a pod's egress or ingress) lets the flow through. */
function sideAllows({ policies, pod, peer, destination, port, protocol, direction }) {
  if (!pod.namespace) return true; // outside the cluster: no NetworkPolicy applies
  const applying = policies.filter(
    (policy) =>
      (policy.metadata?.namespace ?? pod.namespace) === pod.namespace &&
      selects(policy.spec?.podSelector ?? {}, pod.labels) &&
      policyTypes(policy).includes(direction),
  );
  if (applying.length === 0) return true;
  const key = direction === 'Egress' ? 'to' : 'from';
  const rules = direction === 'Egress' ? 'egress' : 'ingress';
  return applying.some((policy) =>
    (policy.spec?.[rules] ?? []).some(
      (rule) =>
        (!rule[key] || rule[key].length === 0 || rule[key].some((entry) => peerMatches(entry, peer, policy.metadata?.namespace ?? pod.namespace))) &&
        portMatches(rule.ports, destination, port, protocol),
    ),
  );
}

/**
 * Whether the NetworkPolicies let `source` open a connection to `destination` on `port`.
 * @param {object[]} policies rendered NetworkPolicy objects
 * @param {{ source: Endpoint, destination: Endpoint, port: number, protocol?: string }} flow
 */
export function allows(policies, { source, destination, port, protocol = 'TCP' }) {
  return (
    sideAllows({ policies, pod: source, peer: destination, destination, port, protocol, direction: 'Egress' }) &&
    sideAllows({ policies, pod: destination, peer: source, destination, port, protocol, direction: 'Ingress' })
  );
}
