/**
 * Values made once per key and kept for the process (a cloud credential, a signer, an auth client,
 * each loading its library at first use). Held as promises, so that first uses at once make one;
 * a making that fails is forgotten, so the next use tries again.
 */
export class MadeOnce<Key, Value> {
  private readonly made = new Map<Key, Promise<Value>>();

  /** The key's value, made by `make` at its first use. */
  get(key: Key, make: () => Value | Promise<Value>): Promise<Value> {
    let value = this.made.get(key);
    if (!value) {
      value = Promise.resolve().then(make);
      value.catch(() => this.made.delete(key));
      this.made.set(key, value);
    }
    return value;
  }
}
