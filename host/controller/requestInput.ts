// A controller's request input as PHP builds it before a script runs (main/SAPI.c, main/rfc1867.c):
// $_POST from a urlencoded or multipart body, $_FILES streamed to temp files, and php://input for any
// other body, left unread until the controller asks. Limits are php.ini's: post_max_size,
// upload_max_filesize, max_file_uploads; past them PHP's warnings, never an error for the client.
import { createWriteStream, type WriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { randomBytes } from 'node:crypto';
import type { QueryValue, RequestBody, UploadedFile, UploadedFiles, UploadError } from '../../common/controller.ts';
import { nullObject } from '../../common/nullObject.ts';
import { MAX_INPUT_VARS, parsePhpForm, PhpVariables } from './query.ts';
import { makeTempDir } from '../../common/tempDirs.ts';

export interface InputLimits {
  /** post_max_size in bytes; 0 = none. */
  postMaxSize: number;
  /** upload_max_filesize in bytes; 0 = none. */
  uploadMaxFilesize: number;
  maxFileUploads: number;
}

export interface RequestInput {
  post: Record<string, QueryValue>;
  files: Record<string, UploadedFile | UploadedFiles>;
  body: RequestBody;
  /** PHP's start-up warnings for this body, for host.log. */
  warnings: string[];
  /** Deletes the uploads; call it when the request has ended, however it ended. Absent without a body: nothing to delete. */
  discard: (() => Promise<void>) | undefined;
}

const FORM = 'application/x-www-form-urlencoded';
const MULTIPART = 'multipart/form-data';
const EMPTY_BODY = Buffer.alloc(0);
/** An empty body's reader: it keeps no state (a Buffer streams anew each time), so every request shares it. */
const NO_BODY: RequestBody = Object.freeze(bodyOf(EMPTY_BODY));

const UPLOAD_ERR_OK = 0;
const UPLOAD_ERR_INI_SIZE = 1;
const UPLOAD_ERR_FORM_SIZE = 2;
const UPLOAD_ERR_PARTIAL = 3;
const UPLOAD_ERR_NO_FILE = 4;
const UPLOAD_ERR_NO_TMP_DIR = 6;
const UPLOAD_ERR_CANT_WRITE = 7;

const startupWarning = (text: string) => `PHP Warning:  PHP Request Startup: ${text} in Unknown on line 0`;

/**
 * Reads the input a controller gets from `req`, as PHP would have before running the script. A request
 * without a body (most are GETs) gets its input at once, not a promise: no await, no upload directory.
 */
export function readRequestInput(req: IncomingMessage, limits: InputLimits): RequestInput | Promise<RequestInput> {
  const declared = req.headers['content-length'];
  const hasBody = declared !== undefined ? declared !== '0' : req.headers['transfer-encoding'] !== undefined;
  if (!hasBody) return { post: nullObject(), files: nullObject(), body: NO_BODY, warnings: [], discard: undefined };
  return readBodyInput(req, limits, declared);
}

async function readBodyInput(req: IncomingMessage, limits: InputLimits, declared: string | undefined): Promise<RequestInput> {
  const warnings: string[] = [];
  const uploads = new UploadDir();
  const result = (post: Record<string, QueryValue>, files: Record<string, UploadedFile | UploadedFiles>, body: RequestBody) => ({
    post,
    files,
    body,
    warnings,
    discard: () => uploads.remove(),
  });
  const empty = <T>() => nullObject<T>();

  const contentType = req.headers['content-type'] ?? '';
  const mediaType = contentType.split(';', 1)[0].trim().toLowerCase();
  if (mediaType !== FORM && mediaType !== MULTIPART) return result(empty(), empty(), bodyOf(req));

  const { postMaxSize } = limits;
  if (postMaxSize > 0 && declared !== undefined && Number(declared) > postMaxSize) {
    // PHP reads none of it, fills nothing, and still gives the body to php://input.
    warnings.push(startupWarning(`POST Content-Length of ${declared} bytes exceeds the limit of ${postMaxSize} bytes`));
    return result(empty(), empty(), bodyOf(req));
  }
  const overLimit = () =>
    warnings.push(startupWarning(`Actual POST length does not match Content-Length, and exceeds ${postMaxSize} bytes`));

  if (mediaType === FORM) {
    const raw = await readUpTo(req, postMaxSize);
    if (raw === undefined) {
      overLimit();
      return result(empty(), empty(), NO_BODY);
    }
    const form = parsePhpForm(raw.toString('utf8'));
    warnings.push(...form.warnings.map((w) => w.replace('Unknown: ', 'PHP Request Startup: ')));
    return result(form.query, empty(), bodyOf(raw));
  }

  const boundary = boundaryOf(contentType);
  if (boundary === undefined) {
    warnings.push('PHP Warning:  Missing boundary in multipart/form-data POST data in Unknown on line 0');
    return result(empty(), empty(), bodyOf(req));
  }
  const form = new MultipartForm(limits, uploads, warnings);
  const complete = await form.read(req, boundary);
  if (!complete) {
    overLimit();
    await uploads.remove();
    return result(empty(), empty(), NO_BODY);
  }
  return result(form.post.toObject(), form.files.toObject<UploadedFile | UploadedFiles>(), NO_BODY);
}

/** The multipart boundary as PHP finds it: `boundary=` in the Content-Type, quoted or up to `,` or `;`. */
function boundaryOf(contentType: string): string | undefined {
  const match = /boundary=(?:"([^"]*)"|([^,;]*))/i.exec(contentType);
  const boundary = match?.[1] ?? match?.[2]?.trim();
  return boundary ? boundary : undefined;
}

/**
 * The whole body, or undefined when it passes `max` bytes (0 = no limit; the rest is read and dropped, so
 * the connection stays usable) or the client leaves before its end.
 */
function readUpTo(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      total += chunk.length;
      if (over) return;
      if (max > 0 && total > max) {
        over = true;
        chunks.length = 0;
      } else chunks.push(chunk);
    });
    req.once('end', () => resolve(over ? undefined : Buffer.concat(chunks, total)));
    req.once('close', () => resolve(undefined)); // after 'end' this changes nothing
  });
}

/** php://input: a buffered body as often as asked, a streamed one once. */
function bodyOf(source: Buffer | Readable): RequestBody {
  let taken = false;
  const stream = (): ReadableStream<Uint8Array> => {
    if (Buffer.isBuffer(source)) return new Blob([source]).stream();
    if (taken) throw new TypeError('the request body streams once and was read already');
    taken = true;
    return Readable.toWeb(source) as ReadableStream<Uint8Array>;
  };
  return {
    stream,
    text: () => new Response(stream()).text(),
    json: () => new Response(stream()).json(),
    arrayBuffer: () => new Response(stream()).arrayBuffer(),
  };
}

/** The request's upload directory, made on the first upload. */
class UploadDir {
  private dir: Promise<string> | undefined;

  async newFile(): Promise<string> {
    this.dir ??= makeTempDir('upload');
    // PHP's names: php + six random characters.
    return join(await this.dir, `php${randomBytes(6).toString('base64url').slice(0, 6)}`);
  }

  async remove(): Promise<void> {
    if (!this.dir) return;
    const dir = await this.dir.catch(() => undefined);
    this.dir = undefined;
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

/** Content-Disposition parameters (lower-case names), quoted strings unescaped as PHP does. */
function dispositionOf(header: string): { type: string; params: Map<string, string> } {
  const params = new Map<string, string>();
  const type = header.split(';', 1)[0].trim().toLowerCase();
  const param = /;\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (const match of header.matchAll(param)) {
    const name = match[1].toLowerCase();
    if (!params.has(name)) params.set(name, match[2] !== undefined ? match[2].replace(/\\(.)/g, '$1') : match[3].trim());
  }
  return { type, params };
}

/** php_ap_basename(): what follows the last `/` or `\`. */
function basename(path: string): string {
  return path.slice(Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\')) + 1);
}

/** PHP's $_FILES names: `f` → `f[name]`, `f[a][b]` → `f[name][a][b]` (the index is what the outer brackets hold). */
function fileVariable(field: string, property: string): string {
  const open = field.indexOf('[');
  if (open !== -1 && field.endsWith(']')) return `${field.slice(0, open)}[${property}][${field.slice(open + 1, -1)}]`;
  return `${field}[${property}]`;
}

interface Upload {
  field: string;
  fileName: string;
  type: string;
  path: string;
  size: number;
  error: UploadError;
  complete: boolean;
  out: WriteStream | undefined;
  /** Where its registration goes in the parts' order. */
  slot: number;
}

/** One multipart body: fields into `post`, files to disk and into `files`, PHP's limits applied. */
class MultipartForm {
  readonly post = new PhpVariables();
  readonly files = new PhpVariables();
  private fields = 0;
  private fileUploads = 0;
  private parts = 0;
  /** The form's MAX_FILE_SIZE field, which PHP honours for the files after it. */
  private maxFileSize = 0;
  private readonly pending: Promise<void>[] = [];
  private readonly open = new Set<Upload>();
  /** One registration per part, run in the parts' order once all have ended (files end later than fields). */
  private readonly slots: (() => void)[] = [];
  /** The field being read: Dicer ends a part a tick after the next one starts, so the next header ends it. */
  private endField: (() => void) | undefined;
  private readonly cutParts = new WeakSet<Readable>();
  private warnedUploads = false;
  private warnedVars = false;
  private stopped = false;

  constructor(
    private readonly limits: InputLimits,
    private readonly uploads: UploadDir,
    private readonly warnings: string[],
  ) {}

  /** Parses the body; false when it passed post_max_size (PHP then keeps nothing). */
  async read(req: IncomingMessage, boundary: string): Promise<boolean> {
    // Loaded with the first multipart body: a worker that never gets one keeps its 6 MB.
    const { Dicer } = await import('@fastify/busboy');
    const parser = new Dicer({ boundary });
    parser.on('part', (part: Readable) => this.onPart(part));
    // Dicer emits 'finish' itself once the closing boundary is seen and every part has ended, which can be
    // before the body has all arrived. Piped into, that 'finish' unpipes the source, so Dicer is never
    // ended and pipeline() waits for a 'close' that never comes: it is fed by hand, as busboy feeds it.
    // Dicer holds a chunk's write callback while a part it pushed that chunk to is past its highWaterMark
    // (16 KiB), and calls it when that part is read again, or when the last part ends before the closing
    // boundary. A part that ended in the chunk holding the closing boundary is never read again, so that
    // callback never comes: Dicer's 'finish' releases it, as nothing is left to hold back.
    let heldWrite: ((err?: Error | null) => void) | undefined;
    let parseEnded = false;
    const parsed = new Promise<void>((resolve) =>
      parser.once('finish', () => {
        parseEnded = true;
        const release = heldWrite;
        heldWrite = undefined;
        release?.();
        resolve();
      }),
    );
    // "Unexpected end of multipart data": the body ended before the closing boundary ('finish' follows).
    let malformed: Error | undefined;
    parser.on('error', (err: Error) => (malformed ??= err));
    let total = 0;
    let tooLarge = false;
    const { postMaxSize } = this.limits;
    const feed = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        total += chunk.length;
        if (postMaxSize > 0 && total > postMaxSize) {
          tooLarge = true;
          return done(new Error('post_max_size'));
        }
        // Dicer reads nothing after the closing boundary (an epilogue), and may still hold a write.
        if (parseEnded) return done();
        // Called back once the part being read has taken the chunk: a slow upload holds the body back.
        heldWrite = done;
        parser.write(chunk, (err?: Error | null) => {
          if (heldWrite !== done) return; // released by 'finish' already
          heldWrite = undefined;
          done(err);
        });
      },
      final: (done) => {
        parser.end();
        void parsed.then(() => done(malformed));
      },
      destroy: (err, done) => {
        parser.destroy();
        done(err);
      },
    });
    // An error here is a body that ended early (the client left, or the multipart data stopped): what
    // arrived is kept and the unfinished upload gets UPLOAD_ERR_PARTIAL, as in PHP.
    let endedEarly = false;
    // Not pipeline(req, …): on an error it would destroy the request, and with it the connection the answer
    // goes back on. A client that leaves ends the parse as an early end.
    req.once('close', () => {
      if (!req.complete) feed.destroy(new Error('the client left'));
    });
    await finished(req.pipe(feed)).catch(() => {
      endedEarly = true;
    });
    if (tooLarge) {
      req.unpipe(feed);
      req.resume(); // the rest is read and dropped
    }
    if (endedEarly) for (const upload of this.open) this.finish(upload, UPLOAD_ERR_PARTIAL);
    // Each finished upload may add work (closing, deleting a refused file): wait until none is left.
    for (let done = 0; done < this.pending.length;) {
      const batch = this.pending.slice(done);
      done = this.pending.length;
      await Promise.all(batch);
    }
    this.endField?.();
    for (const register of this.slots) register();
    return !tooLarge;
  }

  private reserveSlot(): number {
    return this.slots.push(() => {}) - 1;
  }

  private onPart(part: Readable): void {
    // The body ended inside this part: Dicer says so here, then ends the part.
    part.on('error', () => this.cutParts.add(part));
    part.once('header', (header: Record<string, string[]>) => {
      this.endField?.();
      if (this.stopped) return part.resume();
      const limit = MAX_INPUT_VARS + this.limits.maxFileUploads;
      if (++this.parts > limit) {
        this.stopped = true;
        this.warnings.push(
          startupWarning(`Multipart body parts limit exceeded ${limit}. To increase the limit change max_multipart_body_parts in php.ini.`),
        );
        return part.resume();
      }
      const disposition = dispositionOf(header['content-disposition']?.[0] ?? '');
      const field = disposition.params.get('name');
      if (disposition.type !== 'form-data' || !field) return part.resume();
      const fileName = disposition.params.get('filename');
      if (fileName === undefined) this.readField(part, field);
      else this.readFile(part, field, fileName, (header['content-type']?.[0] ?? '').split(';', 1)[0].trim());
    });
  }

  private readField(part: Readable, field: string): void {
    const slot = this.reserveSlot();
    const chunks: Buffer[] = [];
    const end = () => {
      if (this.endField !== end) return;
      this.endField = undefined;
      if (++this.fields > MAX_INPUT_VARS) {
        if (!this.warnedVars) {
          this.warnedVars = true;
          this.warnings.push(
            startupWarning(`Input variables exceeded ${MAX_INPUT_VARS}. To increase the limit change max_input_vars in php.ini.`),
          );
        }
        return;
      }
      // Ended by the next header, the part may still hold data it has not emitted: read() emits it now.
      while (part.read() !== null);
      const value = Buffer.concat(chunks).toString('utf8');
      if (field.toUpperCase() === 'MAX_FILE_SIZE') this.maxFileSize = Number.parseInt(value, 10) || 0;
      this.slots[slot] = () => this.post.register(field, value);
    };
    this.endField = end;
    part.on('data', (chunk: Buffer) => chunks.push(chunk));
    part.once('end', end);
  }

  private readFile(part: Readable, field: string, fileName: string, type: string): void {
    const upload: Upload = {
      field,
      fileName,
      type,
      path: '',
      size: 0,
      error: UPLOAD_ERR_OK,
      complete: false,
      out: undefined,
      slot: this.reserveSlot(),
    };
    if (fileName === '') {
      // No file chosen: PHP lists it with UPLOAD_ERR_NO_FILE, and it does not count as an upload.
      part.resume();
      part.once('end', () => this.finish(upload, UPLOAD_ERR_NO_FILE));
      return;
    }
    if (this.fileUploads >= this.limits.maxFileUploads) {
      if (!this.warnedUploads) {
        this.warnedUploads = true;
        this.warnings.push('PHP Warning:  Maximum number of allowable file uploads has been exceeded in Unknown on line 0');
      }
      part.resume();
      return;
    }
    this.fileUploads += 1;
    this.open.add(upload);
    const maxFileSize = this.maxFileSize;
    part.pause();
    this.pending.push(
      this.uploads.newFile().then(
        (path) => this.writeFile(part, upload, path, maxFileSize),
        () => {
          // No temp directory could be made (PHP: UPLOAD_ERR_NO_TMP_DIR); the part is read and dropped.
          upload.error = UPLOAD_ERR_NO_TMP_DIR;
          part.resume();
          part.once('end', () => this.finish(upload, upload.error));
        },
      ),
    );
  }

  /** Streams the part to `path`, counting it against the limits; resolves when the file is closed. */
  private writeFile(part: Readable, upload: Upload, path: string, maxFileSize: number): Promise<void> {
    const { uploadMaxFilesize } = this.limits;
    upload.path = path;
    if (upload.complete) return Promise.resolve(); // the body ended while the file was being named
    const out = createWriteStream(path, { flags: 'wx', mode: 0o600 });
    upload.out = out;
    const closed = new Promise<void>((resolve) => out.once('close', resolve));
    out.on('error', () => {
      if (upload.error === UPLOAD_ERR_OK) upload.error = UPLOAD_ERR_CANT_WRITE;
    });
    const sink = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        if (upload.error !== UPLOAD_ERR_OK || out.destroyed) return done();
        const size = upload.size + chunk.length;
        const over =
          uploadMaxFilesize > 0 && size > uploadMaxFilesize
            ? UPLOAD_ERR_INI_SIZE
            : maxFileSize > 0 && size > maxFileSize
              ? UPLOAD_ERR_FORM_SIZE
              : UPLOAD_ERR_OK;
        if (over !== UPLOAD_ERR_OK) {
          upload.error = over;
          out.destroy();
          return done();
        }
        upload.size = size;
        if (out.write(chunk)) return done();
        // On 'close' too: a file that failed never drains, and the part must go on to its end.
        const next = () => {
          out.off('drain', next);
          out.off('close', next);
          done();
        };
        out.on('drain', next);
        out.on('close', next);
      },
    });
    part.pipe(sink);
    // Once every chunk has gone to the file, not at the part's end: its last chunks may still wait on a drain.
    sink.once('finish', () => this.finish(upload, this.cutParts.has(part) ? UPLOAD_ERR_PARTIAL : upload.error));
    return closed;
  }

  /** Registers the upload under PHP's six names, once; a failed one keeps no file. */
  private finish(upload: Upload, error: UploadError): void {
    if (upload.complete) return;
    upload.complete = true;
    this.open.delete(upload);
    if (upload.out && !upload.out.destroyed) {
      if (error === UPLOAD_ERR_OK) upload.out.end();
      else upload.out.destroy();
    }
    const failed = error !== UPLOAD_ERR_OK;
    if (failed && upload.path) this.pending.push(rm(upload.path, { force: true }));
    const entries: [string, string | number][] = [
      ['name', basename(upload.fileName)],
      ['fullPath', upload.fileName],
      ['type', upload.type],
      ['tmpName', failed ? '' : upload.path],
      ['error', error],
      ['size', failed ? 0 : upload.size],
    ];
    this.slots[upload.slot] = () => {
      for (const [property, value] of entries) this.files.register(fileVariable(upload.field, property), value);
    };
  }
}
