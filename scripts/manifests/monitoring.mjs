// A production overlay watched as applied: every workload with a `metrics` port scraped by a
// PodMonitor whose targets' job is the pod's app.kubernetes.io/name (the alerts on a service with no
// replica up read `up{job="request-log"}`, `up{job="mcp"}`), and the alerting rules rendered beside it.

const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet']);
/** The pod label a target's job is taken from: what the rules' `up{job=...}` name. */
const JOB_LABEL = 'app.kubernetes.io/name';

/** Whether a PodMonitor's selector selects pods with these labels. */
function selects(monitor, podLabels) {
  const selector = monitor.spec?.selector ?? {};
  const labelsMatch = Object.entries(selector.matchLabels ?? {}).every(([key, value]) => podLabels[key] === value);
  const expressionsMatch = (selector.matchExpressions ?? []).every((expression) => {
    const value = podLabels[expression.key];
    if (expression.operator === 'In') return (expression.values ?? []).includes(value);
    if (expression.operator === 'NotIn') return !(expression.values ?? []).includes(value);
    if (expression.operator === 'Exists') return value !== undefined;
    return value === undefined;
  });
  return labelsMatch && expressionsMatch;
}

/**
 * The problems of a production overlay's monitoring: a workload serving a `metrics` port that no
 * PodMonitor scrapes (with an endpoint on that port), or scrapes under another job than its
 * app.kubernetes.io/name; no PrometheusRule at all.
 * @param {string} label where the objects come from, for the messages
 * @param {object[]} objects the rendered overlay
 */
export function productionMonitoringProblems(label, objects) {
  const monitors = objects.filter((object) => object?.kind === 'PodMonitor');
  const problems = [];
  if (monitors.length === 0) problems.push(`${label}: no PodMonitor: production is not scraped (components/monitoring, with the Prometheus Operator's CRDs)`);
  if (!objects.some((object) => object?.kind === 'PrometheusRule'))
    problems.push(`${label}: no PrometheusRule: nothing alerts on production (components/alerts)`);
  if (monitors.length === 0) return problems;
  for (const workload of objects.filter((object) => WORKLOAD_KINDS.has(object?.kind))) {
    const pod = workload.spec?.template ?? {};
    const serves = (pod.spec?.containers ?? []).some((container) => (container.ports ?? []).some((port) => port.name === 'metrics'));
    if (!serves) continue;
    const at = `${label}: ${workload.kind} ${workload.metadata?.name}`;
    const podLabels = pod.metadata?.labels ?? {};
    const scraping = monitors.filter(
      (monitor) => selects(monitor, podLabels) && (monitor.spec?.podMetricsEndpoints ?? []).some((endpoint) => endpoint.port === 'metrics'),
    );
    if (scraping.length === 0) problems.push(`${at}: no PodMonitor scrapes its metrics port: its alerts cannot fire`);
    else if (!scraping.some((monitor) => monitor.spec?.jobLabel === JOB_LABEL && podLabels[JOB_LABEL]))
      problems.push(
        `${at}: scraped under another job than its ${JOB_LABEL} (the PodMonitor's jobLabel): up{job="${podLabels[JOB_LABEL] ?? ''}"} does not exist`,
      );
  }
  return problems;
}
