/**
 * A LIST response read as it streams in: each element of the top-level `items` array is
 * parsed on its own and handed over as soon as its last byte arrived, then dropped; the rest
 * of the document (kind, apiVersion, `metadata` with resourceVersion and continue token) is
 * kept with `items` emptied and parsed at the end. What the reader holds at any time is one
 * item's bytes plus the envelope, whatever the page holds: a page of 500 ConfigMaps of 1 MiB
 * costs one ConfigMap, not 500 (a whole-page `JSON.parse` held the page's text and its parsed
 * objects at once).
 *
 * Guarantees: `ListScanner` is pure (no I/O) and byte-exact: it splits the JSON text on its
 * structure only (strings with their escapes are skipped whole, wherever a chunk boundary
 * falls, including inside a multi-byte UTF-8 character or between a backslash and the
 * character it escapes), so each item is parsed by `JSON.parse` from exactly the bytes the
 * server sent for it; items are delivered in the order of the document; the envelope is at
 * most `MAX_ENVELOPE_BYTES` (past it the body is refused as not a list), and a document that
 * is not valid JSON, or has no top-level object, is refused by `finish()` or by the item's
 * own parse. The object an element is, not another JSON value, is delivered; any other
 * element (`null`, a number) is skipped — the API server sends objects only.
 */

/** The bytes of a list's envelope (everything but its items) at most: a list's metadata is small. */
export const MAX_ENVELOPE_BYTES = 1024 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

const isSpace = (byte: number): boolean => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;

/** The bytes of `items` below its key (without the quotes). */
const ITEMS_KEY = 'items';

export class ListScanner {
  readonly #onItem: (item: Record<string, unknown>) => void;
  /** Nesting of objects and arrays outside strings; 1 inside the top-level object. */
  #depth = 0;
  #inString = false;
  /** Inside a string, the chunk so far ended in an odd run of backslashes (the next byte is escaped). */
  #escaped = false;
  /** At depth 1: the next string is a key (after `{` or `,`), not a value (after `:`). */
  #expectKey = false;
  /** The top-level key being read or just read (only its first bytes: enough to tell `items`). */
  #key = '';
  #readingKey = false;
  /** Inside the top-level `items` array (its `[` seen, its `]` not yet). */
  #inItems = false;
  /** The bytes of the item being read (from earlier chunks); undefined between items. */
  #item: Buffer[] | undefined;
  /** The item being read is a primitive (ends at `,`, `]` or a space at depth 2), not an object, array or string. */
  #primitive = false;
  #envelope: Buffer[] = [];
  #envelopeBytes = 0;
  /** Items delivered so far. */
  items = 0;

  constructor(onItem: (item: Record<string, unknown>) => void) {
    this.#onItem = onItem;
  }

  /** Reads one chunk of the body; throws when the envelope grows past its bound or an item is not JSON. */
  push(chunk: Buffer): void {
    let envelopeFrom = this.#inItems ? -1 : 0;
    let itemFrom = this.#item ? 0 : -1;
    let i = 0;
    const n = chunk.length;
    while (i < n) {
      if (this.#inString) {
        // Skip to the closing quote in native code: a megabyte of data is one indexOf, not a loop.
        const end = this.#stringEnd(chunk, i);
        if (end < 0) {
          if (this.#readingKey) this.#key += chunk.subarray(i, Math.min(n, i + 16)).toString('latin1');
          i = n;
          break;
        }
        if (this.#readingKey) {
          this.#key = (this.#key + chunk.subarray(i, end).toString('latin1')).slice(0, 16);
          this.#readingKey = false;
        }
        this.#inString = false;
        i = end + 1;
        // A string item ends with its closing quote.
        if (this.#inItems && this.#depth === 2 && itemFrom >= 0 && !this.#primitive) this.#endItem(chunk, itemFrom, i), (itemFrom = -1);
        continue;
      }
      const byte = chunk[i] as number;
      if (this.#inItems && this.#depth === 2) {
        if (itemFrom < 0 && this.#item === undefined) {
          // Between items: a comma, spaces, the array's end, or the start of the next item.
          if (byte === CLOSE_ARRAY) {
            this.#inItems = false;
            this.#depth = 1;
            envelopeFrom = i;
          } else if (byte !== COMMA && !isSpace(byte)) {
            itemFrom = i;
            this.#item = [];
            this.#primitive = byte !== OPEN_OBJECT && byte !== OPEN_ARRAY && byte !== QUOTE;
            if (byte === QUOTE) this.#inString = true;
            else if (!this.#primitive) this.#depth += 1;
          }
          i += 1;
          continue;
        }
        if (this.#primitive && (byte === COMMA || byte === CLOSE_ARRAY || isSpace(byte))) {
          this.#endItem(chunk, itemFrom, i);
          itemFrom = -1;
          continue; // the same byte is read again between items
        }
      }
      if (byte === QUOTE) {
        this.#inString = true;
        if (this.#depth === 1 && this.#expectKey) {
          this.#readingKey = true;
          this.#key = '';
        }
      } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
        this.#depth += 1;
        if (this.#depth === 1) this.#expectKey = byte === OPEN_OBJECT;
        if (this.#depth === 2 && byte === OPEN_ARRAY && this.#key === ITEMS_KEY && !this.#inItems) {
          // The items array opens: the envelope keeps its `[` and, later, its `]`.
          this.#inItems = true;
          this.#keepEnvelope(chunk.subarray(envelopeFrom, i + 1));
          envelopeFrom = -1;
        }
      } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
        this.#depth -= 1;
        if (this.#inItems && this.#depth === 2 && itemFrom >= 0) {
          this.#endItem(chunk, itemFrom, i + 1);
          itemFrom = -1;
        }
      } else if (this.#depth === 1 && byte === COMMA) {
        this.#expectKey = true;
      } else if (this.#depth === 1 && byte === COLON) {
        this.#expectKey = false;
      }
      i += 1;
    }
    if (itemFrom >= 0) this.#item?.push(chunk.subarray(itemFrom));
    if (envelopeFrom >= 0) this.#keepEnvelope(chunk.subarray(envelopeFrom));
  }

  /** The list without its items (they were delivered), once the whole body was pushed; throws when it is not a JSON list. */
  finish(): Record<string, unknown> {
    if (this.#inString || this.#depth !== 0 || this.#item !== undefined) throw new TypeError('the list ended before its JSON did');
    const parsed = JSON.parse(Buffer.concat(this.#envelope).toString('utf8')) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new TypeError('expected a JSON object (a list)');
    return parsed as Record<string, unknown>;
  }

  /** The index of the quote that closes the string read from `from`, or -1 when the chunk ends first (the escape state carried). */
  #stringEnd(chunk: Buffer, from: number): number {
    let i = from;
    if (this.#escaped) {
      // The previous chunk ended in an escaping backslash: this chunk's first byte is escaped.
      this.#escaped = false;
      i += 1;
    }
    while (i < chunk.length) {
      const quote = chunk.indexOf(QUOTE, i);
      if (quote < 0) break;
      let backslashes = 0;
      for (let k = quote - 1; k >= i && chunk[k] === BACKSLASH; k--) backslashes += 1;
      if (backslashes % 2 === 0) return quote;
      i = quote + 1;
    }
    // No closing quote in this chunk: does it end in an escaping backslash?
    let trailing = 0;
    for (let k = chunk.length - 1; k >= i && chunk[k] === BACKSLASH; k--) trailing += 1;
    this.#escaped = trailing % 2 === 1;
    return -1;
  }

  #keepEnvelope(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.#envelopeBytes += bytes.length;
    if (this.#envelopeBytes > MAX_ENVELOPE_BYTES) throw new TypeError(`the list's envelope (all but its items) passed ${MAX_ENVELOPE_BYTES} bytes: not a list`);
    this.#envelope.push(Buffer.from(bytes));
  }

  /** The item ending before `end` in `chunk` (started at `from`, or in an earlier chunk) is parsed and delivered. */
  #endItem(chunk: Buffer, from: number, end: number): void {
    const parts = this.#item ?? [];
    parts.push(chunk.subarray(from, end));
    this.#item = undefined;
    this.#primitive = false;
    const value = JSON.parse(parts.length === 1 ? (parts[0] as Buffer).toString('utf8') : Buffer.concat(parts).toString('utf8')) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return;
    this.items += 1;
    this.#onItem(value as Record<string, unknown>);
  }
}
