import { expect } from 'chai';
import { controllerNameOf } from '../../host/watcher.ts';

describe('controllerNameOf', () => {
  describe('a controller source file', () => {
    it('names Latest.ts Latest', () => {
      expect(controllerNameOf('Latest.ts')).to.equal('Latest');
    });

    it('names a .js file by its base name, ignoring directories (/a/b/Alarm.js)', () => {
      expect(controllerNameOf('/a/b/Alarm.js')).to.equal('Alarm');
    });

    it('accepts a name starting with _ (_x9.ts)', () => {
      expect(controllerNameOf('/w/controllers/_x9.ts')).to.equal('_x9');
    });
  });

  describe('a file that is not a controller', () => {
    it('ignores an editor swap file (.Latest.ts.swp)', () => {
      expect(controllerNameOf('.Latest.ts.swp')).to.equal(undefined);
    });

    it('ignores another extension (Latest.json)', () => {
      expect(controllerNameOf('Latest.json')).to.equal(undefined);
    });

    it('ignores a name starting with a digit (9x.ts)', () => {
      expect(controllerNameOf('9x.ts')).to.equal(undefined);
    });

    it('ignores a name with a dot before the extension (Latest.test.ts)', () => {
      expect(controllerNameOf('Latest.test.ts')).to.equal(undefined);
    });

    it('ignores a hidden file (.ts has no extension)', () => {
      expect(controllerNameOf('.ts')).to.equal(undefined);
    });

    it('ignores a backup file (Latest.ts~)', () => {
      expect(controllerNameOf('Latest.ts~')).to.equal(undefined);
    });

    it('ignores an upper-case extension (Latest.TS)', () => {
      expect(controllerNameOf('Latest.TS')).to.equal(undefined);
    });
  });
});
