/** The Key select among a page's tools, shared by the pages that show one key's traffic or all. */
import type { Key } from './admin-api';
import { SelectField } from './fields';

/** A key as the console names it: its name and id, or its id alone. */
export function keyName(key: Key): string {
  return key.name ? `${key.name} (${key.id})` : key.id;
}

/**
 * Every key, newest first, or all of them (the empty value). The chosen key stays listed while
 * `keys` is still loading, so the select never shows another choice than the one applied.
 */
export function KeyFilter({ keys, value, testId, onChange }: { keys: readonly Key[]; value: string; testId: string; onChange: (keyId: string) => void }) {
  const listed = [...keys].sort((left, right) => right.created_at - left.created_at);
  const options: Array<readonly [string, string]> = [['', 'All keys']];
  if (value && !keys.some((key) => key.id === value)) options.push([value, value]);
  for (const key of listed) options.push([key.id, keyName(key)]);
  return <SelectField inline label="Key" value={value} testId={testId} options={options} onChange={onChange} />;
}
