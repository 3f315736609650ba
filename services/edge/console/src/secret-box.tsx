/** The one place a new credential's secret is shown: once, with a copy button, then dismissed. */
import type { ComponentChildren } from 'preact';
import { useRef, useState } from 'preact/hooks';

/**
 * A secret just created (a key's, an admin token's), shown this once. `testId` prefixes its parts'
 * test ids (`-box`, `-secret`, `-copy`, `-dismiss`); `children` says what was created.
 */
export function SecretBox({
  testId,
  title,
  secret,
  onDismiss,
  children,
}: {
  testId: string;
  title: ComponentChildren;
  secret: string;
  onDismiss: () => void;
  children?: ComponentChildren;
}) {
  const [copied, setCopied] = useState<'no' | 'yes' | 'failed'>('no');
  const secretElement = useRef<HTMLElement>(null);
  return (
    <section class="card secret-box" role="status" data-testid={`${testId}-box`}>
      <h2>{title}</h2>
      {children}
      <div class="secret-line">
        <code class="secret" data-testid={`${testId}-secret`} ref={secretElement}>
          {secret}
        </code>
        <button
          type="button"
          data-testid={`${testId}-copy`}
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(secret);
              setCopied('yes');
            } catch {
              // No clipboard (an insecure origin, a denied permission): select it for a manual copy.
              if (secretElement.current) getSelection()?.selectAllChildren(secretElement.current);
              setCopied('failed');
            }
          }}
        >
          {copied === 'yes' ? 'Copied' : 'Copy'}
        </button>
      </div>
      {copied === 'failed' && <p class="hint">The browser did not allow copying: the secret is selected, copy it with the keyboard.</p>}
      <p class="warning">
        <strong>Copy the secret now: you will not see it again.</strong> The gateway keeps only its hash.
      </p>
      <button type="button" class="secondary" onClick={onDismiss} data-testid={`${testId}-dismiss`}>
        I have saved it
      </button>
    </section>
  );
}
