// Which pods hold a cloud identity: only the executors (deploy/base/executor-service-account.yaml)
// and the guard (deploy/base/guard-service-account.yaml, for Bedrock's guardrails and Model Armor),
// each as its own ServiceAccount (the components aws-bedrock, gke-workload-identity,
// azure-workload-identity annotate them).

/** The annotations by which a cloud binds an identity to a ServiceAccount. */
export const CLOUD_IDENTITY_ANNOTATIONS = ['eks.amazonaws.com/role-arn', 'iam.gke.io/gcp-service-account', 'azure.workload.identity/client-id'];
/** The pod label by which AKS's webhook hands a pod its workload identity token. */
export const AZURE_WORKLOAD_IDENTITY_LABEL = 'azure.workload.identity/use';
/** The workloads that may hold a cloud identity, each through the ServiceAccount of its own name. */
export const IDENTIFIED_WORKLOADS = ['executor', 'guard'];
/** The workloads that may ask for Azure's workload identity token (the guard's Azure check takes an API key). */
const AZURE_WORKLOADS = ['executor'];

/**
 * Only the executors and the guard hold a cloud identity: the ServiceAccounts carrying a cloud's
 * annotation are their own (`executor`, `guard`), no other pod runs as one, and only executor pods
 * ask for Azure's workload identity token. Every executor and guard pod runs as its own
 * ServiceAccount, never as the namespace's `default`, which any pod gets.
 */
export function cloudIdentityProblems(label, objects) {
  const problems = [];
  const identified = new Set();
  for (const object of objects.filter((entry) => entry.kind === 'ServiceAccount')) {
    const annotations = Object.keys(object.metadata?.annotations ?? {}).filter((name) => CLOUD_IDENTITY_ANNOTATIONS.includes(name));
    if (annotations.length === 0) continue;
    if (!IDENTIFIED_WORKLOADS.includes(object.metadata?.name))
      problems.push(
        `${label}: ServiceAccount ${object.metadata?.name} carries ${annotations.join(', ')}: only the executors' and the guard's may hold a cloud identity`,
      );
    identified.add(object.metadata?.name);
  }
  for (const object of objects.filter((entry) => entry.spec?.template?.spec)) {
    const name = object.metadata?.name;
    const pod = object.spec.template;
    const account = pod.spec.serviceAccountName ?? 'default';
    if (IDENTIFIED_WORKLOADS.includes(name)) {
      if (account !== name) problems.push(`${label}: ${object.kind} ${name} runs as ServiceAccount ${account}, not its own (${name})`);
    } else if (identified.has(account)) problems.push(`${label}: ${object.kind} ${name} runs as ServiceAccount ${account}, which holds a cloud identity`);
    if (!AZURE_WORKLOADS.includes(name) && pod.metadata?.labels?.[AZURE_WORKLOAD_IDENTITY_LABEL] !== undefined)
      problems.push(`${label}: ${object.kind} ${name} asks for an Azure workload identity token (${AZURE_WORKLOAD_IDENTITY_LABEL}): only the executors may`);
  }
  return problems;
}
