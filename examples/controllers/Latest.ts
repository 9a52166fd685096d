// GET /External/Latest?sn=<serial>&no=<number>: the latest readings of a device, or reading <no>.
// Copy into www/controllers/ of a running instance; it is served on the next request.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Controller } from 'extqs';

interface Reading {
  no: number;
  at: string;
  temperature: number;
  humidity: number;
}

// Runs once per load of this file, not per request. __dirname is the controller's own directory.
const { devices } = JSON.parse(readFileSync(join(__dirname, 'sample-readings.json'), 'utf8')) as {
  devices: Record<string, { readings: Reading[] }>;
};

const Latest: Controller = ({ query }) => {
  const sn = typeof query.sn === 'string' ? query.sn : '';
  const no = typeof query.no === 'string' ? query.no : '';
  if (!/^\d+$/.test(sn) || !/^\d*$/.test(no)) {
    return Response.json({ error: 'sn must be digits and no digits or empty' }, { status: 400 });
  }
  const device = devices[sn];
  if (!device) return Response.json({ error: `no device ${sn}` }, { status: 404 });
  // `no=` (empty) asks for the newest reading, as the legacy clients send it.
  const readings = no === '' ? device.readings.slice(-1) : device.readings.filter((r) => r.no === Number(no));
  return { sn, no, readings };
};

export default Latest;
