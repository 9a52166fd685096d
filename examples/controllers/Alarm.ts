// GET /External/Alarm?all_alarm&all: alarms of every device. The legacy clients send two flags
// without `=`; as in PHP's $_GET, each is present with the value ''.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Controller } from 'extqs';

interface Alarm {
  code: string;
  since: string;
  active: boolean;
}

const { devices } = JSON.parse(readFileSync(join(__dirname, 'sample-readings.json'), 'utf8')) as {
  devices: Record<string, { alarms: Alarm[] }>;
};

const Alarm: Controller = ({ query }) => {
  // `all_alarm` includes cleared alarms; `all` includes every device (otherwise only those with alarms).
  const includeCleared = 'all_alarm' in query;
  const everyDevice = 'all' in query;
  const alarms = Object.entries(devices)
    .map(([sn, device]) => ({ sn, alarms: device.alarms.filter((a) => includeCleared || a.active) }))
    .filter((entry) => everyDevice || entry.alarms.length > 0);
  return { alarms };
};

export default Alarm;
