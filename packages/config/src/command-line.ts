/**
 * The end of a service's command-line tool (a CLI beside the service, on its Redis): runs its
 * command with the process's arguments, and turns what it throws into what a shell user expects.
 * A mistake in the command line (a UsageError, or one node:util's parseArgs throws) prints its
 * message and the usage and exits 2; any other failure prints one line, never a stack, and exits 1.
 */

/** A mistake in the command line itself: its message is printed with the usage, exit code 2. */
export class UsageError extends Error {}

/** How a CLI's failures are printed. */
export interface CommandLineOptions {
  /** The usage text, printed after a mistake in the command line. */
  readonly usage: string;
  /**
   * True for an error whose message speaks for itself (a refusal that names the field): printed
   * alone; any other is printed as `error: <message>`.
   */
  readonly speaksForItself?: (error: unknown) => boolean;
}

/** A command: the arguments after the script's name, and a printer of one line of output. */
export type Command = (argv: readonly string[], print: (text: string) => void) => Promise<void>;

/** Whether `error` is a mistake in the command line (see the module comment). */
export function isUsageError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return error instanceof UsageError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'));
}

/** What a failure of the command prints on stderr, and the exit code it ends with. */
export function failureOf(error: unknown, options: CommandLineOptions): { text: string; code: 1 | 2 } {
  const message = error instanceof Error ? error.message : String(error);
  if (isUsageError(error)) return { text: `${message}\n${options.usage}\n`, code: 2 };
  return { text: `${options.speaksForItself?.(error) ? message : `error: ${message}`}\n`, code: 1 };
}

/** Runs `command` with this process's arguments and stdout, and exits as the module comment says when it fails. */
export function runCommandLine(command: Command, options: CommandLineOptions): void {
  command(process.argv.slice(2), (text) => process.stdout.write(`${text}\n`)).catch((error: unknown) => {
    const failure = failureOf(error, options);
    process.stderr.write(failure.text);
    process.exit(failure.code);
  });
}
