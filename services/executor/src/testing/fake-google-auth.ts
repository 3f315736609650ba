/**
 * The fake Google token endpoints of @gateway/testing for the Vertex adapters' tests, reached the
 * way a deployment reaches Google: by workload identity federation (a subject token in a file,
 * exchanged at the fake STS, as on EKS or AKS), or by Application Default Credentials on GKE (the
 * fake metadata server that GCE_METADATA_HOST names, never a real one: gcloud's file is looked for
 * in an empty folder).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, vi } from 'vitest';
import { startFakeGoogleAuth, VERTEX_TEST_CREDENTIALS_ENV, vertexGate, type FakeGoogleAuth, type Responder } from '@gateway/testing';
import type { CatalogModel } from '@gateway/catalog';
import type { Provider } from '../providers/provider.js';
import { APPLICATION_DEFAULT_CREDENTIALS, GoogleCredentials } from '../providers/vertex/google-credentials.js';
import type { VertexDependencies } from '../providers/vertex/vertex-auth.js';
import { type ProviderUnderTest, useProviderUnderTest } from './provider-under-test.js';

/** The fake token endpoints of a test file, and what its Vertex adapter is given to reach them. */
export interface GoogleAuthUnderTest {
  /** The fake token endpoints; set before the file's first test. */
  readonly auth: FakeGoogleAuth;
  /** The environment the adapter reads its credentials from (VERTEX_TEST_CREDENTIALS_ENV). */
  readonly environment: Readonly<Record<string, string>>;
  /** Vertex AI in front of `responder`: the path, the token and the body checked as Vertex does. */
  gated(responder: Responder): Responder;
}

/** How the adapter gets its tokens. */
export type GoogleAuthWay = 'federation' | 'metadata-server';

/** Starts the fake token endpoints before the file's tests and sets the way to them up; undoes both at the end. */
export function useFakeGoogleAuth(way: GoogleAuthWay): GoogleAuthUnderTest {
  const directory = mkdtempSync(join(tmpdir(), `vertex-${way}-`));
  const federation = join(directory, 'federation.json');
  let auth: FakeGoogleAuth | undefined;
  const google: GoogleAuthUnderTest = {
    get auth() {
      if (!auth) throw new Error('the fake Google auth starts before the first test');
      return auth;
    },
    environment: { [VERTEX_TEST_CREDENTIALS_ENV]: way === 'federation' ? federation : APPLICATION_DEFAULT_CREDENTIALS },
    gated: (responder) => vertexGate(google.auth, responder),
  };
  beforeAll(async () => {
    auth = await startFakeGoogleAuth();
    if (way === 'federation') {
      writeFileSync(join(directory, 'subject-token'), google.auth.subjectToken);
      writeFileSync(federation, JSON.stringify(google.auth.externalAccountConfig(join(directory, 'subject-token'))));
    } else {
      vi.stubEnv('GCE_METADATA_HOST', google.auth.metadataHost);
      vi.stubEnv('GOOGLE_APPLICATION_CREDENTIALS', '');
      vi.stubEnv('CLOUDSDK_CONFIG', directory);
    }
  });
  afterAll(async () => {
    vi.unstubAllEnvs();
    await auth?.close();
    rmSync(directory, { recursive: true, force: true });
  });
  return google;
}

/**
 * A Vertex adapter under test (as useProviderUnderTest sets one up) that gets its tokens from the
 * fake Google auth the given way, with Google credentials of its own; `modelOf` is given the fake
 * upstream's origin.
 */
export function useVertexUnderTest<P extends Provider>(
  way: GoogleAuthWay,
  create: (dependencies: VertexDependencies) => P,
  modelOf: (origin: string) => CatalogModel,
): { google: GoogleAuthUnderTest; under: ProviderUnderTest<P> } {
  const google = useFakeGoogleAuth(way);
  const under = useProviderUnderTest({
    environment: google.environment,
    create: (dependencies) => create({ ...dependencies, credentials: new GoogleCredentials(2_000) }),
    modelOf: (baseUrl) => modelOf(new URL(baseUrl).origin),
  });
  return { google, under };
}
