/**
 * Upstream finish reasons -> the gateway's, from each provider's table of the reasons it names: a
 * missing reason (null, undefined, empty) is FINISH_REASON_UNSPECIFIED, a reason the table does not
 * list (one newer than this adapter) is FINISH_REASON_STOP, the closest a client understands.
 */
import type { FinishReasonOutput } from '@gateway/proto';

/** Maps one provider's finish reason. */
export type FinishReasonMapper = (reason: string | null | undefined) => FinishReasonOutput;

/** The mapper of a provider's table. */
export function finishReasonMapper(table: Readonly<Record<string, FinishReasonOutput>>): FinishReasonMapper {
  // A Map, so that a reason such as `constructor` never reads the prototype.
  const known = new Map(Object.entries(table));
  return (reason) => (reason === null || reason === undefined || reason === '' ? 'FINISH_REASON_UNSPECIFIED' : (known.get(reason) ?? 'FINISH_REASON_STOP'));
}
