// 20,000 requests at 200 connections, mixed across the four observed paths (npm run test:reliability).
import { describeLoad } from './loadSuite.ts';

describeLoad(20_000, 200);
