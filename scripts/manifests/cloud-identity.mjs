// Which pods hold a cloud identity: only the executors (deploy/base/executor-service-account.yaml
// and the components aws-bedrock, gke-workload-identity, azure-workload-identity).

/** The annotations by which a cloud binds an identity to a ServiceAccount. */
export const CLOUD_IDENTITY_ANNOTATIONS = ['eks.amazonaws.com/role-arn', 'iam.gke.io/gcp-service-account', 'azure.workload.identity/client-id'];
/** The pod label by which AKS's webhook hands a pod its workload identity token. */
export const AZURE_WORKLOAD_IDENTITY_LABEL = 'azure.workload.identity/use';

/**
 * Only the executors hold a cloud identity: the ServiceAccounts carrying a cloud's annotation are
 * the executors' own (`executor`), no pod but the executors runs as one, and only executor pods
 * ask for Azure's workload identity token. Every executor pod runs as `executor`, never as the
 * namespace's `default`, which any pod gets.
 */
export function cloudIdentityProblems(label, objects) {
  const problems = [];
  const identified = new Set();
  for (const object of objects.filter((entry) => entry.kind === 'ServiceAccount')) {
    const annotations = Object.keys(object.metadata?.annotations ?? {}).filter((name) => CLOUD_IDENTITY_ANNOTATIONS.includes(name));
    if (annotations.length === 0) continue;
    if (object.metadata?.name !== 'executor')
      problems.push(`${label}: ServiceAccount ${object.metadata?.name} carries ${annotations.join(', ')}: only the executors' may hold a cloud identity`);
    identified.add(object.metadata?.name);
  }
  for (const object of objects.filter((entry) => entry.spec?.template?.spec)) {
    const name = object.metadata?.name;
    const pod = object.spec.template;
    const account = pod.spec.serviceAccountName ?? 'default';
    if (name === 'executor') {
      if (account !== 'executor') problems.push(`${label}: ${object.kind} executor runs as ServiceAccount ${account}, not its own (executor)`);
      continue;
    }
    if (identified.has(account)) problems.push(`${label}: ${object.kind} ${name} runs as ServiceAccount ${account}, which holds a cloud identity`);
    if (pod.metadata?.labels?.[AZURE_WORKLOAD_IDENTITY_LABEL] !== undefined)
      problems.push(`${label}: ${object.kind} ${name} asks for an Azure workload identity token (${AZURE_WORKLOAD_IDENTITY_LABEL}): only the executors may`);
  }
  return problems;
}
