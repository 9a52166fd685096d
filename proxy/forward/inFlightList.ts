// What is in flight and churns with every request: the server's open responses (/metrics, a graceful stop), the
// requests sent to each host worker (least-busy routing). A list linked through one entry an item, not a Set: with
// the server's long-lived Set taking and dropping a response every request, one proxy process at saturation spent
// 2.5-5 ms a scavenge and its old generation grew 1.3-2.5 MB at each (`--trace-gc`); with this list, under 1 ms and
// no growth (docs/benchmarks.md, "The whole stack").

/** An item's place in the list, from add() to delete(). */
export interface InFlightEntry<T> {
  readonly item: T;
  prev: InFlightEntry<T> | undefined;
  next: InFlightEntry<T> | undefined;
  linked: boolean;
}

export class InFlightList<T> implements Iterable<T> {
  size = 0;
  private first: InFlightEntry<T> | undefined;
  private last: InFlightEntry<T> | undefined;

  add(item: T): InFlightEntry<T> {
    const entry: InFlightEntry<T> = { item, prev: this.last, next: undefined, linked: true };
    if (this.last) this.last.next = entry;
    else this.first = entry;
    this.last = entry;
    this.size += 1;
    return entry;
  }

  /** Takes `entry` out; a second call for it does nothing. Its links are cleared, so it holds no other item. */
  delete(entry: InFlightEntry<T>): void {
    if (!entry.linked) return;
    entry.linked = false;
    if (entry.next) entry.next.prev = entry.prev;
    else this.last = entry.prev;
    if (entry.prev) entry.prev.next = entry.next;
    else this.first = entry.next;
    entry.prev = undefined;
    entry.next = undefined;
    this.size -= 1;
  }

  /** Oldest first, as a Set. The item just given may be deleted before the next is asked for. */
  *[Symbol.iterator](): Iterator<T> {
    for (let entry = this.first; entry;) {
      const newer = entry.next;
      yield entry.item;
      entry = newer;
    }
  }
}
