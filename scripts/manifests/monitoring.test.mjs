// productionMonitoringProblems on a production overlay's shape: scraped as the alerts read it, or
// each defect named. check-manifests runs it on the rendered prod and prod-cluster overlays.
import { describe, expect, it } from 'vitest';
import { productionMonitoringProblems } from './monitoring.mjs';

/** A Deployment whose pods are labelled `name` and serve a port named metrics. */
function deployment(name) {
  return {
    kind: 'Deployment',
    metadata: { name },
    spec: {
      template: {
        metadata: { labels: { 'app.kubernetes.io/name': name } },
        spec: {
          containers: [
            {
              name,
              ports: [
                { name: 'grpc', containerPort: 50051 },
                { name: 'metrics', containerPort: 9105 },
              ],
            },
          ],
        },
      },
    },
  };
}

/** components/monitoring's PodMonitor, scraping the pods named in `names`. */
function podMonitor(names, fields = {}) {
  return {
    kind: 'PodMonitor',
    metadata: { name: 'gateway' },
    spec: {
      jobLabel: 'app.kubernetes.io/name',
      selector: { matchExpressions: [{ key: 'app.kubernetes.io/name', operator: 'In', values: names }] },
      podMetricsEndpoints: [{ port: 'metrics', path: '/metrics' }],
      ...fields,
    },
  };
}

const RULES = { kind: 'PrometheusRule', metadata: { name: 'request-log-alerts' }, spec: { groups: [] } };

describe('production monitoring', () => {
  it('passes every workload scraped on its metrics port under its name as job, with the rules beside', () => {
    const objects = [deployment('edge'), deployment('request-log'), podMonitor(['edge', 'request-log']), RULES];
    expect(productionMonitoringProblems('prod', objects)).toEqual([]);
  });

  it('fails production without a PodMonitor or without rules', () => {
    expect(productionMonitoringProblems('prod', [deployment('edge')])).toEqual([
      "prod: no PodMonitor: production is not scraped (components/monitoring, with the Prometheus Operator's CRDs)",
      'prod: no PrometheusRule: nothing alerts on production (components/alerts)',
    ]);
  });

  it('fails a service the PodMonitor does not select, or scrapes on another port', () => {
    const notSelected = [deployment('edge'), deployment('request-log'), podMonitor(['edge']), RULES];
    expect(productionMonitoringProblems('prod', notSelected)).toEqual([
      'prod: Deployment request-log: no PodMonitor scrapes its metrics port: its alerts cannot fire',
    ]);
    const otherPort = [deployment('edge'), podMonitor(['edge'], { podMetricsEndpoints: [{ port: 'http' }] }), RULES];
    expect(productionMonitoringProblems('prod', otherPort)).toEqual(['prod: Deployment edge: no PodMonitor scrapes its metrics port: its alerts cannot fire']);
  });

  it("fails targets whose job is not the pods' name, which the alerts on a service with no replica up read", () => {
    const monitor = podMonitor(['request-log']);
    delete monitor.spec.jobLabel;
    expect(productionMonitoringProblems('prod', [deployment('request-log'), monitor, RULES])).toEqual([
      'prod: Deployment request-log: scraped under another job than its app.kubernetes.io/name (the PodMonitor\'s jobLabel): up{job="request-log"} does not exist',
    ]);
  });
});
