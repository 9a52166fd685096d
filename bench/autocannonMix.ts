// autocannon over several paths in turn (its CLI takes one URL), for bench/load.ts when wrk is missing:
// `autocannonMix.ts <origin> <connections> <seconds> <path>...` prints autocannon's JSON result.
import autocannon from 'autocannon';

const [origin, connections, seconds, ...paths] = process.argv.slice(2);
const result = await autocannon({
  url: origin,
  connections: Number(connections),
  duration: Number(seconds),
  requests: paths.map((path) => ({ method: 'GET', path })),
});
process.stdout.write(JSON.stringify(result));
