// The module Worker of tests/browser/faults.mjs: the package's serveClient, with the requests of
// its IndexedDB commits counted (faults-hook.js). Armed over the BroadcastChannel 'faults'; at the
// armed request it tells the page ({ hit }) and spins until the page terminates it.
import { faults } from './faults-hook.js';
import { serveClient } from '../../pkg/worker.js';

const channel = new BroadcastChannel('faults');
faults.block = () => {
  channel.postMessage({ hit: true });
  const end = Date.now() + 10_000;
  while (Date.now() < end) {
    // terminated here
  }
};
channel.onmessage = ({ data }) => {
  if (data?.arm !== undefined) {
    faults.start(data.arm);
    channel.postMessage({ armed: true });
  } else if (data?.stop) {
    channel.postMessage({ stopped: faults.stop() });
  }
};
serveClient();
