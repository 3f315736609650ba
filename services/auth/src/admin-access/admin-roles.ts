/** The roles of admin tokens, apart from their store so that the CLI's usage reads them without loading Redis. */

/** A role an admin token can have. */
export type AdminRoleName = 'admin' | 'viewer';
/** The roles, most powerful first. */
export const ADMIN_ROLE_NAMES: readonly AdminRoleName[] = Object.freeze(['admin', 'viewer']);

/** Whether text names a role. */
export function isAdminRoleName(text: string): text is AdminRoleName {
  return (ADMIN_ROLE_NAMES as readonly string[]).includes(text);
}
