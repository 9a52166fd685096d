// The reference for a controller's request input: what php-cgi 8.2 (Debian's php8.2-cgi, the legacy stack's
// PHP) makes of a request, run on test/fixtures/phpInput.php with the php.ini limits the stack was given.
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './stack.ts';

export interface PhpRequest {
  contentType?: string;
  body?: string;
  cookie?: string;
}

/** php.ini's input limits, as the host's --post-max-size, --upload-max-filesize, --max-file-uploads. */
export interface PhpLimits {
  postMaxSize: number;
  uploadMaxFilesize: number;
  maxFileUploads: number;
}

/** Throws unless php-cgi runs: the tests that compare with it cannot stand in for it. */
export function requirePhpCgi(): void {
  if (spawnSync('php-cgi', ['-v']).status !== 0) {
    throw new Error('php-cgi is missing: install Debian php8.2-cgi (.ci/run does), the reference these tests compare with');
  }
}

/** What PHP makes of the request: php-cgi with the CGI environment Apache's mod_fcgid gives it. */
export function askPhp(request: PhpRequest, limits: PhpLimits): unknown {
  const body = Buffer.from(request.body ?? '');
  const out = execFileSync(
    'php-cgi',
    [
      '-d',
      `post_max_size=${limits.postMaxSize}`,
      '-d',
      `upload_max_filesize=${limits.uploadMaxFilesize}`,
      '-d',
      `max_file_uploads=${limits.maxFileUploads}`,
      '-d',
      'display_errors=0',
      '-d',
      'log_errors=0',
    ],
    {
      input: body,
      maxBuffer: 64 * 1024 * 1024,
      env: {
        PATH: process.env.PATH,
        REDIRECT_STATUS: '200',
        GATEWAY_INTERFACE: 'CGI/1.1',
        REQUEST_METHOD: 'POST',
        SCRIPT_FILENAME: join(ROOT, 'test/fixtures/phpInput.php'),
        CONTENT_TYPE: request.contentType ?? '',
        CONTENT_LENGTH: String(body.length),
        ...(request.cookie === undefined ? {} : { HTTP_COOKIE: request.cookie }),
      },
    },
  ).toString('utf8');
  const json = out.slice(out.indexOf('\r\n\r\n') + 4);
  return camelCased(JSON.parse(json));
}

/** PHP's $_FILES keys as the controller contract spells them; PHP's empty array `[]` as `{}`. */
function camelCased(value: unknown, top = true): unknown {
  if (Array.isArray(value)) return top && value.length === 0 ? {} : value.map((v) => camelCased(v, false));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, v]) => [
        key === 'tmp_name' ? 'tmpName' : key === 'full_path' ? 'fullPath' : key,
        camelCased(v, ['post', 'files', 'cookies'].includes(key) && top),
      ]),
    );
  }
  return value;
}

/**
 * The controller that answers what PHP's fixture prints: post, files (each kept upload as the MD5 of its
 * content), cookies and the raw body.
 */
export const ECHO_CONTROLLER = `import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Controller } from 'extqs';

// Each kept upload as the MD5 of its content, as the PHP fixture prints it.
const kept = (tree: unknown, isTmpName = false): unknown => {
  if (typeof tree === 'string') return isTmpName && tree !== '' ? 'md5:' + createHash('md5').update(readFileSync(tree)).digest('hex') : tree;
  if (Array.isArray(tree)) return tree.map((t) => kept(t, isTmpName));
  if (tree && typeof tree === 'object') return Object.fromEntries(Object.entries(tree).map(([k, v]) => [k, kept(v, isTmpName || k === 'tmpName')]));
  return tree;
};

const Echo: Controller = async ({ post, files, cookies, body }) => ({ post, files: kept(files) as object, cookies, input: await body.text() });
export default Echo;
`;

/** One multipart part (boundary XX) and its Content-Disposition, to build bodies PHP reads too. */
export const MULTIPART = 'multipart/form-data; boundary=XX';
export const part = (headers: string, content: string) => `--XX\r\n${headers}\r\n\r\n${content}\r\n`;
export const disposition = (name: string, fileName?: string) =>
  `Content-Disposition: form-data; name="${name}"${fileName === undefined ? '' : `; filename="${fileName}"`}`;
