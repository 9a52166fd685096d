// Stryker's mocha runner 10.0.0 requires mocha's CLI internals without an extension (`lib/cli/run-helpers`), and
// mocha 12 renamed them to .cjs, so the runner fails to load (stryker-js pull request #6205, open). With .cjs
// among the extensions require() tries, the same file is found; remove this once a runner with that fix is out.
import Module from 'node:module';

Module._extensions['.cjs'] ??= Module._extensions['.js'];
