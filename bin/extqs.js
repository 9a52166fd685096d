#!/usr/bin/env node
// The `extqs` command. The project runs from its TypeScript sources: tsx compiles them as they load.
import { register } from 'tsx/esm/api';

register();
await import('../launcher/cli.ts');
