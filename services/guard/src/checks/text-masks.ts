/**
 * Masks over one text: the spans enforced mask checks found, merged where they overlap (the
 * union, typed by the span that starts first, the longer on a tie), then each replaced by a typed
 * placeholder `<ENTITY_n>`. Within one Check call the same original always gets the same
 * placeholder and each entity counts from 1, so `<CARD_1>` in two messages is the same card.
 */

/** A span to mask. */
export interface MaskSpan {
  start: number;
  end: number;
  entity: string;
  /** Whether its original goes back into the answer (the policy's restore_masked). */
  restore: boolean;
}

/** The placeholders of one Check call: numbering per entity, one placeholder per original. */
export class PlaceholderBook {
  private readonly counts = new Map<string, number>();
  private readonly byOriginal = new Map<string, string>();
  /** The placeholders to restore, with their originals, in order of first use. */
  readonly restored: Array<{ placeholder: string; original: string }> = [];
  private readonly restoredSet = new Set<string>();

  /** The placeholder of `original` as `entity`. */
  placeholderOf(entity: string, original: string, restore: boolean): string {
    const type = entity.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
    const key = `${type}\u0000${original}`;
    let placeholder = this.byOriginal.get(key);
    if (!placeholder) {
      const count = (this.counts.get(type) ?? 0) + 1;
      this.counts.set(type, count);
      placeholder = `<${type}_${count}>`;
      this.byOriginal.set(key, placeholder);
    }
    if (restore && !this.restoredSet.has(placeholder)) {
      this.restoredSet.add(placeholder);
      this.restored.push({ placeholder, original });
    }
    return placeholder;
  }
}

/** The spans merged where they overlap or touch, in order. */
export function mergeSpans(spans: readonly MaskSpan[]): MaskSpan[] {
  const sorted = [...spans].sort((a, b) => a.start - b.start || b.end - a.end);
  const merged: MaskSpan[] = [];
  for (const span of sorted) {
    const last = merged.at(-1);
    if (last && span.start < last.end) {
      last.end = Math.max(last.end, span.end);
      last.restore ||= span.restore;
    } else merged.push({ ...span });
  }
  return merged;
}

/** `text` up to `end` with each merged span (all before `end`) replaced by its placeholder. */
export function maskText(text: string, spans: readonly MaskSpan[], end: number, book: PlaceholderBook): string {
  let masked = '';
  let at = 0;
  for (const span of mergeSpans(spans)) {
    if (span.start >= end) break;
    masked += text.slice(at, span.start) + book.placeholderOf(span.entity, text.slice(span.start, span.end), span.restore);
    at = span.end;
  }
  return masked + text.slice(at, Math.max(at, end));
}
