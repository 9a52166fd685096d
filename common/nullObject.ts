// A table keyed by a word a client chose (a controller name, a header field name): with no prototype,
// `__proto__`, `constructor` and `toString` are keys like any other, never Object.prototype's members.

export function nullObject<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}
