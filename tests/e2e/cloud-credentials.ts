/**
 * The environment a cluster's executor gets its cloud credentials from in the end-to-end tests, as
 * a team sets it: AWS's long-lived keys in the variables AWS's credential chain reads first, and
 * Vertex AI's Application Default Credentials from a (fake) metadata server, as on GKE, or a
 * workload identity federation config. Nothing of the machine's own AWS or gcloud setup is read.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  startFakeGoogleAuth,
  startFakeUpstream,
  vertexGate,
  type FakeAwsCredentials,
  type FakeGoogleAuth,
  type FakeUpstream,
  type Responder,
} from '@gateway/testing';

/** AWS keys for Bedrock in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; config files looked for in the empty `directory`, no instance metadata. */
export function awsKeysEnv(credentials: FakeAwsCredentials, region: string, directory: string): Record<string, string> {
  return {
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    AWS_REGION: region,
    AWS_CONFIG_FILE: join(directory, 'config'),
    AWS_SHARED_CREDENTIALS_FILE: join(directory, 'credentials'),
    AWS_EC2_METADATA_DISABLED: 'true',
  };
}

/**
 * Vertex AI credentials `default` (Application Default Credentials) in `variable`, the catalog's
 * api_key_env, answered by the fake metadata server; gcloud's own are looked for in the empty `directory`.
 */
export function metadataServerEnv(google: FakeGoogleAuth, variable: string, directory: string): Record<string, string> {
  return { [variable]: 'default', GCE_METADATA_HOST: google.metadataHost, GOOGLE_APPLICATION_CREDENTIALS: '', CLOUDSDK_CONFIG: directory };
}

/**
 * Vertex AI credentials by workload identity federation in `variable`, the catalog's api_key_env:
 * the fake's subject token and a config that reads it, written to `directory`, where gcloud's own
 * are looked for too.
 */
export function federationEnv(google: FakeGoogleAuth, variable: string, directory: string): Record<string, string> {
  writeFileSync(join(directory, 'subject-token'), google.subjectToken);
  writeFileSync(join(directory, 'federation.json'), JSON.stringify(google.externalAccountConfig(join(directory, 'subject-token'))));
  return { [variable]: join(directory, 'federation.json'), GOOGLE_APPLICATION_CREDENTIALS: '', CLOUDSDK_CONFIG: directory };
}

/** A fake Vertex AI answering with `answer`, which accepts only the access tokens its fake Google token endpoints issued. */
export async function startFakeVertex(answer: Responder): Promise<{ google: FakeGoogleAuth; vertex: FakeUpstream }> {
  const google = await startFakeGoogleAuth();
  return { google, vertex: await startFakeUpstream(vertexGate(google, answer)) };
}
