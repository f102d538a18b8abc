// A Node worker thread serving clients of the package, as a page's module Worker does:
// tests/worker.test.mjs drives it with connectWorker. IndexedDB is fake-indexeddb's (Node has
// none), and one thread holds its only connection, so no Web Locks are needed.
import { parentPort } from 'node:worker_threads';
import { IDBFactory } from 'fake-indexeddb';
import { serveClient } from '../../pkg/worker.js';

serveClient(parentPort, { indexedDB: new IDBFactory(), locks: { request: (_name, fn) => fn() } });
