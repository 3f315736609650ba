// The shutdown each gateway container is given fits in its pod's grace period: on SIGTERM a
// service serves on for its delay (<SERVICE>_SHUTDOWN_DELAY_MS), drains for its grace
// (<SERVICE>_SHUTDOWN_GRACE_MS) and takes 5 s to close (SHUTDOWN_CLOSE_MARGIN_MS of
// @gateway/observability), after any preStop pause; otherwise the kubelet kills what it still
// drains. The MCP service's grace covers its tool-call timeout, so a rollout does not cut a call,
// and the guard's its check deadline, so a rollout does not turn a check into its policy's on_error.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gatewayConfigOf } from './connectivity.mjs';

/** What a service takes to close after its grace (SHUTDOWN_CLOSE_MARGIN_MS). */
const CLOSE_MARGIN_MS = 5_000;

/**
 * A setting of a gateway service (`<SERVICE>_<suffix>`, in ms) as the service reads it: the
 * container's env value, else the gateway-config ConfigMap's, else the default its config schema
 * gives (services/<service>/.env.example, generated from it), else 0.
 */
function settingOf(root, service, suffix, container, config) {
  const name = `${service.toUpperCase().replaceAll('-', '_')}_${suffix}`;
  const set = (container.env ?? []).find((variable) => variable.name === name)?.value ?? config?.data?.[name];
  if (set !== undefined) return { name, value: Number(set) };
  const example = join(root, 'services', service, '.env.example');
  const line = existsSync(example) ? new RegExp(`^${name}=(\\d+)$`, 'm').exec(readFileSync(example, 'utf8')) : null;
  return { name, value: line ? Number(line[1]) : 0 };
}

/** The containers running a gateway service (services/<name>/dist/main.js) whose pod's grace period is too short for its shutdown. */
export function shutdownProblems(root, label, objects) {
  const problems = [];
  const config = gatewayConfigOf(objects);
  for (const workload of objects.filter((object) => object?.kind === 'Deployment' || object?.kind === 'StatefulSet')) {
    const pod = workload.spec?.template?.spec ?? {};
    for (const container of pod.containers ?? []) {
      const service = /services\/([a-z-]+)\/dist\/main\.js/.exec(JSON.stringify(container.command ?? container.args ?? []))?.[1];
      if (!service) continue;
      const at = `${label}: ${workload.kind} ${workload.metadata?.name} container ${container.name}`;
      const setting = (suffix) => settingOf(root, service, suffix, container, config);
      const [grace, delay] = [setting('SHUTDOWN_GRACE_MS'), setting('SHUTDOWN_DELAY_MS')];
      const command = container.lifecycle?.preStop?.exec?.command ?? [];
      const pause = command[0] === 'sleep' ? Number(command[1]) || 0 : 0;
      const period = pod.terminationGracePeriodSeconds ?? 30;
      if (period * 1000 < pause * 1000 + delay.value + grace.value + CLOSE_MARGIN_MS)
        problems.push(
          `${at}: terminationGracePeriodSeconds ${period} is shorter than the preStop pause (${pause} s) + ${delay.name} (${delay.value} ms) + ${grace.name} (${grace.value} ms) + 5 s`,
        );
      if (service === 'mcp') {
        const timeout = setting('TOOL_CALL_TIMEOUT_MS');
        if (grace.value < timeout.value) problems.push(`${at}: ${grace.name} (${grace.value} ms) is shorter than ${timeout.name} (${timeout.value} ms)`);
      }
      if (service === 'guard') {
        const deadline = setting('CHECK_DEADLINE_MS');
        if (grace.value < deadline.value) problems.push(`${at}: ${grace.name} (${grace.value} ms) is shorter than ${deadline.name} (${deadline.value} ms)`);
      }
    }
  }
  return problems;
}
