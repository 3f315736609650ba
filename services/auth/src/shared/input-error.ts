/**
 * The errors every store of auth throws for a value it refuses (a key's, a team's or an admin
 * token's; a secret already taken; a team that does not exist), and the bounds of the names they
 * share. No gRPC runtime: the CLI throws them too.
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

/** Thrown by a key's creation when the team named does not exist. */
export class TeamNotFoundError extends Error {
  constructor() {
    super('No team has this id.');
    this.name = 'TeamNotFoundError';
  }
}

/** Thrown by a key's creation when the secret already belongs to a key. */
export class KeyExistsError extends Error {
  constructor() {
    super('A key with this secret already exists.');
    this.name = 'KeyExistsError';
  }
}
