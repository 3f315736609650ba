/**
 * The labelled inputs of the console's forms: a text field and a select among fixed options. Every
 * form builds its fields from these, so they look and behave the same on every page.
 */

/** A labelled text input; `onInput` gets the text as typed. */
export function TextField({
  label,
  value,
  testId,
  onInput,
  placeholder,
  type = 'text',
  inputMode,
}: {
  label: string;
  value: string;
  testId: string;
  onInput: (value: string) => void;
  placeholder?: string;
  /** `password` hides what is typed (a header's value). */
  type?: 'text' | 'password';
  /** The keyboard a touch screen offers. */
  inputMode?: 'numeric' | 'decimal' | 'url' | 'text';
}) {
  // Preact types a password input apart from the others.
  const typed = type === 'password' ? ({ type: 'password' } as const) : ({ type: 'text' } as const);
  return (
    <label>
      {label}
      <input
        {...typed}
        inputMode={inputMode}
        autocomplete="off"
        value={value}
        placeholder={placeholder}
        onInput={(event) => onInput(event.currentTarget.value)}
        data-testid={testId}
      />
    </label>
  );
}

/** A select's choices: [value, what the option says]. */
export type Options<Value extends string> = ReadonlyArray<readonly [Value, string]>;

/** A labelled select among `options`; `onChange` gets the value chosen. `inline` puts the label beside it, as among a page's tools. */
export function SelectField<Value extends string>({
  label,
  value,
  testId,
  options,
  onChange,
  inline = false,
}: {
  label: string;
  value: Value;
  testId: string;
  options: Options<Value>;
  onChange: (value: Value) => void;
  inline?: boolean;
}) {
  return (
    <label class={inline ? 'inline' : undefined}>
      {label}
      <select value={value} onChange={(event) => onChange(event.currentTarget.value as Value)} data-testid={testId}>
        {options.map(([option, text]) => (
          <option key={option} value={option}>
            {text}
          </option>
        ))}
      </select>
    </label>
  );
}
