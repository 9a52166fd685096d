// A table keyed by a word a client chose (a controller name, a header field name): nothing is inherited, so
// `__proto__`, `constructor` and `toString` are keys like any other, never Object.prototype's members.

/** A table with no prototype: what a controller is given (`$_GET`…) prints as `[Object: null prototype]`. */
export function nullObject<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/** The prototype of every fieldTable(): empty, frozen, with no prototype of its own. */
const NO_MEMBERS: object = Object.freeze(Object.create(null) as object);

/**
 * A table of header fields on the proxy's request path. V8 starts an Object.create(null) in dictionary mode; one
 * made from an empty prototype keeps fast properties, and stores and reads a head's fields in a third of the time
 * (docs/benchmarks.md, "The whole stack").
 */
export function fieldTable<T>(): Record<string, T> {
  return Object.create(NO_MEMBERS) as Record<string, T>;
}
