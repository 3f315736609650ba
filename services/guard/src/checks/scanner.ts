/**
 * What every check of a policy is to the check runner: a scanner over the texts of one point. A
 * scanner finds spans (or, for a limit or an outside service's category, findings without a span);
 * the runner turns them into decisions and applies the check's action. Built-in scanners are pure
 * and synchronous at heart; outside ones call a service and honour the context's signal.
 */

/** One thing a scanner found in one text. */
export interface Finding {
  /** The kind of span (`card`, `aws_access_key`, `email`, `pattern`, `flagged_category`): the placeholder's type, upper-cased. */
  entity: string;
  /** Where the span starts in its text, in UTF-16 code units; -1 when the finding has no span. */
  start: number;
  /** Where it ends (exclusive); -1 when it has none. */
  end: number;
}

/** What a scanner knows of the call it scans for. */
export interface ScanContext {
  /** Aborted at the check's deadline (or when the caller gave up): an outside call stops then. */
  signal: AbortSignal;
  requestId: string;
  keyId: string;
  teamId: string;
  /** The catalog model serving the request; '' for an MCP call. */
  model: string;
  /** `input`, `output`, `tool_arguments` or `tool_result`. */
  point: string;
}

/** One check's scanner. */
export interface Scanner {
  /** The findings of each text, in the texts' order; each list in order of start. */
  scan(texts: readonly string[], context: ScanContext): Finding[][] | Promise<Finding[][]>;
  /**
   * For a stream window that more text follows: how many characters at the end of `text` could be
   * the start of a finding not yet complete, to be held back and scanned again with what follows.
   * The runner holds back the longest of every scanner's tail and its own default (the trailing run
   * of characters a token or a number is made of).
   */
  pendingTail?(text: string): number;
}
