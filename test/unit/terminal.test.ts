// What `extqs dev` writes on the terminal (common/terminal.ts): when to colour, the line, the code frame.
import { expect } from 'chai';
import { codeFrame, colourWanted, controllerLocation, terminalLine } from '../../common/terminal.ts';

describe('terminal output', () => {
  describe('colourWanted', () => {
    it('colours a terminal, not a pipe', () => {
      expect(colourWanted({}, true)).to.equal(true);
      expect(colourWanted({}, false)).to.equal(false);
      expect(colourWanted({ TERM: 'dumb' }, true)).to.equal(false);
    });
    it('respects NO_COLOR and NODE_DISABLE_COLORS on a terminal', () => {
      expect(colourWanted({ NO_COLOR: '1' }, true)).to.equal(false);
      expect(colourWanted({ NODE_DISABLE_COLORS: '1' }, true)).to.equal(false);
    });
    it('lets FORCE_COLOR win, as Node does; FORCE_COLOR=0 turns colour off', () => {
      expect(colourWanted({ FORCE_COLOR: '1' }, false)).to.equal(true);
      expect(colourWanted({ FORCE_COLOR: '', NO_COLOR: '1' }, false)).to.equal(true);
      expect(colourWanted({ FORCE_COLOR: '0' }, true)).to.equal(false);
      expect(colourWanted({ FORCE_COLOR: 'false' }, true)).to.equal(false);
    });
  });

  describe('terminalLine', () => {
    const entry = {
      time: new Date(2026, 10, 25, 9, 8, 7, 6),
      level: 'error' as const,
      source: 'host',
      requestId: 'r-1',
      message: '[Latest] failed\nnext',
    };
    it('shows time, level, source, request id and message; continuation lines indented', () => {
      expect(terminalLine(entry, false)).to.equal('09:08:07.006 error  host [req r-1] [Latest] failed\n    next');
    });
    it('colours the level, the request id and the controller', () => {
      expect(terminalLine(entry, true)).to.equal(
        '\u001b[2m09:08:07.006\u001b[0m \u001b[31merror \u001b[0m \u001b[1mhost\u001b[0m \u001b[35m[req r-1]\u001b[0m \u001b[36m[Latest]\u001b[0m failed\n    next',
      );
    });
  });

  describe('code frames', () => {
    const source = ['one', 'two', 'three', '\tfour()', 'five', 'six'].join('\n');
    it('shows two lines each side, the failing one marked, a caret under the column (tabs widened)', () => {
      expect(codeFrame(source, 4, 2)).to.equal(
        ['  2 | two', '  3 | three', '> 4 |   four()', '    |   ^', '  5 | five', '  6 | six'].join('\n'),
      );
    });
    it('is empty for a line outside the source', () => {
      expect(codeFrame(source, 0, 1)).to.equal('');
      expect(codeFrame(source, 7, 1)).to.equal('');
    });
    it('finds the first location inside the controllers directory, not in the host or a look-alike', () => {
      const stack =
        'Error: x\n    at f (/srv/www/controllers2/A.ts:1:1)\n    at g (/srv/www/controllers/Latest.ts:12:5)\n    at h (/srv/www/controllers/B.ts:3:3)';
      expect(controllerLocation(stack, '/srv/www/controllers')).to.deep.equal({
        file: '/srv/www/controllers/Latest.ts',
        line: 12,
        column: 5,
      });
      expect(controllerLocation('Error: x\n    at app.js:1:2', '/srv/www/controllers')).to.equal(undefined);
    });
  });
});
