/** The limit, budget and allowed models inputs that the key and team forms share. */
import { TextField } from './fields';
import type { LimitFields } from './key-fields';

/** What an empty limit or budget field stands for, per field (the plan's value, none). */
export type LimitPlaceholders = Record<Exclude<keyof LimitFields, 'allowedModels' | 'logBodies'>, string>;

/** Each input: its field, label, the end of its test id, and the keyboard it asks for. */
const INPUTS: ReadonlyArray<[Exclude<keyof LimitFields, 'logBodies'>, string, string, 'numeric' | 'decimal' | 'text']> = [
  ['requestsPerMinute', 'Requests / min', 'rpm', 'numeric'],
  ['tokensPerMinute', 'Tokens / min', 'tpm', 'numeric'],
  ['dailyBudget', 'Daily budget (USD)', 'daily', 'decimal'],
  ['monthlyBudget', 'Monthly budget (USD)', 'monthly', 'decimal'],
  ['allowedModels', 'Allowed models', 'models', 'text'],
];

/** A form's fields, what changes them, the prefix of their test ids, and what an empty limit or budget stands for. */
export interface LimitFieldInputsProps<Fields extends LimitFields> {
  fields: Fields;
  onChange: (fields: Fields) => void;
  prefix: string;
  placeholders: LimitPlaceholders;
}

/**
 * The inputs of `fields`' limits, budgets and allowed models, and whether the request log keeps its
 * requests' bodies; `prefix` starts their test ids (`<prefix>-rpm`).
 */
export function LimitFieldInputs<Fields extends LimitFields>({ fields, onChange, prefix, placeholders }: LimitFieldInputsProps<Fields>) {
  return (
    <>
      {INPUTS.map(([field, label, testId, mode]) => (
        <TextField
          key={field}
          label={label}
          value={fields[field]}
          testId={`${prefix}-${testId}`}
          placeholder={field === 'allowedModels' ? 'every model' : placeholders[field]}
          inputMode={mode}
          onInput={(value) => onChange({ ...fields, [field]: value })}
        />
      ))}
      <label>
        <input
          type="checkbox"
          checked={fields.logBodies}
          onChange={(event) => onChange({ ...fields, logBodies: event.currentTarget.checked })}
          data-testid={`${prefix}-log-bodies`}
        />{' '}
        Keep request bodies (redacted) in the request log
      </label>
    </>
  );
}
