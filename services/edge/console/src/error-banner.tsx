/** The one way a page shows a failure: the gateway's own message, with its status and error code. */
import type { ApiError } from './admin-api';

/** Shows `error` when there is one, nothing otherwise. */
export function ErrorBanner({ error, testId = 'error-banner' }: { error: ApiError | string | undefined; testId?: string }) {
  if (!error) return null;
  if (typeof error === 'string')
    return (
      <p class="error" role="alert" data-testid={testId}>
        {error}
      </p>
    );
  const details = [error.status ? `HTTP ${error.status}` : null, error.code, error.param ? `param: ${error.param}` : null].filter(Boolean).join(', ');
  return (
    <p class="error" role="alert" data-testid={testId}>
      {error.message}
      {details ? <span class="error-details"> ({details})</span> : null}
    </p>
  );
}
