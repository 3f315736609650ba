/**
 * The error every store of auth throws for a value it refuses (a key's, a team's or an admin
 * token's), and the bounds of the names they share. No gRPC runtime: the CLI throws it too.
 */

/** Thrown when a value given for a key, a team or an admin token is invalid; `param` names the field. */
export class KeyInputError extends Error {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message);
    this.name = 'KeyInputError';
  }
}

/** The longest key name accepted (an admin token's name too). */
export const MAX_KEY_NAME_LENGTH = 200;
