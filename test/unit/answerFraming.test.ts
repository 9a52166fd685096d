// The host holds a controller's body to its declared Content-Length (host/controller/answerFraming.ts): what goes out,
// what is held back, and when it fails, for bodies that end exactly, run past and end short.
import { expect } from 'chai';
import { AnswerLengthError, declaredLength, FRAMING_FIELDS, withinDeclaredLength } from '../../host/controller/answerFraming.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

/** What the generator yields before it ends or throws, and what it throws. */
async function run(pieces: string[], declared: number): Promise<{ sent: string; error?: AnswerLengthError }> {
  let sent = '';
  try {
    for await (const chunk of withinDeclaredLength(pieces.map(bytes), declared)) {
      expect(chunk.byteLength, 'no empty piece goes out').to.be.above(0);
      sent += new TextDecoder().decode(chunk);
    }
    return { sent };
  } catch (err) {
    return { sent, error: err as AnswerLengthError };
  }
}

describe('withinDeclaredLength', function () {
  it('passes a body of exactly the declared length, in any pieces, empty ones included', async function () {
    expect(await run(['ab', '', 'cd', 'e'], 5)).to.deep.equal({ sent: 'abcde' });
    expect(await run(['abcde'], 5)).to.deep.equal({ sent: 'abcde' });
    expect(await run([], 0)).to.deep.equal({ sent: '' });
    expect(await run(['', ''], 0)).to.deep.equal({ sent: '' });
  });

  it('stops a body that runs past the length one byte short of it, whether the overrun is in the last piece or a later one', async function () {
    const within = await run(['ab', 'cdefg'], 5);
    expect(within.sent).to.equal('abcd');
    expect(within.error).to.be.instanceOf(AnswerLengthError);
    expect(within.error).to.include({ declared: 5, actual: 7 });
    const later = await run(['abcde', 'SMUGGLED'], 5);
    expect(later.sent).to.equal('abcd');
    expect(later.error).to.include({ declared: 5, actual: 13 });
    expect(later.error!.message).to.equal('its answer declared Content-Length 5 and its body ran past it (at least 13 bytes)');
    expect(later.error).to.include({ code: 'HOST_ANSWER_LENGTH', name: 'AnswerLengthError' });
    // The piece that reaches the length exactly, one byte at a time at its end: the last byte is held, then sent.
    expect(await run(['abcd', 'e'], 5)).to.deep.equal({ sent: 'abcde' });
  });

  it('sends nothing of a body under a declared length of 0', async function () {
    const result = await run(['x'], 0);
    expect(result.sent).to.equal('');
    expect(result.error).to.include({ declared: 0, actual: 1 });
  });

  it('fails a body that ends short, after sending what it had', async function () {
    const result = await run(['abc'], 5);
    expect(result.sent).to.equal('abc');
    expect(result.error).to.include({ declared: 5, actual: 3 });
    expect(result.error!.message).to.equal('its answer declared Content-Length 5 and its body ended after 3 bytes');
    expect((await run([], 2)).error).to.include({ declared: 2, actual: 0 });
  });
});

describe('declaredLength', function () {
  it('reads one decimal byte count, and nothing else, as a length', function () {
    expect(declaredLength('4096')).to.equal(4096);
    expect(declaredLength(' 12 ')).to.equal(12);
    expect(declaredLength('0')).to.equal(0);
    for (const value of [null, '', '-1', '1.5', '12, 12', '0x10', 'abc', '1e3', '9999999999999999'])
      expect(declaredLength(value), String(value)).to.equal(undefined);
  });
});

describe('FRAMING_FIELDS', function () {
  it('names every field that frames a message or its connection, and not Content-Length (kept and counted)', function () {
    expect([...FRAMING_FIELDS].sort()).to.deep.equal([
      'connection',
      'keep-alive',
      'proxy-connection',
      'te',
      'trailer',
      'transfer-encoding',
      'upgrade',
    ]);
  });
});
