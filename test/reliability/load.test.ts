// The load check at a size for npm test; load.slow.test.ts runs the 20,000 at 200 connections.
import { describeLoad } from './loadSuite.ts';

describeLoad(2_000, 50);
