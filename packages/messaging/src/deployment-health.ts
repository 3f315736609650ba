/**
 * Deployment health shared by the executors (publishers) and the router (subscriber): the subject
 * and the protobuf codec of gateway.executor.v1.DeploymentHealthReport. Core NATS, not JetStream:
 * a report is superseded by the next one within seconds, so a missed one costs nothing and an
 * old one must never be replayed.
 */
import { messageCodec, type DeploymentHealthReport, type DeploymentHealthReportOutput } from '@gateway/proto';

/** The subject every executor replica publishes its DeploymentHealthReport on. */
export const DEPLOYMENT_HEALTH_SUBJECT = 'health.v1.deployment';

const codec = messageCodec<DeploymentHealthReport, DeploymentHealthReportOutput>('gateway.executor.v1.DeploymentHealthReport');

/** Encodes a report as the payload on DEPLOYMENT_HEALTH_SUBJECT. */
export function encodeDeploymentHealth(report: DeploymentHealthReport): Uint8Array {
  return codec.encode(report);
}

/** Decodes a report; throws on bytes that are not one (the subscriber drops and counts those). */
export function decodeDeploymentHealth(bytes: Uint8Array): DeploymentHealthReportOutput {
  return codec.decode(bytes);
}
