// The browser of the browser tests and the browser bench: Chromium (tests/support/chromium.mjs,
// playwright-core), or Firefox ESR when PROTEUS_BROWSER=firefox (tests/support/firefox.mjs,
// puppeteer-core over WebDriver BiDi). Both export the same launch(prefix, { profile }), whose
// context's pages have the part of playwright's Page API that the tests use.
//   PROTEUS_BROWSER=firefox node --test tests/browser/chromium.mjs

const choice = process.env.PROTEUS_BROWSER ?? 'chromium';
if (choice !== 'chromium' && choice !== 'firefox') throw new Error(`PROTEUS_BROWSER must be chromium or firefox, not ${choice}`);
const impl = choice === 'firefox' ? await import('./firefox.mjs') : await import('./chromium.mjs');

export const BROWSER = choice;
/** The engine's name, for test names and printed figures: Chromium or Firefox. */
export const ENGINE = choice === 'firefox' ? 'Firefox' : 'Chromium';
/** The browser's executable. */
export const EXECUTABLE = choice === 'firefox' ? impl.FIREFOX : impl.CHROMIUM;
export const { launch, DEFAULT_TIMEOUT_MS } = impl;
