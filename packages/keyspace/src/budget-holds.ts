/**
 * Budget holds: what keeps a key's (and its team's) budgets exact to the requests in flight, not
 * to metering's lag. The decision that admits a request (scripts/check-quota.lua) holds its cost
 * bound, the most it can cost (its prompt and its largest completion at its model's prices, sent
 * by the edge), against every budget that applies, in the same atomic step that reads what was
 * spent; a budget admits a request only while its bound fits in the budget less what was spent and
 * what the requests in flight hold. The hold ends:
 *   - when metering meters the request's usage event (scripts/record-usage.lua): released in the
 *     same step that adds the request's cost to the spend, so the budget never counts it twice nor
 *     misses it in between;
 *   - when the request ends without a usage event (auth's SettleUsage, scripts/settle-quota.lua);
 *   - or, when neither is ever reported (an edge lost mid-request), after BUDGET_HOLD_MAX_AGE_MS.
 * Kept beside the spend, in the key's slot (its team's for a member): the amounts in the spend hash
 * (`h:<charge id>` -> pico-USD, `held` -> their sum), when each lapses in a zset
 * (budgetHoldsKeyName; a team's under `<key_id>:<charge id>`). A request with no bound (0: a model
 * without prices) holds nothing. scripts/lib/budget-holds.lua applies these rules.
 */

import { PENDING_MAX_AGE_MS } from './window.js';

/**
 * How long a hold lasts when its request's end is never reported: as long as an unsettled
 * reservation is remembered (longer than the edge's longest completion, and metering's usual lag).
 */
export const BUDGET_HOLD_MAX_AGE_MS = PENDING_MAX_AGE_MS;
