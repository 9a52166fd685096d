import { expect } from 'chai';
import { CONTROLLER_PREFIX } from '../../common/protocol.ts';
import { routeController } from '../../host/controller/controllerRoute.ts';

describe('routeController', () => {
  describe('a valid controller name', () => {
    it('splits /External/Latest?sn=1&no= into controller, path and raw query', () => {
      expect(routeController('/External/Latest?sn=1&no=')).to.deep.equal({
        kind: 'controller',
        name: 'Latest',
        pathInfo: '',
        path: '/External/Latest',
        rawQuery: 'sn=1&no=',
      });
    });

    it('gives an empty raw query when there is no ?', () => {
      expect(routeController('/External/Latest')).to.deep.equal({
        kind: 'controller',
        name: 'Latest',
        pathInfo: '',
        path: '/External/Latest',
        rawQuery: '',
      });
    });

    it('gives an empty raw query for a bare trailing ?', () => {
      expect(routeController('/External/Latest?').rawQuery).to.equal('');
    });

    it('keeps everything after the first ? as the raw query, including further ?s', () => {
      expect(routeController('/External/Latest?a=1?b=2').rawQuery).to.equal('a=1?b=2');
    });

    it('decodes percent escapes in the name (/External/Lat%65st is Latest)', () => {
      expect(routeController('/External/Lat%65st')).to.deep.equal({
        kind: 'controller',
        name: 'Latest',
        pathInfo: '',
        path: '/External/Lat%65st',
        rawQuery: '',
      });
    });

    it('ends the name at the first slash: /External/Latest/ is Latest with path info "/", as PHP saw it', () => {
      expect(routeController('/External/Latest/?sn=1')).to.deep.equal({
        kind: 'controller',
        name: 'Latest',
        pathInfo: '/',
        path: '/External/Latest/',
        rawQuery: 'sn=1',
      });
    });

    it('gives what follows the name, decoded, as the path info (PATH_INFO)', () => {
      expect(routeController('/External/a/b')).to.deep.include({ kind: 'controller', name: 'a', pathInfo: '/b' });
      expect(routeController('/External/Latest/x/y%20z')).to.deep.include({ name: 'Latest', pathInfo: '/x/y z' });
    });

    it('accepts a name starting with _ and containing digits (_x9)', () => {
      expect(routeController('/External/_x9')).to.deep.include({ kind: 'controller', name: '_x9' });
    });

    it('uses /External/ as the prefix', () => {
      expect(CONTROLLER_PREFIX).to.equal('/External/');
    });
  });

  describe('an invalid controller name', () => {
    it('rejects .. as invalid', () => {
      expect(routeController('/External/..')).to.deep.equal({
        kind: 'invalid',
        name: '..',
        pathInfo: '',
        path: '/External/..',
        rawQuery: '',
      });
    });

    it('rejects an encoded traversal ..%2f..%2fetc as invalid, decoded', () => {
      expect(routeController('/External/..%2f..%2fetc?x=1')).to.deep.equal({
        kind: 'invalid',
        name: '../../etc',
        pathInfo: '',
        path: '/External/..%2f..%2fetc',
        rawQuery: 'x=1',
      });
    });

    it('rejects a name with an encoded slash (a%2fb) as invalid', () => {
      expect(routeController('/External/a%2fb')).to.deep.include({ kind: 'invalid', name: 'a/b', pathInfo: '' });
    });

    it('rejects a path info that does not decode (%zz) as invalid', () => {
      expect(routeController('/External/Latest/%zz')).to.deep.include({ kind: 'invalid', name: 'Latest', pathInfo: '/%zz' });
    });

    it('rejects an encoded NUL (%00) as invalid', () => {
      expect(routeController('/External/%00')).to.deep.include({ kind: 'invalid', name: '\0' });
    });

    it('rejects a name starting with a digit (9abc) as invalid', () => {
      expect(routeController('/External/9abc')).to.deep.include({ kind: 'invalid', name: '9abc' });
    });

    it('rejects the empty name as invalid', () => {
      expect(routeController('/External/')).to.deep.equal({
        kind: 'invalid',
        name: '',
        pathInfo: '',
        path: '/External/',
        rawQuery: '',
      });
    });

    it('rejects a malformed escape (%E0%A4%A) as invalid and keeps the raw name', () => {
      expect(routeController('/External/%E0%A4%A?q')).to.deep.equal({
        kind: 'invalid',
        name: '%E0%A4%A',
        pathInfo: '',
        path: '/External/%E0%A4%A',
        rawQuery: 'q',
      });
    });

    it('rejects a name with a dot or dash as invalid', () => {
      expect(routeController('/External/Latest.php').kind).to.equal('invalid');
      expect(routeController('/External/Lat-est').kind).to.equal('invalid');
    });

    it('rejects a non-ASCII letter as invalid', () => {
      expect(routeController('/External/%C3%A9').kind).to.equal('invalid');
    });

    it('rejects a path outside /External/ as invalid', () => {
      expect(routeController('/Latest')).to.deep.include({ kind: 'invalid', name: '/Latest' });
    });
  });
});
