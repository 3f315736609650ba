/**
 * The plans a key can have, declared once: their names as configuration, the CLI, the admin API,
 * the console and Redis spell them, and their values in the contracts (gateway.auth.v1.Plan).
 * No import: the console bundles this module (`@gateway/proto/plans`).
 */

/** The plan names, in the order forms offer them. */
export const PLAN_NAMES = ['starter', 'pro', 'enterprise'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

/** A plan as the contracts name it (gateway.auth.v1.Plan, without PLAN_UNSPECIFIED). */
export type PlanEnum = `PLAN_${Uppercase<PlanName>}`;

/** Whether a string names a plan. */
export function isPlanName(value: string): value is PlanName {
  return (PLAN_NAMES as readonly string[]).includes(value);
}

/** The contracts' value of a plan name. */
export function planToProto(name: PlanName): PlanEnum {
  return `PLAN_${name.toUpperCase()}` as PlanEnum;
}

/**
 * The plan name of a contract value, by name or by number (1 starter, 2 pro, 3 enterprise);
 * undefined for PLAN_UNSPECIFIED or a plan this build does not know (a newer peer's).
 */
export function planFromProto(plan: string | number | null | undefined): PlanName | undefined {
  return PLAN_NAMES.find((name, index) => planToProto(name) === plan || index + 1 === plan);
}
