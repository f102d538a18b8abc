// The demo's module Worker: Alice's and Bob's clients live here, driven by demo.js, so a large
// batch never blocks the page.
import { serveClient } from '../../ffi/web/pkg/worker.js';

serveClient();
