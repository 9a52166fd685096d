// The load check at a size for npm test; load.slow.test.ts runs 20,000 at 200 connections.
import { describeLoad } from './loadSuite.ts';

describeLoad(2_000, 50);
