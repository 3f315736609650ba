/**
 * The hold-back of a streamed answer under output guardrails: the executor's chat chunks go in, and
 * come out only once the guard checked their text. Text (content, refusal, thinking, and each tool
 * call's streamed arguments) is held in a bounded window and checked when the window is full
 * (StreamWindow.tokens, about 4 characters a token) or its oldest unchecked text has waited
 * StreamWindow.ms; what the guard releases (masked, perhaps) leaves in the chunks it came in, what
 * it holds back (TextResult.held_chars: a tail that could start a finding) waits for the next
 * window. Chunks without text (the role, a tool call's name, the finish) keep their place in the
 * order. One check is in flight at a time; chunks arriving meanwhile wait behind it, and past
 * BUFFER_WINDOWS windows of unchecked text `push` waits for the check, which holds the upstream back
 * (the relay reads no further event, so the executor is granted no credit). A blocked answer ends
 * with a chunk whose finish_reason is `content_filter`, and nothing after it.
 *
 * One piece: the hold-back's state machine and the functions that cut its queue where the guard's
 * release ends, which share its Piece and Slot shapes; nothing else uses them.
 */
import type { CheckResponseOutput } from '@gateway/proto';
import type { GuardText } from './guard-context.js';

/** Characters counted as one token of a stream window (StreamWindow.tokens). */
export const CHARS_PER_TOKEN = 4;

/** Unchecked text past this many windows makes `push` wait for the check in flight (back-pressure). */
export const BUFFER_WINDOWS = 4;

/** What the hold-back needs of its stream. */
export interface HoldBackOptions {
  /** The window: most tokens held, most milliseconds unchecked text waits. */
  readonly window: { readonly tokens: number; readonly ms: number };
  /**
   * Checks one window (RequestGuard.check at POINT_OUTPUT); `final` true when nothing follows. It
   * applies on_error itself: it resolves to a block or to the texts unchanged. A rejection is taken
   * as a block, so that no text leaves unchecked.
   */
  check(texts: readonly GuardText[], final: boolean): Promise<CheckResponseOutput>;
  /** A chunk's JSON released to the renderer, with the text it carries and whether it finishes a choice. */
  emit(json: string, text: string, finishing: boolean): void | Promise<void>;
  /** The answer was blocked: its `content_filter` chunk has been emitted; the upstream is to be cancelled. */
  blocked(): void;
  /** Optional: puts back the input's masked originals into released text (restore_masked). */
  restore?(text: string): string;
}

/** A chat chunk's JSON as the executor renders it. */
interface ChunkObject {
  id?: string;
  object?: string;
  created?: number;
  model?: string;
  system_fingerprint?: string;
  choices?: ChoiceObject[];
  usage?: unknown;
  [field: string]: unknown;
}

interface ToolCallObject {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

interface ChoiceObject {
  index?: number;
  delta?: {
    role?: string;
    content?: string | null;
    refusal?: string | null;
    reasoning_content?: string | null;
    tool_calls?: ToolCallObject[];
    [field: string]: unknown;
  };
  finish_reason?: string | null;
  [field: string]: unknown;
}

/** The delta fields whose text is checked, in the order the renderers read them. */
const TEXT_FIELDS = ['reasoning_content', 'content', 'refusal'] as const;
type TextField = (typeof TEXT_FIELDS)[number];

/** One checkable text of a piece: a delta field, or the arguments of the tool call at `call` in tool_calls. */
interface Slot {
  readonly path: string;
  readonly field: TextField | undefined;
  readonly call: number;
  text: string;
}

/** One choice of one chunk, queued until its text is released. */
interface Piece {
  /** Its JSON as it came, emitted as is when it leaves whole; undefined once changed. */
  json: string | undefined;
  chunk: ChunkObject;
  slots: Slot[];
  finishing: boolean;
}

/** A text sent in the check in flight: its path and the original. */
interface Sent {
  readonly path: string;
  readonly text: string;
}

/** The hold-back of one stream. */
export class StreamHoldBack {
  private readonly windowChars: number;
  private readonly queue: Piece[] = [];
  /** Characters of text in the queue, held or unchecked. */
  private queuedChars = 0;
  /** Characters of text no check has seen yet. */
  private uncheckedChars = 0;
  private timer: NodeJS.Timeout | undefined;
  /** The window's time ran out while a check was in flight. */
  private due = false;
  private flight: Promise<void> | undefined;
  /** Every choice seen finished (or the end came): the next check is final. */
  private finalDue = false;
  /** Choices seen, those still going on, and those whose finish has left. */
  private readonly seenChoices = new Set<number>();
  private readonly openChoices = new Set<number>();
  private readonly finishSent = new Set<number>();
  /** What an emit threw: the stream fails with it. */
  private failure: unknown;
  private template: ChunkObject | undefined;
  private closed = false;

  constructor(private readonly options: HoldBackOptions) {
    this.windowChars = Math.max(1, options.window.tokens * CHARS_PER_TOKEN);
  }

  /** True once the answer was blocked (or the hold-back closed): nothing more leaves. */
  get ended(): boolean {
    return this.closed;
  }

  /**
   * Takes one chunk's JSON. Resolves at once, except when it left straight away (no text queued
   * before it, none in it: the renderer's write may wait) or when BUFFER_WINDOWS windows of
   * unchecked text wait behind the check in flight.
   */
  async push(json: string): Promise<void> {
    this.rethrow();
    if (this.closed) return;
    const chunk = JSON.parse(json) as ChunkObject;
    this.template = chunk;
    for (const piece of piecesOf(json, chunk)) {
      const index = piece.chunk.choices?.[0]?.index ?? 0;
      if (piece.chunk.choices?.length) this.seenChoices.add(index);
      if (piece.finishing) this.openChoices.delete(index);
      else if (piece.chunk.choices?.length) this.openChoices.add(index);
      if (piece.finishing && this.openChoices.size === 0) this.finalDue = true;
      if (piece.slots.length === 0 && this.queue.length === 0 && !this.flight) {
        await this.send(pieceJson(piece), '', piece);
        continue;
      }
      this.queue.push(piece);
      const chars = piece.slots.reduce((sum, slot) => sum + slot.text.length, 0);
      this.queuedChars += chars;
      this.uncheckedChars += chars;
      if (chars > 0 && !this.timer) this.armTimer();
    }
    this.pump();
    while (this.flight && !this.closed && this.uncheckedChars > BUFFER_WINDOWS * this.windowChars) await this.flight;
    this.rethrow();
  }

  /** No chunk follows: the rest is checked (final) and released; resolves once all left or the answer was blocked. */
  async finish(): Promise<void> {
    this.finalDue = true;
    for (;;) {
      if (this.flight) {
        await this.flight;
        continue;
      }
      if (this.closed || this.queue.length === 0) break;
      this.pump();
    }
    this.clearTimer();
    this.rethrow();
  }

  /** The stream ended otherwise (the client left, it failed): nothing more is checked or emitted. */
  close(): void {
    this.closed = true;
    this.queue.length = 0;
    this.clearTimer();
  }

  private rethrow(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  /** Emits one chunk, noting the choice it finishes. */
  private async send(json: string, text: string, piece: Piece | undefined): Promise<void> {
    if (piece?.finishing) this.finishSent.add(piece.chunk.choices?.[0]?.index ?? 0);
    await this.options.emit(json, text, piece?.finishing ?? true);
  }

  private armTimer(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.due = true;
      this.pump();
    }, this.options.window.ms);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Starts a check when one is due and none is in flight. */
  private pump(): void {
    if (this.flight || this.closed || this.queue.length === 0) return;
    const final = this.finalDue;
    if (!final && !(this.uncheckedChars > 0 && (this.due || this.queuedChars >= this.windowChars))) return;
    this.flight = this.run(final)
      .catch((error: unknown) => {
        this.failure = error;
        this.close();
      })
      .finally(() => {
        this.flight = undefined;
        this.pump();
      });
  }

  /** One check of every text queued now, and the release of what it let out. */
  private async run(final: boolean): Promise<void> {
    const count = this.queue.length;
    const sent = textsOf(this.queue);
    this.uncheckedChars = 0;
    this.due = false;
    this.clearTimer();
    if (sent.length === 0) {
      // Only chunks without text are left (the finish): they leave in order.
      await this.release(count, [], undefined, final);
      return;
    }
    let response: CheckResponseOutput;
    try {
      response = await this.options.check(sent, final);
    } catch {
      response = { blocked: true, texts: [], decisions: [], placeholders: [] };
    }
    if (this.closed) return;
    if (response.blocked) {
      await this.block();
      return;
    }
    await this.release(count, sent, response, final);
    if (this.uncheckedChars > 0 && !this.timer) this.armTimer();
  }

  /** The answer is blocked: nothing queued leaves; a `content_filter` chunk ends every open choice. */
  private async block(): Promise<void> {
    this.closed = true;
    this.queue.length = 0;
    this.clearTimer();
    const template = this.template ?? {};
    const ending = [...this.seenChoices].filter((index) => !this.finishSent.has(index));
    const chunk: ChunkObject = {
      id: template.id,
      object: template.object ?? 'chat.completion.chunk',
      created: template.created,
      model: template.model,
      ...(template.system_fingerprint === undefined ? {} : { system_fingerprint: template.system_fingerprint }),
      choices: (ending.length > 0 ? ending : [0]).map((index) => ({ index, delta: {}, logprobs: null, finish_reason: 'content_filter' })),
    };
    await this.send(JSON.stringify(chunk), '', undefined);
    this.options.blocked();
  }

  /**
   * Emits the queue's first `count` pieces as far as the check released their text, in order; a
   * piece whose text is released in part leaves that part, its rest staying at the queue's head
   * with what follows. A masked text (its length changed) is never cut inside what the mask
   * changed: its released text leaves whole or stops before the change.
   */
  private async release(count: number, sent: readonly Sent[], response: CheckResponseOutput | undefined, final: boolean): Promise<void> {
    const paths = new Map<string, PathRelease>();
    sent.forEach((text, position) => {
      const result = response?.texts[position];
      const held = final ? 0 : Math.min(text.text.length, Math.max(0, result?.held_chars ?? 0));
      const released = result?.text ?? text.text.slice(0, text.text.length - held);
      // Restored placeholders are changes like masks: each leaves whole, never cut between chunks.
      const restored = this.options.restore ? this.options.restore(released) : released;
      paths.set(text.path, pathRelease(text.text, restored, text.text.length - held));
    });
    // Where the release stops: limits only shrink (to a mask's start), so this ends.
    let cut = cutOf(this.queue, count, paths);
    for (;;) {
      let changed = false;
      for (const [path, release] of paths) {
        const emitted = cut.emitted.get(path) ?? 0;
        if (release.masked && emitted > release.prefix && emitted < release.limit) {
          release.limit = release.prefix;
          changed = true;
        }
      }
      if (!changed) break;
      cut = cutOf(this.queue, count, paths);
    }
    const offsets = new Map<string, number>();
    const outgoing: Array<{ json: string; text: string; piece: Piece }> = [];
    const whole = this.queue.splice(0, cut.pieces);
    for (const piece of whole) {
      this.queuedChars -= piece.slots.reduce((sum, slot) => sum + slot.text.length, 0);
      outgoing.push(this.released(piece, paths, offsets));
    }
    if (cut.partial) {
      const { slot, covered } = cut.partial;
      const leaving = splitHead(this.queue[0]!, slot, covered);
      this.queuedChars -= leaving.slots.reduce((sum, entry) => sum + entry.text.length, 0);
      outgoing.push(this.released(leaving, paths, offsets));
    }
    // Chunks without text now at the head wait for nothing.
    while (this.queue.length > 0 && this.queue[0]!.slots.length === 0) {
      const piece = this.queue.shift()!;
      outgoing.push({ json: pieceJson(piece), text: '', piece });
    }
    for (const { json, text, piece } of outgoing) {
      if (this.closed) return;
      await this.send(json, text, piece);
    }
  }

  /** A piece's JSON with its first `slots` slots' text replaced by what leaves of them. */
  private released(piece: Piece, paths: Map<string, PathRelease>, offsets: Map<string, number>) {
    let text = '';
    let changed = false;
    for (const slot of piece.slots) {
      const release = paths.get(slot.path);
      const start = offsets.get(slot.path) ?? 0;
      const end = start + slot.text.length;
      offsets.set(slot.path, end);
      const out = release ? release.slice(start, end) : slot.text;
      if (out !== slot.text) {
        setSlot(piece.chunk, slot, out);
        changed = true;
      }
      text += out;
    }
    if (changed) piece.json = undefined;
    return { json: pieceJson(piece), text, piece };
  }
}

/** How much of one path's text a check released, and how its masked text maps onto the original. */
interface PathRelease {
  /** Original characters that may leave now (the rest was held back), or fewer (see release). */
  limit: number;
  readonly masked: boolean;
  /** Characters the released text shares with the original at its start, and at its end. */
  readonly prefix: number;
  /** The released characters of the original's [start, end), where [0, length) is all of it. */
  slice(start: number, end: number): string;
}

function pathRelease(original: string, released: string, length: number): PathRelease {
  const head = original.slice(0, length);
  if (released === head) return { limit: length, masked: false, prefix: length, slice: (start, end) => original.slice(start, end) };
  let prefix = 0;
  while (prefix < length && prefix < released.length && head[prefix] === released[prefix]) prefix++;
  let suffix = 0;
  while (suffix < length - prefix && suffix < released.length - prefix && head[length - 1 - suffix] === released[released.length - 1 - suffix]) suffix++;
  const middle = released.slice(prefix, released.length - suffix);
  const suffixStart = length - suffix;
  return {
    limit: length,
    masked: true,
    prefix,
    // Unchanged text leaves where it was; what the masks changed leaves whole in the text that
    // held its first character.
    slice(start, end) {
      let out = start < prefix ? original.slice(start, Math.min(end, prefix)) : '';
      if (start <= prefix && (prefix < end || (prefix === length && end === length))) out += middle;
      if (end > suffixStart) out += original.slice(Math.max(start, suffixStart), end);
      return out;
    },
  };
}

/** Where a release stops: whole pieces, then perhaps part of the next one's slots. */
interface Cut {
  pieces: number;
  partial: { slot: number; covered: number } | undefined;
  emitted: Map<string, number>;
}

function cutOf(queue: readonly Piece[], count: number, paths: Map<string, PathRelease>): Cut {
  const emitted = new Map<string, number>();
  for (let index = 0; index < count; index++) {
    const piece = queue[index]!;
    for (let position = 0; position < piece.slots.length; position++) {
      const slot = piece.slots[position]!;
      const done = emitted.get(slot.path) ?? 0;
      const limit = paths.get(slot.path)?.limit ?? done;
      if (done + slot.text.length <= limit) {
        emitted.set(slot.path, done + slot.text.length);
        continue;
      }
      const covered = Math.max(0, limit - done);
      emitted.set(slot.path, done + covered);
      // Nothing of this piece can leave: the release stops before it.
      if (position === 0 && covered === 0) return { pieces: index, partial: undefined, emitted };
      return { pieces: index, partial: { slot: position, covered }, emitted };
    }
  }
  return { pieces: count, partial: undefined, emitted };
}

/**
 * Splits the queue's head at its slot `slot`, `covered` characters in: returns the part that
 * leaves (the leading fields, the slots before, that much of the slot) and leaves the rest at the
 * head (the slot's remaining text, the slots after with their tool calls, the trailing fields and
 * the finish), so that text keeps its order.
 */
function splitHead(head: Piece, slot: number, covered: number): Piece {
  const cutSlot = head.slots[slot]!;
  const cutOrder = cutSlot.field === undefined ? TEXT_FIELDS.length : TEXT_FIELDS.indexOf(cutSlot.field);
  const first = JSON.parse(JSON.stringify(head.chunk)) as ChunkObject;
  const firstChoice = first.choices![0]!;
  const firstDelta = (firstChoice.delta ??= {});
  firstChoice.finish_reason = null;
  delete first.usage;
  for (const field of Object.keys(firstDelta)) {
    const order = (TEXT_FIELDS as readonly string[]).indexOf(field);
    const keep = field === 'role' || field === 'tool_calls' || (order >= 0 && order <= cutOrder);
    if (!keep) delete firstDelta[field];
  }
  if (cutSlot.field !== undefined) delete firstDelta.tool_calls;
  else firstDelta.tool_calls = firstDelta.tool_calls!.slice(0, cutSlot.call + 1);
  const firstSlots = head.slots.slice(0, slot + 1).map((entry) => ({ ...entry }));
  firstSlots[slot]!.text = cutSlot.text.slice(0, covered);
  setSlot(first, firstSlots[slot]!, firstSlots[slot]!.text);

  const rest = head.chunk;
  const restDelta = rest.choices![0]!.delta!;
  delete restDelta.role;
  TEXT_FIELDS.forEach((field, order) => {
    if (order < cutOrder) delete restDelta[field];
  });
  let restSlots = head.slots.slice(slot).map((entry) => ({ ...entry }));
  if (cutSlot.field === undefined) {
    // The cut tool call keeps only its remaining arguments: its id and name went out.
    const calls = restDelta.tool_calls!.slice(cutSlot.call);
    calls[0] = { index: calls[0]!.index, function: { arguments: '' } };
    restDelta.tool_calls = calls;
    restSlots = restSlots.map((entry) => (entry.field === undefined ? { ...entry, call: entry.call - cutSlot.call } : entry));
  }
  restSlots[0]!.text = cutSlot.text.slice(covered);
  setSlot(rest, restSlots[0]!, restSlots[0]!.text);
  head.slots = restSlots;
  head.json = undefined;
  return { json: undefined, chunk: first, slots: firstSlots, finishing: false };
}

/** A chunk as pieces: one per choice (the usage on the last), or the chunk itself when it has none. */
function piecesOf(json: string, chunk: ChunkObject): Piece[] {
  const choices = chunk.choices ?? [];
  if (choices.length <= 1) return [{ json, chunk, slots: slotsOf(choices[0]), finishing: finishes(choices[0]) }];
  return choices.map((choice, position) => {
    const { usage, choices: _choices, ...rest } = chunk;
    const single: ChunkObject = { ...rest, choices: [choice], ...(position === choices.length - 1 && usage !== undefined ? { usage } : {}) };
    return { json: undefined, chunk: single, slots: slotsOf(choice), finishing: finishes(choice) };
  });
}

function finishes(choice: ChoiceObject | undefined): boolean {
  return Boolean(choice?.finish_reason);
}

/** The checkable texts of one choice's delta, in the order the renderers write them. */
function slotsOf(choice: ChoiceObject | undefined): Slot[] {
  const delta = choice?.delta;
  if (!delta) return [];
  const base = `choices[${choice.index ?? 0}].delta`;
  const slots: Slot[] = [];
  for (const field of TEXT_FIELDS) {
    const text = delta[field];
    if (typeof text === 'string' && text !== '') slots.push({ path: `${base}.${field}`, field, call: -1, text });
  }
  (delta.tool_calls ?? []).forEach((call, position) => {
    const text = call.function?.arguments;
    if (typeof text === 'string' && text !== '')
      slots.push({ path: `${base}.tool_calls[${call.index ?? position}].function.arguments`, field: undefined, call: position, text });
  });
  return slots;
}

function setSlot(chunk: ChunkObject, slot: Slot, text: string): void {
  const delta = chunk.choices![0]!.delta!;
  if (slot.field !== undefined) delta[slot.field] = text;
  else {
    const call = delta.tool_calls![slot.call]!;
    call.function = { ...call.function, arguments: text };
  }
}

/** The texts queued, one per path in order of first appearance, each the concatenation of its slots. */
function textsOf(queue: readonly Piece[]): Sent[] {
  const texts = new Map<string, string>();
  for (const piece of queue) for (const slot of piece.slots) texts.set(slot.path, (texts.get(slot.path) ?? '') + slot.text);
  return [...texts].map(([path, text]) => ({ path, text }));
}

function pieceJson(piece: Piece): string {
  return piece.json ?? JSON.stringify(piece.chunk);
}
