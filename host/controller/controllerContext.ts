// The context a controller is called with (common/controller.ts): plain fields, and two made only when first read,
// `queryBytes` and `signal`. Those two are own, enumerable getters, as an object literal's would be, but defined
// with the same two functions on every context. An object literal's getters are new closures each time: V8 makes
// the object a dictionary and gives each getter an AccessorPair allocated in the old generation (factory.cc,
// NewAccessorPair), which keeps the closures, and through them the request, alive through every scavenge until a
// full GC. With one such context a request, a host worker's scavenges promoted ~3.5 MB each and it spent twice the
// CPU a request (docs/benchmarks.md, "The whole stack").
import type { ControllerContext } from '../../common/controller.ts';
import { MAX_INPUT_VARS, parsePhpQuery } from './query.ts';

/** The fields a context has from the start. */
export type ContextFields = Omit<ControllerContext, 'queryBytes' | 'signal'>;

/** What the two lazy fields are made from, and each one once made. */
interface LazyParts {
  rawQuery: string;
  signal: () => AbortSignal;
  queryBytes?: ControllerContext['queryBytes'];
}

const LAZY = Symbol('lazy context parts');

type Context = ControllerContext & { readonly [LAZY]: LazyParts };

// Defined one by one: with Object.defineProperties a context took 630 ns to make instead of 390.
const QUERY_BYTES: PropertyDescriptor = {
  get(this: Context) {
    const parts = this[LAZY];
    return (parts.queryBytes ??= parsePhpQuery(parts.rawQuery, MAX_INPUT_VARS, 'latin1').query);
  },
  enumerable: true,
  configurable: true,
};
const SIGNAL: PropertyDescriptor = {
  get(this: Context) {
    return this[LAZY].signal();
  },
  enumerable: true,
  configurable: true,
};

/** `fields` (taken, not copied) as a controller's context; `signal` makes the abort signal when first read. */
export function controllerContext(fields: ContextFields, signal: () => AbortSignal): ControllerContext {
  // Not enumerable: a controller that spreads or serialises its context sees only the context's own fields.
  Object.defineProperty(fields, LAZY, { value: { rawQuery: fields.rawQuery, signal } satisfies LazyParts });
  Object.defineProperty(fields, 'queryBytes', QUERY_BYTES);
  return Object.defineProperty(fields, 'signal', SIGNAL) as ControllerContext;
}
