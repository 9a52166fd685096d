import { expect } from 'chai';
import { CONTROLLER_NAME, namesPossibleController } from '../../common/controllerName.ts';
import { controllerNameOf } from '../../host/worker/watcher.ts';

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

describe('namesPossibleController (common/controllerName.ts)', () => {
  it('is true for an identifier after the prefix, with or without path info, escaped or not', () => {
    for (const path of ['/External/Latest', '/External/_x9/a/b', '/External/%4Catest', '/External/A/'])
      expect(namesPossibleController(path), path).to.equal(true);
  });

  it('is false, not merely falsy, for a name no file can have or an escape that does not decode', () => {
    for (const path of ['/External/', '/External/9x', '/External/a-b', '/External/a.b', '/External/%E0%A4%A', '/External/%ZZ'])
      expect(namesPossibleController(path), path).to.equal(false);
  });

  it('holds the whole name to the rule, not a prefix or suffix of it', () => {
    expect(CONTROLLER_NAME.test('Latest')).to.equal(true);
    expect(CONTROLLER_NAME.test('Latest!')).to.equal(false);
    expect(CONTROLLER_NAME.test('!Latest')).to.equal(false);
  });
});
