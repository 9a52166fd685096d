import { expect } from 'chai';
import ts from 'typescript';
import { formatDiagnostic } from '../../launcher/typeCheck.ts';

function diagnosticAt(
  source: string,
  at: string,
  messageText: string | ts.DiagnosticMessageChain,
  fileName = '/w/controllers/Bad.ts',
): ts.Diagnostic {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.ES2023);
  return { file, start: source.indexOf(at), length: at.length, messageText, category: ts.DiagnosticCategory.Error, code: 2322 };
}

describe('formatDiagnostic', () => {
  describe('a diagnostic in a file', () => {
    it('starts with file:line:column, both counted from 1, then the message', () => {
      const d = diagnosticAt(
        "import type { Controller } from 'extqs';\n\nconst n: number = 'x';\n",
        'n:',
        "Type 'string' is not assignable to type 'number'.",
      );
      expect(formatDiagnostic(ts, d)).to.equal("/w/controllers/Bad.ts:3:7 Type 'string' is not assignable to type 'number'.");
    });

    it('names a file with spaces and non-ASCII letters as it is (/w/controllers/_my helpers/ünits.ts)', () => {
      const d = diagnosticAt('x', 'x', 'm', '/w/controllers/_my helpers/ünits.ts');
      expect(formatDiagnostic(ts, d)).to.equal('/w/controllers/_my helpers/ünits.ts:1:1 m');
    });

    it('keeps a chained message on the following lines, indented, so every new line still starts a diagnostic', () => {
      const chain: ts.DiagnosticMessageChain = {
        messageText: "Type '() => number' is not assignable to type 'Controller'.",
        category: ts.DiagnosticCategory.Error,
        code: 2322,
        next: [
          { messageText: "Type 'number' is not assignable to type 'ControllerResult'.", category: ts.DiagnosticCategory.Error, code: 2322 },
        ],
      };
      const lines = formatDiagnostic(ts, diagnosticAt('const C = 1;', 'C', chain)).split('\n');
      expect(lines).to.have.length(2);
      expect(lines[0]).to.equal("/w/controllers/Bad.ts:1:7 Type '() => number' is not assignable to type 'Controller'.");
      expect(lines[1]).to.match(/^ {4,}Type 'number' is not assignable to type 'ControllerResult'\.$/);
    });
  });

  describe('a diagnostic without a file (an option, a missing type library)', () => {
    it('is the message alone', () => {
      const d: ts.Diagnostic = {
        file: undefined,
        start: undefined,
        length: undefined,
        messageText: "Cannot find type definition file for 'node'.",
        category: ts.DiagnosticCategory.Error,
        code: 2688,
      };
      expect(formatDiagnostic(ts, d)).to.equal("Cannot find type definition file for 'node'.");
    });
  });
});
