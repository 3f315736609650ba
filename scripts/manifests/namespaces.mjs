// Every namespaced object an overlay renders must carry its namespace: one without lands in
// whatever namespace the applier's kubectl context points at, away from the Services and
// ConfigMaps it names (NATS_URL=nats://nats-0.nats:4222 resolves only inside the gateway's).

/** Kinds that live outside any namespace (the Kubernetes API's cluster-scoped resources we may render). */
export const CLUSTER_SCOPED_KINDS = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PersistentVolume',
  'StorageClass',
  'PriorityClass',
  'IngressClass',
  'GatewayClass',
  'RuntimeClass',
  'ValidatingWebhookConfiguration',
  'MutatingWebhookConfiguration',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'APIService',
  'ClusterIssuer',
  'Node',
]);

/**
 * The problems with a rendered overlay's namespaces: a namespaced object without one, or in a
 * namespace the overlay neither creates nor shares with its other objects.
 * @param {string} label what the objects are (an overlay), for the messages
 * @param {object[]} objects the rendered objects
 * @returns {string[]}
 */
export function namespaceProblems(label, objects) {
  const problems = [];
  const namespaced = objects.filter((object) => object?.kind && !CLUSTER_SCOPED_KINDS.has(object.kind));
  for (const object of namespaced)
    if (!object.metadata?.namespace)
      problems.push(`${label}: ${object.kind} ${object.metadata?.name ?? '?'} has no namespace (it would land in the kubectl context's)`);
  const used = new Set(namespaced.map((object) => object.metadata?.namespace).filter(Boolean));
  if (used.size > 1) problems.push(`${label}: objects spread over several namespaces (${[...used].join(', ')})`);
  const created = new Set(objects.filter((object) => object?.kind === 'Namespace').map((object) => object.metadata?.name));
  for (const namespace of used) if (!created.has(namespace)) problems.push(`${label}: namespace ${namespace} is not created by the overlay`);
  return problems;
}
