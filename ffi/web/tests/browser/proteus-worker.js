// The module Worker of worker.html: clients of the package, served to the page (pkg/worker.js).
import { serveClient } from '../../pkg/worker.js';

serveClient();
