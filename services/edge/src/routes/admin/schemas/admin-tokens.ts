/** Admin access (/admin/v1/admin-tokens, /admin/v1/me): the roles, an admin token's creation and answer, the caller's principal. */
import { type Static, Type } from '@sinclair/typebox';
import { adminObject, fieldNames, NameSchema, Nullable, steps } from './common.js';

/** The roles of the admin API. */
export const ROLE_NAMES = ['admin', 'viewer'] as const;
const RoleSchema = Type.Union(
  ROLE_NAMES.map((role) => Type.Literal(role)),
  { errorMessage: `'role' must be one of ${ROLE_NAMES.join(', ')}.` },
);

/** The body of POST /admin/v1/admin-tokens. */
export const AdminTokenCreationSchema = steps(
  fieldNames(['role', 'name']),
  Type.Object({ role: Type.Unknown() }, { errorMessage: { required: { role: `'role' must be one of ${ROLE_NAMES.join(', ')}.` } } }),
  Type.Object({ role: RoleSchema, name: Type.Optional(NameSchema) }),
);
export type AdminTokenCreation = Static<typeof AdminTokenCreationSchema>;

/** An admin token as the admin API shows it; never its secret, except once in the creation response. */
export const AdminTokenSchema = adminObject('admin_token', {
  name: Type.String(),
  /** A role this edge does not know (a newer auth's) is `unknown`. */
  role: Type.Union([RoleSchema, Type.Literal('unknown')]),
  /** Unix seconds. */
  created_at: Type.Integer(),
  revoked: Type.Boolean(),
  /** The subject of whoever created it (`static-token`, an admin token's id, `cli`, ...). */
  created_by: Type.String(),
});
export type AdminToken = Static<typeof AdminTokenSchema>;

/** A new admin token: the secret (`bra-...`) is in this one response only. */
export const CreatedAdminTokenSchema = Type.Intersect([AdminTokenSchema, Type.Object({ secret: Type.String() })]);
export type CreatedAdminToken = Static<typeof CreatedAdminTokenSchema>;

/** GET /admin/v1/me: who the caller is, for the console to show only what the role may do. */
export const PrincipalSchema = Type.Object({
  object: Type.Literal('admin.principal'),
  subject: Type.String(),
  role: RoleSchema,
  via: Type.Union([Type.Literal('static_token'), Type.Literal('admin_token'), Type.Literal('sso_session')]),
  /** The SSO user's name (email), when the identity provider gave one; null for a token. */
  name: Nullable(Type.String()),
  /** When an SSO session ends (Unix seconds); null for a credential that does not expire. */
  expires_at: Nullable(Type.Integer()),
});
export type Principal = Static<typeof PrincipalSchema>;
