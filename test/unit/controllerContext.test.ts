import { expect } from 'chai';
import { setFlagsFromString } from 'node:v8';
import { controllerContext, type ContextFields } from '../../host/controller/controllerContext.ts';

const fields = (rawQuery: string): ContextFields => ({
  query: {},
  post: {},
  files: {},
  cookies: {},
  body: {
    stream: () => new Blob([]).stream(),
    text: () => Promise.resolve(''),
    json: () => Promise.resolve(null),
    arrayBuffer: () => Promise.resolve(new ArrayBuffer(0)),
  },
  rawQuery,
  method: 'GET',
  path: '/External/Latest',
  pathInfo: '',
  headers: {},
  requestId: 'id',
});

/** V8's own answers, in natives syntax (allowed for functions compiled after the flag is set). */
function v8Says(question: string, ...objects: object[]): boolean {
  setFlagsFromString('--allow-natives-syntax');
  // Natives syntax is compiled only at run time, after the flag: there is no other way to write it.
  // eslint-disable-next-line @typescript-eslint/no-implied-eval
  return new Function('a', 'b', `return %${question}`)(...objects) as boolean;
}

describe('a controller context', function () {
  it('has queryBytes and signal as own enumerable fields, as an object literal would', function () {
    const context = controllerContext(fields('y=%E9'), () => AbortSignal.abort());
    expect(Object.keys(context)).to.include.members(['query', 'queryBytes', 'signal', 'rawQuery', 'requestId']);
    expect({ ...context }.queryBytes).to.deep.equal({ y: '\xe9' });
  });

  it('parses queryBytes when first read, once', function () {
    const context = controllerContext(fields('y=%E9&y=%41'), () => AbortSignal.abort());
    const first = context.queryBytes;
    expect(first).to.deep.equal({ y: 'A' });
    expect(context.queryBytes).to.equal(first);
  });

  it('makes the signal only when it is read', function () {
    let made = 0;
    const controller = new AbortController();
    const context = controllerContext(fields(''), () => {
      made += 1;
      return controller.signal;
    });
    expect(made).to.equal(0);
    expect(context.signal).to.equal(controller.signal);
    expect(made).to.equal(1);
  });

  it('is a fast object, with one hidden class for every request (a literal with getters is a dictionary each)', function () {
    const one = controllerContext(fields('a=1'), () => AbortSignal.abort());
    const two = controllerContext(fields('b=2'), () => AbortSignal.abort());
    expect(v8Says('HasFastProperties(a)', one)).to.equal(true);
    expect(v8Says('HaveSameMap(a, b)', one, two)).to.equal(true);
  });
});
