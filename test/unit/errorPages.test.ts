import { expect } from 'chai';
import { errorPage } from '../../proxy/core/errorPages.ts';

describe('errorPage', () => {
  describe('404', () => {
    it('is Apache’s canned Not Found page, byte for byte', () => {
      expect(errorPage(404).toString('latin1')).to.equal(
        '<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n' +
          '<html><head>\n' +
          '<title>404 Not Found</title>\n' +
          '</head><body>\n' +
          '<h1>Not Found</h1>\n' +
          '<p>The requested URL was not found on this server.</p>\n' +
          '</body></html>\n',
      );
    });

    it('contains the 404 title', () => {
      expect(errorPage(404).toString()).to.include('<title>404 Not Found</title>');
    });

    it('does not echo a request URL', () => {
      const page = errorPage(404).toString();
      expect(page).not.to.include('/External');
      expect(page).not.to.match(/requested URL \//);
    });
  });

  describe('500', () => {
    it('has the Internal Server Error title and heading', () => {
      const page = errorPage(500).toString();
      expect(page).to.include('<title>500 Internal Server Error</title>');
      expect(page).to.include('<h1>Internal Server Error</h1>');
      expect(page).to.include('<p>More information about this error may be available\nin the server error log.</p>');
    });
  });

  describe('other statuses', () => {
    it('has the 503 title', () => {
      expect(errorPage(503).toString()).to.include('<title>503 Service Unavailable</title>');
    });

    it('builds a page without an explanation for a status it has none for', () => {
      expect(errorPage(418).toString()).to.include("<title>418 I'm a Teapot</title>\n</head><body>\n<h1>I'm a Teapot</h1>\n\n</body>");
    });
  });

  describe('caching', () => {
    it('returns the same Buffer instance twice', () => {
      const first = errorPage(404);
      expect(errorPage(404)).to.equal(first);
      expect(errorPage(500)).to.equal(errorPage(500));
    });

    it('returns different pages for different statuses', () => {
      expect(errorPage(404)).not.to.equal(errorPage(500));
    });
  });
});
