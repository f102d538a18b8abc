// The chat page's module Worker: the engine's client lives here (opened and driven by chat.js
// through the web package's remote.js), so decrypting a backlog never blocks the page.
import { serveClient } from '/pkg/worker.js';

serveClient();
