// The web UI driven as people use it, in headless Chromium (Debian) by
// playwright-core, against a real stack (API, worker, PostGIS). Each step
// asserts what a person sees; every screen gets an axe-core check, a pass
// at 390 px wide, and a screenshot saved for review.
//
// usage: node ui_flows.mjs
// env:   CATALOG_BASE (the API's base URL), CATALOG_ADMIN_USER/PASSWORD,
//        CATALOG_UI_MODULES (ui/node_modules: playwright-core, axe-core),
//        CHROMIUM, CATALOG_UPLOAD (a GeoPackage to upload), CATALOG_RASTER (a GeoTIFF),
//        CATALOG_WEBHOOK, CATALOG_WEBHOOK_SECRET (a webhook receiver), CATALOG_BANNER_TEXT (as configured),
//        CATALOG_IDP_DISCOVERY, CATALOG_IDP_CLIENT_ID/SECRET (a local OIDC provider),
//        CATALOG_SCREENSHOTS (folder for the screenshots)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const base = env('CATALOG_BASE');
const modules = env('CATALOG_UI_MODULES');
const shots = env('CATALOG_SCREENSHOTS');
const require = createRequire(path.join(modules, 'index.js'));
const { chromium } = require('playwright-core');
const axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
fs.mkdirSync(shots, { recursive: true });

const browser = await chromium.launch({
  executablePath: env('CHROMIUM'),
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--use-gl=angle', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'],
});
const report = { steps: [], violations: {}, titles: {} };
const step = (name) => { report.steps.push(name); console.error(`ui: ${name}`); };

// Nothing may be fetched from another site: every request but a page
// navigation (single sign-on goes to the provider) is checked.
function watch(page) {
  const foreign = [];
  const errors = [];
  page.on('request', (r) => {
    const url = new URL(r.url());
    if (!r.isNavigationRequest() && !['data:', 'blob:'].includes(url.protocol) && url.origin !== base) foreign.push(r.url());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  return { foreign, errors };
}

async function newPage(options = {}) {
  // bypassCSP lets the test inject axe-core; the app itself runs under the CSP the API sends.
  const context = await browser.newContext({ bypassCSP: true, viewport: { width: 1280, height: 900 }, ...options });
  // Whether a map ever said it was loading, however briefly.
  await context.addInitScript(() => {
    new MutationObserver(() => {
      if (document.querySelector('.map-loading')) window.__sawLoading = true;
    }).observe(document, { childList: true, subtree: true });
  });
  const page = await context.newPage();
  page.seen = watch(page);
  return page;
}

/** axe-core on the page: no serious or critical violation. */
async function accessible(page, screen) {
  await page.addScriptTag({ content: axeSource });
  const result = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) })));
  const bad = result.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  report.violations[screen] = result;
  assert.deepEqual(bad, [], `${screen}: axe-core violations ${JSON.stringify(bad, null, 1)}`);
}

/** A screen as people see it: accessible, titled for itself, and laid out
 * at 390 px wide as well as at its own size, with a screenshot of each. */
async function screen(page, name) {
  await accessible(page, name);
  report.titles[name] = await page.title();
  await page.screenshot({ path: path.join(shots, `${name}.jpg`), fullPage: true, quality: 70 });
  const size = page.viewportSize();
  if (size.width <= 390) return;
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    await page.waitForTimeout(250);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    // What sticks out, when something does: elements past the edge that no scrolling box holds.
    const wide = await page.evaluate(() => {
      const edge = document.documentElement.clientWidth + 1;
      const held = (e) => {
        for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
          if (getComputedStyle(a).overflowX !== 'visible') return true;
        }
        return false;
      };
      const out = [...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > edge && !held(e))
        .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}.${e.className} (${Math.round(e.getBoundingClientRect().right)} px)`);
      const spilling = [...document.querySelectorAll('*')]
        .filter((e) => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === 'visible')
        .slice(-3).map((e) => `${e.tagName.toLowerCase()}.${e.className} holds ${e.scrollWidth} px in ${e.clientWidth}`);
      return [...out, ...spilling];
    });
    assert.ok(width <= 390, `${name} is ${width} px wide at 390 px: ${wide.join(', ')}`);
    await accessible(page, `${name}-phone`);
    await page.screenshot({ path: path.join(shots, `${name}-phone.jpg`), fullPage: true, quality: 70 });
  } finally {
    await page.setViewportSize(size);
  }
}

/** The colours of what is not data: the plain background (#eef2f5) and the
 * built-in basemap's water, land, coast, borders, names and their halo. */
const NOT_DATA = [[238, 242, 245], [205, 223, 234], [246, 244, 238], [167, 191, 207], [163, 159, 176], [91, 90, 99], [255, 255, 255]];
/** The built-in basemap's water and land. */
const BASEMAP = NOT_DATA.slice(1, 3);

/** How many pixels of the map's screenshot meet `rule`: far from every colour of `rule.palette` (what
 * the map drew of data) or, with `rule.near`, within a few levels of one; with `rule.redOverBlue`, red
 * more than that over blue. */
async function mapPixels(page, rule) {
  const png = await page.locator('.map canvas').screenshot();
  return page.evaluate(async ([b64, rule]) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const canvas = document.createElement('canvas');
    canvas.width = img.width;
    canvas.height = img.height;
    const ctx = canvas.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const { data } = ctx.getImageData(0, 0, img.width, img.height);
    let n = 0;
    for (let i = 0; i < data.length; i += 4) {
      const [r, g, b] = [data[i], data[i + 1], data[i + 2]];
      if (rule.redOverBlue !== undefined) {
        if (r - b > rule.redOverBlue) n += 1;
        continue;
      }
      const nearest = Math.min(...rule.palette.map(([pr, pg, pb]) => Math.abs(r - pr) + Math.abs(g - pg) + Math.abs(b - pb)));
      if (rule.near ? nearest <= 12 : nearest > 90) n += 1;
    }
    return n;
  }, [png.toString('base64'), rule]);
}

/** How many pixels of the map's screenshot are far from every one of `palette` (what the map drew of data),
 * or, with `near`, within a few levels of one of them. */
const dataPixels = (page, palette = NOT_DATA, near = false) => mapPixels(page, { palette, near });

/** How many pixels of the map's screenshot are the dataset preview's orange (#c2410c, as fill or outline): red well over blue. */
const orangePixels = (page) => mapPixels(page, { redOverBlue: 40 });

async function api(method, route, token, body) {
  const response = await fetch(`${base}${route}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await response.text();
  assert.ok(response.ok, `${method} ${route}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** Waits until `check` answers true (a state the page reaches through the API). */
async function until(check, what, timeout = 30_000) {
  for (const start = Date.now(); Date.now() - start < timeout;) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Waits until the picture `img` (a locator naming one image) has loaded at `width` pixels. */
const pictureLoaded = (img, width, what) =>
  until(async () => (await img.count()) === 1 && (await img.evaluate((i) => i.complete && i.naturalWidth)) === width, what);

/** A new browser session signed in through the sign-in page. */
async function signedIn(username, password, options) {
  const p = await newPage(options);
  await p.goto(`${base}/signin`);
  await p.getByLabel('Username').fill(username);
  await p.getByLabel('Password').fill(password);
  await p.getByRole('button', { name: 'Sign in', exact: true }).click();
  await p.waitForURL((url) => url.pathname !== '/signin');
  await p.locator('.who a').waitFor({ state: 'attached' });
  return p;
}

/** How many of the map's pixels are far from its plain background: what the map drew, polled until it has drawn. */
async function drawnPixels(p, enough = 2000, palette = NOT_DATA) {
  let n = 0;
  for (let i = 0; i < 60 && n < enough; i += 1) {
    await p.waitForTimeout(500);
    n = await dataPixels(p, palette);
  }
  return n;
}

const admin = env('CATALOG_ADMIN_USER');
const adminPassword = env('CATALOG_ADMIN_PASSWORD');
const page = await newPage();
// Questions the app asks (confirm): recorded, and answered as `dialogAnswer` says.
const dialogs = [];
let dialogAnswer = true;
page.on('dialog', (dialog) => {
  dialogs.push(dialog.message());
  return dialogAnswer ? dialog.accept() : dialog.dismiss();
});

// --- Sign in: a wrong password shows the service's reason; the right one opens the catalog.
step('sign in page');
await page.goto(`${base}/signin`);
await page.getByRole('heading', { name: 'Sign in' }).waitFor();
// The configured banner, its markup shown as text.
assert.equal(await page.getByRole('note').innerText(), env('CATALOG_BANNER_TEXT'));
// How long the first screen took to be usable, from the navigation's start (reported, not asserted).
report.first_screen_ms = Math.round(await page.evaluate(() => performance.now()));
assert.equal(await page.getByRole('button', { name: /^Sign in with / }).count(), 0, 'no provider yet, no SSO button');
await screen(page, 'signin');
await page.getByLabel('Username').fill(admin);
await page.getByLabel('Password').fill('not-the-password');
await page.getByRole('button', { name: 'Sign in', exact: true }).click();
await page.getByRole('alert').waitFor();
assert.match(await page.getByRole('alert').innerText(), /password|credentials|username/i);
step('signed in');
await page.getByLabel('Password').fill(adminPassword);
await page.getByRole('button', { name: 'Sign in', exact: true }).click();
await page.getByRole('heading', { name: 'Datasets' }).waitFor();
await page.getByRole('button', { name: 'Sign out' }).waitFor();
assert.equal(await page.getByRole('link', { name: `Account of ${admin}` }).innerText(), admin);
const adminToken = (await (await fetch(`${base}/api/auth/login`, {
  method: 'POST', body: new URLSearchParams({ username: admin, password: adminPassword }),
})).json()).access_token;

// --- Upload: byte progress, then the job's progress, then the dataset page opens.
step('upload');
await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Upload' }).click();
await page.getByRole('button', { name: 'Choose files' }).waitFor();
await screen(page, 'upload');
await page.getByLabel('Files to upload').setInputFiles(env('CATALOG_UPLOAD'));
await page.waitForURL(/\/datasets\/[0-9a-f-]{36}$/, { timeout: 120_000 });
const datasetId = page.url().split('/').pop();
step('dataset page');
await page.getByRole('heading', { name: 'Attributes' }).waitFor();
await page.getByText('rows 1–10 of 100').waitFor();
await page.getByRole('columnheader', { name: 'name', exact: true }).waitFor();
const firstRow = await page.locator('tbody tr').first().innerText();
await page.getByRole('button', { name: 'Next rows' }).click();
await page.getByText('rows 11–20 of 100').waitFor();
assert.notEqual(await page.locator('tbody tr').first().innerText(), firstRow, 'the next page shows other rows');
// The map preview draws the counties from the vector tiles, over the
// service's own basemap (its land and sea).
let drawn = await drawnPixels(page);
assert.ok(drawn >= 2000, `the map drew ${drawn} pixels of data`);
const basemapDrawn = await dataPixels(page, BASEMAP, true);
assert.ok(basemapDrawn >= 2000, `the basemap drew ${basemapDrawn} pixels of land and sea`);
await screen(page, 'dataset');

// The map said it was loading until it had drawn (seen by an observer set before the page ran).
assert.ok(await page.evaluate(() => window.__sawLoading), 'the map showed its loading sign');
await page.getByText('Loading map data…').waitFor({ state: 'detached' });
const datasetTitle = await page.locator('main h1').innerText();
await until(async () => (await page.title()) === `${datasetTitle} · Spatial Data Catalog`, 'the tab naming the dataset');

// Clicking a county shows its attributes.
const mapBox = await page.locator('.map canvas').boundingBox();
await page.mouse.click(mapBox.x + mapBox.width / 2, mapBox.y + mapBox.height / 2);
const popup = page.locator('.identify');
await popup.waitFor();
assert.match(await popup.innerText(), /bir74/, 'the popup lists the feature\'s attributes');

// A private dataset's links open in the app with the session, never as a raw 404.
await page.getByRole('link', { name: 'OGC API items' }).click();
await page.getByRole('heading', { name: 'API response' }).waitFor();
await until(async () => /"FeatureCollection"/.test(await page.locator('pre.api-body').innerText()), 'the items in the app');
await screen(page, 'api-view');
await page.goBack();
await page.getByRole('heading', { name: 'Attributes' }).waitFor();

// Sorted by a column (its heading, twice: largest first) and filtered by CQL2, both kept in the address.
step('table sort and filter');
const rowsOf = async () => page.locator('nav[aria-label="Attribute pages"] [role=status]').innerText();
await page.getByRole('button', { name: 'bir74', exact: true }).click();
await until(async () => page.url().includes('sortby=%2Bbir74'), 'ascending sort in the address');
await page.getByRole('button', { name: 'bir74 ▲' }).click();
await until(async () => page.url().includes('sortby=-bir74'), 'descending sort in the address');
const column = async (name) => (await page.getByRole('columnheader').allInnerTexts()).findIndex((h) => h.replace(/ [▲▼]$/, '') === name);
await until(async () => (await page.locator('tbody tr').first().locator('td').nth(await column('bir74')).innerText()) === '21588', 'the largest first');
const everyCounty = await orangePixels(page);
assert.ok(everyCounty > 2000, `the counties are drawn in orange: ${everyCounty} pixels`);
await page.getByLabel(/^Filter \(CQL2/).fill('bir74 > 10000');
await page.getByRole('button', { name: 'Apply filter' }).click();
await until(async () => (await rowsOf()) === 'rows 1–6 of 6', 'six counties past 10,000 births');
// The map marks the filter's six counties in the layer's colour, the other 94 in grey.
await page.getByText("The map marks the 6 features of the table's filter in colour, the others in grey.").waitFor();
await until(async () => (await orangePixels(page)) < everyCounty * 0.3,
  `the map to mark only six counties (of ${everyCounty} orange pixels for all)`);
await page.reload();
await until(async () => (await rowsOf()) === 'rows 1–6 of 6', 'the filter kept over a reload');
assert.equal(await page.getByLabel(/^Filter \(CQL2/).inputValue(), 'bir74 > 10000');
await page.getByLabel(/^Filter \(CQL2/).fill('bir74 >');
await page.getByRole('button', { name: 'Apply filter' }).click();
await page.getByRole('alert').first().waitFor();
assert.match(await page.getByRole('alert').first().innerText(), /filter/i, 'a filter that does not parse says so');
await page.getByLabel(/^Filter \(CQL2/).fill('bir74 > 10000');
await page.getByRole('button', { name: 'Apply filter' }).click();
await until(async () => (await rowsOf()) === 'rows 1–6 of 6', 'filtered again');
// The download takes the filter: six counties, as GeoJSON.
await page.getByLabel('Format').selectOption('geojson');
await page.getByLabel(/^Only the rows of the filter/).check();
const [filteredDownload] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download', exact: true }).click()]);
const exported = JSON.parse(fs.readFileSync(await filteredDownload.path(), 'utf8'));
assert.equal(exported.features.length, 6, 'the filtered download holds the six counties');
await screen(page, 'dataset-table');
// Zooming to a row fills the map with counties, and brings the map into view.
const wholeState = await drawnPixels(page);
await page.getByRole('button', { name: /^Zoom to feature / }).last().scrollIntoViewIfNeeded();
await page.evaluate(() => window.scrollBy(0, document.querySelector('.map').getBoundingClientRect().bottom));
// As far as the page scrolls: the map's top at least is out of view.
assert.ok(await page.locator('.map').evaluate((e) => e.getBoundingClientRect().top < 0), 'the map is scrolled out of view');
await page.getByRole('button', { name: /^Zoom to feature / }).first().click();
await until(async () => (await dataPixels(page)) > wholeState * 1.3, 'the map zoomed to the county');
assert.ok(await page.locator('.map').evaluate((e) => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight; }),
  'Zoom brought the whole map into view');
// The table asks for attributes only, and gets them gzipped.
const wholePage = page.waitForResponse((r) => r.url().includes('/items?') && !r.url().includes('filter='));
await page.getByRole('button', { name: 'Clear filter' }).click();
const tablePage = await wholePage;
assert.match(tablePage.url(), /skipGeometry=true/, 'the table leaves geometries out');
assert.equal((await tablePage.allHeaders())['content-encoding'], 'gzip', 'the table page comes gzipped');
await until(async () => (await rowsOf()) === 'rows 1–10 of 100', 'the whole table again');
await page.getByRole('button', { name: 'bir74 ▼' }).click();
await until(async () => !page.url().includes('sortby'), 'no sort');

// --- Edit: make it public; anyone can then read it.
step('edit visibility');
assert.equal((await fetch(`${base}/api/collections/${datasetId}`)).status, 404, 'private at first');
await page.getByLabel('Visibility').selectOption('public');
await page.getByLabel('Title').fill('North Carolina counties');
await page.getByLabel('Keywords (separated by commas)').fill('counties, births ,  ');
await page.getByLabel(/^Licence/).fill('CC-BY-4.0');
await page.getByLabel(/^Attribution/).fill('NC State Center for Health Statistics');
// What people type is shown as text, never run.
const markup = '<img src=x onerror="window.__ran = 1">counties of 1974';
await page.getByLabel('Summary').fill(markup);
await page.getByRole('button', { name: 'Save' }).click();
await page.getByText('Saved.').waitFor();
await page.getByRole('heading', { name: 'North Carolina counties' }).waitFor();
assert.equal(await page.locator('article > p.summary').innerText(), markup);
assert.equal(await page.evaluate(() => window.__ran), undefined, 'typed markup never runs');
assert.equal((await fetch(`${base}/api/collections/${datasetId}`)).status, 200, 'public after saving');
const described = await api('GET', `/api/datasets/${datasetId}`, adminToken);
assert.deepEqual(described.keywords, ['counties', 'births'], 'keywords saved');
assert.deepEqual([described.license, described.attribution], ['CC-BY-4.0', 'NC State Center for Health Statistics']);
await page.getByLabel('Contact name').fill('Data desk');
await page.getByLabel('Organisation').fill('NC Health Statistics');
await page.getByLabel('Contact email').fill('data@example.org');
await page.getByLabel(/^Role/).fill('publisher');
await page.getByRole('button', { name: 'Add contact' }).click();
await page.getByRole('button', { name: 'Remove contact Data desk' }).waitFor();
const contacts = await api('GET', `/api/records/${datasetId}/contacts`, adminToken);
assert.deepEqual(contacts.map((c) => [c.name, c.organization, c.email, c.role]), [['Data desk', 'NC Health Statistics', 'data@example.org', 'publisher']]);

// --- Reupload: the preview tells what changes, then the data is replaced in place.
step('reupload');
await page.getByLabel('New file').setInputFiles(env('CATALOG_UPLOAD'));
await page.getByRole('button', { name: 'Preview changes', exact: true }).click();
const changes = page.getByRole('status', { name: 'Changes' });
await changes.waitFor({ timeout: 60_000 });
assert.match(await changes.innerText(), /Rows: 100 → 100/);
assert.match(await changes.innerText(), /Columns added: none/);
await page.getByRole('button', { name: 'Replace the data' }).click();
await changes.waitFor({ state: 'detached', timeout: 60_000 });
const replacedJobs = await api('GET', '/api/jobs?kind=reupload', adminToken);
assert.equal(replacedJobs.jobs.filter((j) => j.status === 'succeeded').length, 2, 'the preview and the replacement ran');

// --- Edit a row's value in the table and delete another (with the
// feature's ETag), see both in the history, then restore the version
// before them: the table shows the old value again.
step('edit features and restore');
await page.getByRole('heading', { name: 'History' }).waitFor();
await page.getByText('rows 1–10 of 100').waitFor();
const firstName = await page.locator('tbody tr').first().locator('td').nth(
  await page.getByRole('columnheader').allInnerTexts().then((h) => h.indexOf('name'))).innerText();
const before = (await api('GET', `/api/datasets/${datasetId}/versions`, adminToken)).versions[0].version;
/** Whether `locator` lies wholly inside the attribute table's visible box (and the window). */
const inTableView = (locator) => locator.evaluate((e) => {
  const box = e.getBoundingClientRect();
  const table = e.closest('.table-scroll').getBoundingClientRect();
  return box.left >= table.left && box.right <= table.right + 1 && box.right <= window.innerWidth;
});
// Escape leaves a row as it was.
await page.getByRole('button', { name: /^Edit feature / }).first().click();
const nameInput = page.getByRole('textbox', { name: /^name of feature / }).first();
await nameInput.fill('Not kept');
await nameInput.press('Escape');
await nameInput.waitFor({ state: 'detached' });
assert.equal(await page.getByRole('cell', { name: 'Not kept', exact: true }).count(), 0, 'Escape kept nothing');
// The row's actions stay in view though its inputs run wider than the table; Enter saves.
await page.getByRole('button', { name: /^Edit feature / }).first().click();
assert.ok(await page.getByRole('region', { name: 'Attributes' }).getByRole('table').evaluate((t) => t.scrollWidth > t.closest('.table-scroll').clientWidth), 'the row runs wider than the table');
assert.ok(await inTableView(page.getByRole('button', { name: 'Save row' })), 'Save row is in view');
assert.ok(await inTableView(page.getByRole('button', { name: 'Cancel' })), 'Cancel is in view');
await nameInput.fill('Renamed county');
await nameInput.press('Enter');
await page.getByRole('cell', { name: 'Renamed county', exact: true }).waitFor();
// On a phone, Edit is in view and opens the row in a sheet whose Save is on screen.
{
  const size = page.viewportSize();
  await page.setViewportSize({ width: 390, height: 844 });
  const edit = page.getByRole('button', { name: /^Edit feature / }).nth(2);
  // Scrolled to vertically only: scrolling the button itself into view would scroll the table sideways too.
  await page.getByRole('region', { name: 'Attribute table' }).evaluate((e) => e.scrollIntoView({ block: 'center' }));
  assert.ok(await inTableView(edit), 'Edit is in view on a phone');
  await edit.click();
  const sheet = page.getByRole('dialog', { name: /^Edit feature / });
  await sheet.waitFor();
  const save = await sheet.getByRole('button', { name: 'Save row' }).boundingBox();
  assert.ok(save && save.y >= 0 && save.y + save.height <= 844 && save.x + save.width <= 390, `the sheet's Save row is on screen: ${JSON.stringify(save)}`);
  await page.screenshot({ path: path.join(shots, 'dataset-row-sheet-phone.jpg'), quality: 70 });
  await sheet.getByRole('button', { name: 'Cancel' }).click();
  await sheet.waitFor({ state: 'detached' });
  await page.setViewportSize(size);
}
await page.getByRole('button', { name: /^Delete feature / }).nth(1).click();
await page.getByText('rows 1–10 of 99').waitFor();
await page.getByText(new RegExp(`Feature \\d+ deleted by ${admin}`)).waitFor();
await page.getByText(new RegExp(`Feature \\d+ changed name by ${admin}`)).waitFor();
await screen(page, 'dataset-history');
await page.getByRole('button', { name: `Restore version ${before}`, exact: true }).click();
await page.getByText('rows 1–10 of 100').waitFor({ timeout: 60_000 });
await page.getByRole('cell', { name: firstName, exact: true }).first().waitFor();
assert.equal(await page.getByRole('cell', { name: 'Renamed county', exact: true }).count(), 0, 'the restore brought the old name back');
await page.getByRole('cell', { name: `restore of ${before}` }).waitFor();

// --- The OGC pages: the browser's own Accept gets the server-rendered
// pages, which are accessible, show typed markup as text, and page.
step('ogc pages');
const ogc = await newPage();
await ogc.goto(`${base}/api`);
await ogc.getByRole('heading', { level: 1, name: 'Spatial Data Catalog' }).waitFor();
await screen(ogc, 'ogc-landing');
await ogc.getByRole('link', { name: 'Collections', exact: true }).click();
await ogc.getByRole('link', { name: 'North Carolina counties' }).click();
await ogc.getByRole('heading', { level: 1, name: 'North Carolina counties' }).waitFor();
assert.equal(await ogc.locator('main > p').first().innerText(), markup);
assert.equal(await ogc.evaluate(() => window.__ran), undefined, 'typed markup never runs on the OGC pages');
await screen(ogc, 'ogc-collection');
await ogc.getByRole('link', { name: 'Features', exact: true }).click();
await ogc.getByRole('columnheader', { name: 'name', exact: true }).waitFor();
await ogc.getByText('Showing 10 of 100 matching features.').waitFor();
await screen(ogc, 'ogc-items');
const firstFeature = await ogc.locator('tbody tr').first().innerText();
await ogc.getByRole('link', { name: 'Next page' }).click();
await ogc.getByRole('link', { name: 'Previous page' }).click();
assert.equal(await ogc.locator('tbody tr').first().innerText(), firstFeature, 'back on the first page');
await ogc.locator('tbody th a').first().click();
await ogc.getByRole('heading', { level: 1, name: /^Feature / }).waitFor();
await screen(ogc, 'ogc-item');

// --- Catalog: search finds it, facets filter.
step('catalog');
await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Datasets' }).click();
await page.getByLabel('Search datasets').fill('Carolina');
await page.getByRole('button', { name: 'Search', exact: true }).click();
await page.getByRole('link', { name: 'North Carolina counties' }).waitFor();
await page.getByText('1 dataset', { exact: true }).waitFor();
assert.match(await page.locator('.card').first().innerText(), new RegExp(`by ${admin}`), 'a card names its owner');
const countiesPicture = page.getByRole('img', { name: 'Picture of North Carolina counties', exact: true });
await pictureLoaded(countiesPicture, 240, 'the counties\' picture');
await screen(page, 'catalog');
// Words are found by their stem and by their beginning, as typed.
for (const words of ['county', 'carol']) {
  await page.getByLabel('Search datasets').fill(words);
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await until(async () => new URL(page.url()).searchParams.get('q') === words, `the search for ${words}`);
  await page.getByText('1 dataset', { exact: true }).waitFor();
  await page.getByRole('link', { name: 'North Carolina counties' }).waitFor();
}
await page.getByLabel('Sort by').selectOption('title');
await until(async () => new URL(page.url()).searchParams.get('sort') === 'title', 'the order in the address');
// A map area: the map zoomed in on the Gulf of Guinea holds no county of North Carolina; any area again finds them.
await page.getByLabel('Search datasets').fill('');
await page.getByRole('button', { name: 'Search', exact: true }).click();
await page.getByRole('button', { name: 'Search a map area' }).click();
const areaMap = page.getByRole('region', { name: 'Map to search in' });
await areaMap.waitFor();
await page.getByText('Loading map data…').waitFor({ state: 'detached' });
await areaMap.locator('canvas').focus();
// Zoomed in one step at a time (a key pressed while the map still eases cuts the last step short),
// searching after each, until the area spans under 80 degrees.
let areaWest = -180;
let areaEast = 180;
for (let step = 0; step < 8 && !(areaWest > -40 && areaEast < 40); step += 1) {
  await page.keyboard.press('=');
  await page.waitForTimeout(700);
  await page.getByRole('button', { name: 'Search this map area' }).click();
  await until(async () => new URL(page.url()).searchParams.has('bbox'), 'the area in the address');
  [areaWest, , areaEast] = new URL(page.url()).searchParams.get('bbox').split(',').map(Number);
  await areaMap.locator('canvas').focus();
}
assert.ok(areaWest > -40 && areaEast < 40, `the area is the map's view: ${page.url()}`);
await page.getByText('No dataset matches.').waitFor();
await screen(page, 'catalog-area');
await page.getByRole('button', { name: 'Any area' }).click();
await page.getByRole('link', { name: 'North Carolina counties' }).waitFor();
await page.getByRole('button', { name: 'Close the map' }).click();
await areaMap.waitFor({ state: 'detached' });
// On a phone the filters wait behind a button above the results.
{
  const size = page.viewportSize();
  await page.setViewportSize({ width: 390, height: 844 });
  const filters = page.getByRole('complementary', { name: 'Filters' });
  await until(async () => !(await filters.isVisible()), 'the filters folded away');
  const toggle = page.getByRole('button', { name: 'Filters', exact: true });
  assert.ok((await toggle.boundingBox()).y < (await page.locator('.card').first().boundingBox()).y, 'the Filters button is above the results');
  await toggle.click();
  await filters.waitFor();
  assert.ok((await filters.boundingBox()).y < (await page.locator('.card').first().boundingBox()).y, 'the filters open above the results');
  await page.screenshot({ path: path.join(shots, 'catalog-filters-phone.jpg'), quality: 70 });
  await page.setViewportSize(size);
}

// --- A remote service: this service's own OGC API collection, imported as
// a new dataset, then pulled again after a preview of what would change.
step('remote service');
await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Upload' }).click();
const serviceForm = page.getByRole('form', { name: 'Import from a map service' });
await serviceForm.getByLabel('Service URL').fill(`${base}/api`);
await serviceForm.getByLabel('Service type').selectOption('ogcapi_features');
await serviceForm.getByLabel('Collection id').fill(datasetId);
await serviceForm.getByLabel('Title of the new dataset').fill('Counties mirrored');
await serviceForm.getByRole('button', { name: 'Import the layer' }).click();
const mirrorLink = serviceForm.getByRole('link', { name: 'Open the imported dataset' });
await mirrorLink.waitFor({ timeout: 120_000 });
await screen(page, 'upload-service');
await mirrorLink.click();
await page.getByRole('heading', { level: 1, name: 'Counties mirrored' }).waitFor();
await page.getByText('rows 1–10 of 100').waitFor();
const pull = page.getByRole('region', { name: 'Replace from a map service' });
await pull.getByLabel('Service URL').fill(`${base}/api`);
await pull.getByLabel('Collection id').fill(datasetId);
await pull.getByRole('button', { name: 'Preview changes from the service' }).click();
const serviceChanges = page.getByRole('status', { name: 'Changes from the service', exact: true });
await serviceChanges.waitFor({ timeout: 130_000 });
assert.match(await serviceChanges.innerText(), /Rows: 100 → 100/);
assert.match(await serviceChanges.innerText(), /Columns added: none/);
const sampleRows = serviceChanges.getByRole('region', { name: 'Changes from the service: first rows' });
assert.equal(await sampleRows.getByRole('row').count(), 4, 'a header and three rows of the new data');
await screen(page, 'dataset-service-preview');
await serviceChanges.getByRole('button', { name: "Replace with the service's data" }).click();
await serviceChanges.waitFor({ state: 'detached', timeout: 120_000 });
const pulledJobs = await api('GET', '/api/jobs?kind=reupload', adminToken);
assert.equal(pulledJobs.jobs.filter((j) => j.status === 'succeeded').length, 4, 'the service preview and replacement ran too');

// --- Jobs: the upload's job, succeeded.
step('jobs');
await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Jobs' }).click();
await page.getByRole('cell', { name: 'ingest' }).first().waitFor();
await page.getByText('succeeded').first().waitFor();
await screen(page, 'jobs');

// --- A file of two layers: its layers listed (name, type, count), one chosen, one dataset made under the title given.
step('upload layers');
// The file is sent once: the layers chosen load from the file its preview read.
const uploadPosts = [];
const uploadPost = (request) => {
  if (request.method() === 'POST' && new URL(request.url()).pathname.startsWith('/api/datasets/upload')) uploadPosts.push(new URL(request.url()).pathname);
};
page.on('request', uploadPost);
await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Upload' }).click();
await page.getByLabel(/^Title \(optional/).fill('World countries from a GeoPackage');
await page.getByLabel('Files to upload').setInputFiles(env('CATALOG_TWO_LAYERS'));
const choice = page.getByRole('group', { name: 'world.gpkg holds 2 layers: choose the ones to load' });
await choice.waitFor({ timeout: 60_000 });
assert.match(await choice.innerText(), /countries \(MultiPolygon, 177 features\)/);
assert.match(await choice.innerText(), /capitals \(Point, 243 features\)/);
await screen(page, 'upload-layers');
await choice.getByLabel(/^capitals/).uncheck();
// The zooms of the vector tiles the page asks for: where its map opens.
const tileZooms = [];
const tileZoom = (request) => {
  const match = /\/api\/tiles\/[0-9a-f-]{36}\/(\d+)\/\d+\/\d+(\.pbf)?(\?|$)/.exec(request.url());
  if (match) tileZooms.push(Number(match[1]));
};
page.on('request', tileZoom);
await choice.getByRole('button', { name: 'Load 1 of 2 layers' }).click();
await page.waitForURL(/\/datasets\/[0-9a-f-]{36}$/, { timeout: 120_000 });
await page.getByRole('heading', { level: 1, name: 'World countries from a GeoPackage' }).waitFor();
await page.getByText('177', { exact: true }).first().waitFor();
page.off('request', uploadPost);
assert.equal(uploadPosts.filter((p) => p === '/api/datasets/upload').length, 1, `the file was sent once: ${uploadPosts}`);
assert.equal(uploadPosts.filter((p) => /^\/api\/datasets\/upload\/[0-9a-f-]{36}\/load$/.test(p)).length, 1, `the chosen layer loaded from the preview: ${uploadPosts}`);
// The world opens once across the map, not as copies side by side: a map
// over 1,024 px wide shows one 512 px world tile-width only from zoom 1.
await page.getByText('Loading map data…').waitFor({ state: 'detached' });
const worldWidth = await page.locator('.map').evaluate((e) => e.clientWidth);
assert.ok(worldWidth >= 1024, `the dataset's map is ${worldWidth} px wide`);
assert.ok(tileZooms.length > 0 && Math.min(...tileZooms) >= 1,
  `the world fills the ${worldWidth} px map once: its tiles were asked at zooms ${[...new Set(tileZooms)]}`);
page.off('request', tileZoom);

// --- API keys: the secret is shown once with a Copy button, listed by prefix with its expiry and last use,
// revoked only after a question.
step('api keys');
await page.getByRole('link', { name: `Account of ${admin}` }).click();
await page.getByLabel('Key name').fill('ui-test');
const expiry = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
await page.getByLabel('Expires after (optional)').fill(expiry);
await page.getByRole('button', { name: 'Create key' }).click();
const secret = await page.getByLabel('New API key', { exact: true }).innerText();
assert.ok(secret.length > 20, 'the new key is shown');
await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
await page.getByRole('button', { name: 'Copy the new API key' }).click();
await page.getByText('Copied.').waitFor();
assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret, 'Copy puts the key on the clipboard');
const keyRow = page.getByRole('row').filter({ hasText: 'ui-test' });
await keyRow.getByText('never').waitFor();
assert.match(await keyRow.innerText(), /expires /, 'the expiry is listed');
const shownExpiry = await api('GET', '/api/auth/api-keys', adminToken).then((keys) => keys.find((k) => k.name === 'ui-test').expires_at);
assert.equal(new Date(shownExpiry).toISOString().slice(0, 10) >= expiry, true, `the key expires at the end of ${expiry}: ${shownExpiry}`);
const keyed = await fetch(`${base}/api/auth/me`, { headers: { 'X-Api-Key': secret } });
assert.equal(keyed.status, 200, 'the shown key works');
// Its use is shown at the next look.
await page.reload();
await keyRow.getByText('never').waitFor({ state: 'detached' });
assert.doesNotMatch(await keyRow.innerText(), /never/, 'the last use of the key is listed');
await screen(page, 'account');
// Answering no keeps the key; yes revokes it, and says so.
dialogAnswer = false;
await page.getByRole('button', { name: 'Revoke key ui-test' }).click();
assert.match(dialogs.at(-1), /Revoke the key “ui-test”\? Scripts and tools that use it stop working/);
assert.equal((await fetch(`${base}/api/auth/me`, { headers: { 'X-Api-Key': secret } })).status, 200, 'no kept the key');
dialogAnswer = true;
await page.getByRole('button', { name: 'Revoke key ui-test' }).click();
await page.getByText('The key “ui-test” is revoked.').waitFor();
await page.getByRole('button', { name: 'Revoke key ui-test' }).waitFor({ state: 'detached' });
assert.equal((await fetch(`${base}/api/auth/me`, { headers: { 'X-Api-Key': secret } })).status, 401, 'revoked');

// --- Maps: made in the editor from the counties, the world's countries
// (private) and airports; each layer gets a colour of its own, the list
// shows the top layer first, layers are styled by attribute with a legend
// that matches what the map draws; unsaved changes are not lost silently;
// the share dialog warns of layers link holders cannot see, fixes it, and
// lists and revokes links.
step('maps');
/** Uploads a file through the API and answers its job once it succeeded. */
async function uploadJobByApi(file, name, fields) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', new Blob([fs.readFileSync(file)]), name);
  const accepted = await (await fetch(`${base}/api/datasets/upload`, {
    method: 'POST', headers: { Authorization: `Bearer ${adminToken}` }, body: form,
  })).json();
  let done;
  await until(async () => {
    done = await api('GET', `/api/jobs/${accepted.job_id}`, adminToken);
    return ['succeeded', 'failed', 'cancelled'].includes(done.status);
  }, `the upload of ${name}`, 120_000);
  assert.equal(done.status, 'succeeded', JSON.stringify(done));
  return done;
}
async function uploadByApi(file, name, fields) {
  const done = await uploadJobByApi(file, name, fields);
  return done.dataset_id ?? done.dataset_ids[0];
}
const worldId = await uploadByApi(env('CATALOG_WORLD'), 'countries.zip', { title: 'World countries' });

// --- A job's page: a file with rows off the world loads the rest; its
// report says which rows were kept aside and why, and shows them on a map.
step('job report');
{
  const badFile = path.join(os.tmpdir(), `stops-off-the-world-${process.pid}.geojson`);
  fs.writeFileSync(badFile, JSON.stringify({ type: 'FeatureCollection', features: [
    { type: 'Feature', properties: { name: 'Main Street' }, geometry: { type: 'Point', coordinates: [-78.64, 35.78] } },
    { type: 'Feature', properties: { name: 'Typo' }, geometry: { type: 'Point', coordinates: [-78.63, 357.7] } },
    { type: 'Feature', properties: { name: 'Station' }, geometry: { type: 'Point', coordinates: [-78.63, 35.77] } },
  ] }));
  const done = await uploadJobByApi(badFile, 'stops-off-the-world.geojson', {});
  await page.goto(`${base}/jobs`);
  await page.getByRole('link', { name: /stops-off-the-world/ }).first().click();
  await page.waitForURL(`${base}/jobs/${done.id}`);
  await page.getByRole('heading', { name: 'Ingest report' }).waitFor({ timeout: 30_000 });
  const text = await page.locator('main').innerText();
  assert.match(text, /Coordinate out of range/, text);
  assert.match(text, /357\.7/, 'the row kept aside shows its coordinate');
  // The file's size, who sent it, and the steps it went through.
  const facts = await page.locator('dl.facts').first().innerText();
  assert.match(facts, /File size\s+\d+(\.\d)? (B|KB)/, facts);
  assert.match(facts, new RegExp(`Sent by\\s+${admin}`), facts);
  const steps = await page.getByRole('list').filter({ hasText: 'Checking the rows' }).innerText();
  assert.match(steps, /Reading the file[\s\S]*Checking the rows[\s\S]*Indexing[\s\S]*Publishing/, steps);
  await page.getByRole('region', { name: /Rows kept aside from/ }).locator('canvas').waitFor({ timeout: 30_000 });
  await screen(page, 'job-report');
}
await uploadByApi(env('CATALOG_POINTS'), 'populations.geojson', { title: 'Populations', visibility: 'public' });
const rgb = (hex) => [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));
dialogAnswer = false;
dialogs.length = 0;
await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Maps' }).click();
await page.getByLabel('New map name').fill('Counties map');
await page.getByRole('button', { name: 'Create map' }).click();
await page.getByLabel('Map name').waitFor();
await until(async () => (await page.title()) === 'Map: Counties map · Spatial Data Catalog', 'the tab naming the map');
assert.equal(await page.getByLabel('Basemap source').inputValue(), 'builtin', 'a new map sits on the service\'s basemap');
for (const label of ['World countries', 'North Carolina counties', 'North Carolina counties', 'Populations']) {
  await page.getByLabel('Dataset to add').selectOption({ label });
  await page.getByRole('button', { name: 'Add layer' }).click();
}
assert.deepEqual(await page.locator('.layer-name').allInnerTexts(),
  ['Populations', 'North Carolina counties', 'North Carolina counties', 'World countries'], 'the top layer is listed first');
const colours = await page.getByLabel(/^Colour of /).evaluateAll((inputs) => inputs.map((i) => i.value));
assert.equal(new Set(colours).size, 4, `each layer its own colour: ${colours}`);
// Leaving with unsaved changes asks first; answering no stays.
await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Datasets' }).click();
await until(async () => dialogs.some((m) => /unsaved changes/.test(m)), 'the unsaved-changes question');
assert.equal(await page.getByLabel('Map name').count(), 1, 'still in the editor');
dialogAnswer = true;
// Countries' populations sized by number: three symbol sizes in the legend, largest first.
await page.getByLabel('Style of Populations').selectOption('proportional');
await page.getByLabel('Column for Populations').selectOption('pop_est');
const legend = page.getByRole('region', { name: 'Legend' });
await until(async () => (await legend.locator('.legend-swatch.circle').count()) === 3, 'three symbol sizes');
const sizes = await legend.locator('.legend-swatch.circle').evaluateAll((e) => e.map((x) => x.getBoundingClientRect().width));
assert.ok(sizes[0] > sizes[1] && sizes[1] > sizes[2], `symbols shrink with the value: ${sizes}`);
await page.getByRole('button', { name: 'Remove Populations' }).click();
// The top counties: five classes of births in 1974, drawn opaque.
await page.getByLabel('Style of North Carolina counties').first().selectOption('classes');
await page.getByLabel('Column for North Carolina counties').first().selectOption('bir74');
await page.getByLabel('Colour ramp of North Carolina counties').first().selectOption('Blues');
// The legend names the column the classes are of, as the file named it, and the unit the map maker gave.
await page.getByLabel('Unit of the numbers of North Carolina counties (optional)').first().fill('births');
await legend.getByText('by BIR74, in births').waitFor();
await page.getByLabel('Opacity of North Carolina counties').first().focus();
await page.keyboard.press('End');
assert.equal(await page.getByLabel('Opacity of North Carolina counties').first().inputValue(), '1');
await page.getByLabel('Visible').nth(1).uncheck();
// The world by continent.
await page.getByLabel('Style of World countries').selectOption('categories');
await page.getByLabel('Column for World countries').selectOption('continent');
await until(async () => (await legend.locator('li').count()) === 5 + 8 + 1, 'five classes, eight continents and "Other" in the legend');
const continents = await legend.locator('li').allInnerTexts();
assert.ok(continents.includes('Africa') && continents.includes('Antarctica') && continents.includes('Other'), continents.join(', '));
const classColours = await legend.locator('.legend-layer').first().locator('.legend-swatch').evaluateAll((e) => e.map((x) => x.dataset.colour));
assert.equal(classColours.length, 5);
// Every class the legend names is on the map, in the legend's colour.
await page.getByRole('button', { name: 'Zoom to North Carolina counties' }).first().click();
await page.locator('.map').scrollIntoViewIfNeeded();
for (const colour of classColours) {
  await until(async () => (await dataPixels(page, [rgb(colour)], true)) >= 50, `counties drawn in ${colour}`);
}
await page.getByLabel('Description').fill('Births in 1974, by county');
await page.getByLabel('Notes').fill('Classes: equal counts.');
await screen(page, 'map-editor');
await page.getByRole('button', { name: 'Save map' }).click();
await page.getByText('Map saved.').waitFor();
const mapId = page.url().split('/').pop();
const saved = await api('GET', `/api/maps/${mapId}`, adminToken);
// Saving kept the view the editor zoomed to (North Carolina), not the layers' world extent.
assert.ok(saved.center_lng > -85 && saved.center_lng < -75 && saved.center_lat > 33 && saved.center_lat < 37 && saved.zoom > 5,
  `the saved view: ${saved.center_lng}, ${saved.center_lat} at zoom ${saved.zoom}`);
assert.equal(saved.bearing, 0);
assert.equal(saved.description, 'Births in 1974, by county');
assert.equal(saved.notes, 'Classes: equal counts.');
/** How many pixels of the map show the counties' classes: a map opened on North Carolina is mostly counties. */
const countyPixels = (p) => dataPixels(p, classColours.map(rgb), true);
const ordered = [...saved.layers].sort((x, y) => x.sort_order - y.sort_order);
assert.deepEqual(ordered.map((l) => l.dataset_name), ['World countries', 'North Carolina counties', 'North Carolina counties']);
assert.equal(ordered[0].style_config.mode, 'categories');
assert.equal(ordered[0].paint['fill-color'][0], 'match', 'categories become a match expression');
assert.equal(ordered[2].style_config.mode, 'classes');
assert.equal(ordered[2].opacity, 1);
assert.equal(ordered[1].visible, false, 'the middle layer is hidden');
const [download] = await Promise.all([
  page.waitForEvent('download'),
  page.getByRole('button', { name: 'Export style JSON' }).click(),
]);
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ui-flows-'));
const stylePath = path.join(scratch, 'counties.style.json');
fs.copyFileSync(await download.path(), stylePath);
const style = JSON.parse(fs.readFileSync(stylePath, 'utf8'));
assert.equal(style.version, 8, 'the export is a MapLibre style');
assert.deepEqual([style.center, style.zoom], [[saved.center_lng, saved.center_lat], saved.zoom], 'the exported style opens on the saved view');
assert.deepEqual(style.layers.filter((l) => l.type === 'fill' && l.metadata?.['catalog:layer']).map((l) => l.paint['fill-color']),
  ordered.map((l) => l.paint['fill-color']), 'the exported style draws the same colours');
// Sharing: the private world layer is named, and made public from the dialog.
await page.getByRole('button', { name: 'Share' }).click();
const sharing = page.getByRole('region', { name: 'Share “Counties map”' });
await sharing.getByRole('alert').waitFor();
assert.match(await sharing.getByRole('alert').innerText(), /“World countries” \(private\)/);
await sharing.getByRole('button', { name: 'Make “World countries” public' }).click();
await sharing.getByRole('alert').waitFor({ state: 'detached' });
assert.equal((await api('GET', `/api/datasets/${worldId}`, adminToken)).visibility, 'public');
await sharing.getByRole('button', { name: 'Create a link' }).click();
await sharing.getByRole('list', { name: 'Share links' }).getByRole('listitem').waitFor();
await sharing.getByRole('button', { name: 'Create a link' }).click();
await until(async () => (await sharing.getByRole('list', { name: 'Share links' }).getByRole('listitem').count()) === 2, 'two links');
await sharing.getByRole('button', { name: /^Revoke link / }).first().click();
await until(async () => (await sharing.getByRole('list', { name: 'Share links' }).getByRole('listitem').count()) === 1, 'one link left');
assert.equal((await api('GET', `/api/maps/${mapId}/shares`, adminToken)).shares.length, 1, 'the revoked link is gone');
const shareUrl = await sharing.getByRole('list', { name: 'Share links' }).getByRole('link').getAttribute('href');
assert.ok(shareUrl.startsWith(`${base}/maps/shared/`), shareUrl);
assert.ok((await page.getByLabel('Embed snippet').inputValue()).startsWith(`<iframe src="${shareUrl}/embed"`), 'the snippet frames the embeddable view');
await screen(page, 'map-share');
await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Maps' }).click();
await page.getByRole('link', { name: 'Counties map' }).waitFor();
const countiesMapPicture = page.getByRole('img', { name: 'Picture of Counties map', exact: true });
await pictureLoaded(countiesMapPicture, 240, 'the map\'s picture');
await screen(page, 'maps');

// --- The exported style, imported: a new map with the same layers.
step('style import');
await page.getByLabel('Style JSON file').setInputFiles(stylePath);
await screen(page, 'maps-import');
await page.getByRole('button', { name: 'Import style' }).click();
await page.waitForURL((url) => /^\/maps\/[0-9a-f-]{36}$/.test(url.pathname) && !url.pathname.endsWith(mapId));
await page.getByRole('heading', { name: 'Edit map “Counties map”' }).waitFor();
await until(async () => (await page.locator('.layer').count()) === 3, 'the imported map\'s three layers');
drawn = await drawnPixels(page);
assert.ok(drawn >= 2000, `the imported map drew ${drawn} pixels of data`);
await screen(page, 'map-imported');

// --- A basemap: a raster dataset of the catalog under a map of its own,
// toned, saved, drawn, exported, and still chosen after a reload.
step('basemap');
const rasterForm = new FormData();
rasterForm.append('file', new Blob([fs.readFileSync(env('CATALOG_RASTER'))]), 'elev_luxembourg.tif');
const rasterJob = await (await fetch(`${base}/api/datasets/upload`, {
  method: 'POST', headers: { Authorization: `Bearer ${adminToken}` }, body: rasterForm,
})).json();
let rasterDone;
await until(async () => {
  rasterDone = await api('GET', `/api/jobs/${rasterJob.job_id}`, adminToken);
  return ['succeeded', 'failed', 'cancelled'].includes(rasterDone.status);
}, 'the raster upload', 120_000);
assert.equal(rasterDone.status, 'succeeded', JSON.stringify(rasterDone));
const rasterId = rasterDone.dataset_id ?? rasterDone.dataset_ids[0];
// The raster's page: its size, cell size and bands, and a colour map with a stretch that the map draws.
await page.goto(`${base}/datasets/${rasterId}`);
await page.getByRole('heading', { name: 'elev_luxembourg' }).waitFor();
const facts = await page.locator('.facts').innerText();
assert.match(facts, /95 × 90 cells/);
assert.match(facts, /Cell size/);
assert.match(facts, /1: Gray, Int16/);
const colourful = async () => page.evaluate(async (b64) => {
  const img = new Image();
  img.src = `data:image/png;base64,${b64}`;
  await img.decode();
  const canvas = document.createElement('canvas');
  [canvas.width, canvas.height] = [img.width, img.height];
  const ctx = canvas.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const { data } = ctx.getImageData(0, 0, img.width, img.height);
  let n = 0;
  for (let i = 0; i < data.length; i += 4) if (Math.max(data[i], data[i + 1], data[i + 2]) - Math.min(data[i], data[i + 1], data[i + 2]) > 40) n += 1;
  return n;
}, (await page.locator('.map canvas').screenshot()).toString('base64'));
await page.getByText('Loading map data…').waitFor({ state: 'detached' });
assert.ok((await colourful()) < 500, 'the raster shows grey by default');
await page.getByLabel('Colour map of elev_luxembourg').selectOption('terrain');
await until(async () => (await colourful()) > 5000, 'the terrain colours on the map');
await screen(page, 'dataset-raster');
// In the catalog, the (private) raster's card shows its picture, fetched with the session and framed on
// its extent: Luxembourg, taller than wide, fills the picture's height, centred across it.
await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Datasets' }).click();
const picture = page.getByRole('img', { name: 'Picture of elev_luxembourg' });
await pictureLoaded(picture, 240, 'the raster\'s picture');
const drawnBox = await picture.evaluate((img) => {
  const canvas = document.createElement('canvas');
  [canvas.width, canvas.height] = [img.naturalWidth, img.naturalHeight];
  const ctx = canvas.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
  const box = { left: canvas.width, right: -1, top: canvas.height, bottom: -1, width: canvas.width, height: canvas.height };
  for (let y = 0; y < canvas.height; y += 1) {
    for (let x = 0; x < canvas.width; x += 1) {
      if (data[(y * canvas.width + x) * 4 + 3] < 128) continue;
      box.left = Math.min(box.left, x); box.right = Math.max(box.right, x);
      box.top = Math.min(box.top, y); box.bottom = Math.max(box.bottom, y);
    }
  }
  return box;
});
assert.ok(drawnBox.top <= 3 && drawnBox.bottom >= drawnBox.height - 4, `the raster fills the picture's height: ${JSON.stringify(drawnBox)}`);
assert.ok(Math.abs(drawnBox.left - (drawnBox.width - 1 - drawnBox.right)) <= 8 && drawnBox.right - drawnBox.left < drawnBox.width - 40,
  `the raster is centred across the picture: ${JSON.stringify(drawnBox)}`);
// A vector dataset's card shows the server's picture of its data (240 px wide, in the layer colour).
const worldPicture = page.getByRole('img', { name: 'Picture of World countries', exact: true });
await pictureLoaded(worldPicture, 240, 'the countries\' picture');
const green = await worldPicture.evaluate((img) => {
  const canvas = document.createElement('canvas');
  [canvas.width, canvas.height] = [img.naturalWidth, img.naturalHeight];
  const ctx = canvas.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
  let n = 0;
  for (let i = 0; i < data.length; i += 4) if (data[i + 1] > data[i] + 40 && data[i + 1] > data[i + 2]) n += 1;
  return n;
});
assert.ok(green > 3000, `the countries are drawn in their colour: ${green} pixels`);
await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Maps' }).click();
// Each map's card shows the server's picture of its layers.
const mapPicture = page.getByRole('img', { name: 'Picture of Counties map', exact: true }).first();
await pictureLoaded(mapPicture, 240, 'the map\'s picture');
await page.getByLabel('New map name').fill('Relief of Luxembourg');
await page.getByRole('button', { name: 'Create map' }).click();
await page.getByLabel('Basemap source').selectOption({ label: 'Raster dataset: elev_luxembourg' });
await page.getByLabel('Basemap tone').selectOption('monochrome');
await page.getByRole('button', { name: 'Save map' }).click();
await page.getByText('Map saved.').waitFor();
// A raster basemap replaces the built-in one: all but the plain background is the raster.
drawn = await drawnPixels(page, 2000, NOT_DATA.slice(0, 1));
assert.ok(drawn >= 2000, `the basemap drew ${drawn} pixels`);
await screen(page, 'map-basemap');
const reliefId = page.url().split('/').pop();
const relief = await api('GET', `/api/maps/${reliefId}`, adminToken);
assert.equal(relief.basemap_style, `${base}/api/tiles/${rasterId}/{z}/{x}/{y}.png`);
assert.equal(relief.basemap_config.land_water_tone, 'monochrome');
const reliefStyle = await api('GET', `/api/maps/${reliefId}/style.json`, adminToken);
assert.deepEqual(reliefStyle.sources.basemap.tiles, [relief.basemap_style], 'the exported style draws the basemap');
await page.reload();
await page.getByLabel('Basemap source').waitFor();
assert.equal(await page.getByLabel('Basemap source').inputValue(), rasterId, 'the choice is kept');
assert.equal(await page.getByLabel('Basemap tone').inputValue(), 'monochrome');
const share = { token: shareUrl.split('/').pop() };
const map = { id: mapId };
const visitor = await newPage();
await visitor.goto(shareUrl);
await visitor.getByRole('heading', { name: 'Counties map' }).waitFor();
drawn = await drawnPixels(visitor);
assert.ok(drawn >= 2000, `the shared map drew ${drawn} pixels of data`);
await visitor.getByText('Births in 1974, by county').waitFor();
// It opens on the saved view: the world extent would leave North Carolina a few hundred pixels.
await until(async () => (await countyPixels(visitor)) >= 20_000, 'the shared map open on North Carolina');
await screen(visitor, 'shared-map');

// --- The embeddable view: the map and nothing else, framed by a page of
// another site (the app's own pages refuse to be framed).
step('embed');
const embedded = await newPage();
await embedded.goto(`${shareUrl}/embed`);
await embedded.getByRole('region', { name: 'Map Counties map' }).waitFor();
drawn = await drawnPixels(embedded);
assert.ok(drawn >= 2000, `the embedded map drew ${drawn} pixels of data`);
await until(async () => (await countyPixels(embedded)) >= 20_000, 'the embedded map open on North Carolina');
assert.equal(await embedded.getByRole('navigation').count(), 0, 'no navigation in the embeddable view');
assert.equal(await embedded.locator('form, input, textarea').count(), 0, 'no form in the embeddable view');
assert.equal(await embedded.locator('a:not(.maplibregl-ctrl a)').count(), 0, 'no link but the map\'s attribution');
await screen(embedded, 'shared-map-embed');
const framer = await newPage({ bypassCSP: false });
await framer.setContent(`<iframe src="${shareUrl}/embed" width="600" height="400" title="Embedded"></iframe>
  <iframe src="${shareUrl}" width="600" height="400" title="App"></iframe>`);
await framer.frameLocator('iframe[title="Embedded"]').getByRole('region', { name: 'Map Counties map' }).waitFor();
// In a small frame the legend starts folded behind its title, and opens on a click.
const frameLegend = framer.frameLocator('iframe[title="Embedded"]').getByRole('button', { name: 'Legend' });
assert.equal(await frameLegend.getAttribute('aria-expanded'), 'false', 'the legend is folded in a 600 x 400 frame');
await frameLegend.click();
await framer.frameLocator('iframe[title="Embedded"]').getByText('by BIR74, in births').waitFor();
// The browser shows its own error page in the refused frame, and says why.
await until(async () => framer.frames().some((f) => f.url().startsWith('chrome-error:')),
  'the browser refusing to frame the app\'s page of the shared map');
assert.ok(framer.seen.errors.some((e) => e.includes("frame-ancestors 'none'")), framer.seen.errors.join('\n'));
assert.equal(framer.frames().filter((f) => f.url().startsWith('chrome-error:')).length, 1, 'only the app\'s page is refused');
await framer.context().close();
await api('DELETE', `/api/maps/${map.id}/shares/${share.token}`, adminToken);
await visitor.reload();
await visitor.getByRole('heading', { name: 'This link was revoked' }).waitFor();
await embedded.reload();
await embedded.getByText('This map is no longer shared.').waitFor();
assert.deepEqual(embedded.seen.foreign, [], 'the embeddable view fetches nothing from another site');
assert.deepEqual(embedded.seen.errors.filter((e) => !/status of 4[0-9][0-9]/.test(e)), [], 'no script errors');
await embedded.context().close();
await visitor.goto(`${base}/maps/shared/no-such-link`);
await visitor.getByRole('heading', { name: 'Not found' }).waitFor();

// --- Register, then approval by an admin.
step('register and approve');
await visitor.goto(`${base}/register`);
await visitor.getByLabel('Username').fill('newcomer');
await visitor.getByLabel('Email').fill('newcomer@example.org');
await visitor.getByLabel('Password').fill('Newcomer-Password-1');
await screen(visitor, 'register');
await visitor.getByRole('button', { name: 'Register' }).click();
await visitor.getByRole('status').waitFor();
const registered = await visitor.getByRole('status').innerText();
// A person waiting for approval shows as a badge on the Admin link, on every screen.
if (/approval/.test(registered)) {
  await page.goto(`${base}/maps`);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Admin 1 waiting for approval' }).waitFor();
}
await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: /^Admin/ }).click();
await page.getByRole('heading', { name: 'Users' }).waitFor();
if (/approval/.test(registered)) {
  await page.getByText('One account waits for your approval').waitFor();
  await page.getByRole('button', { name: 'Approve newcomer' }).click();
  await page.getByText('newcomer is now active.').waitFor();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Admin', exact: true }).waitFor();
}
await page.getByLabel('Status of newcomer').waitFor();
assert.equal(await page.getByLabel('Status of newcomer').inputValue(), 'active');
// A role change asks first, and says what it did; no leaves the role as it was.
dialogAnswer = false;
await page.getByLabel('Role of newcomer').selectOption('editor');
assert.match(dialogs.at(-1), /^Make newcomer an? editor\? An editor also uploads/);
await until(async () => (await page.getByLabel('Role of newcomer').inputValue()) === 'viewer', 'the role is viewer again');
assert.deepEqual((await api('GET', '/api/admin/users', adminToken)).find((u) => u.username === 'newcomer').roles, ['viewer']);
dialogAnswer = true;
await page.getByLabel('Role of newcomer').selectOption('editor');
await page.getByText('newcomer is now an editor (was viewer); their API keys were revoked.').waitFor();
assert.deepEqual((await api('GET', '/api/admin/users', adminToken)).find((u) => u.username === 'newcomer').roles, ['editor']);
// An admin adds a person by invitation: the link (copied) lets them choose their password, and they sign in.
await page.getByLabel('New username').fill('invited');
await page.getByLabel('Email (optional)').fill('invited@example.org');
await page.getByLabel('Role of the new account').selectOption('editor');
await page.getByRole('button', { name: 'Create and make an invitation link' }).click();
const inviteUrl = await page.getByLabel('Invitation link for invited', { exact: true }).inputValue();
assert.ok(inviteUrl.startsWith(`${base}/reset-password#token=`), inviteUrl);
await page.getByRole('button', { name: 'Copy the link for invited' }).click();
assert.equal(await page.evaluate(() => navigator.clipboard.readText()), inviteUrl, 'Copy puts the link on the clipboard');
await page.getByRole('row').filter({ hasText: 'invited@example.org' }).waitFor();
await screen(page, 'admin-users');
const invitee = await newPage();
await invitee.goto(inviteUrl);
await invitee.getByLabel('New password', { exact: true }).fill('Invited-Password-1');
await invitee.getByLabel('New password again').fill('Invited-Password-1');
await invitee.getByRole('button', { name: 'Set the password' }).click();
await invitee.getByRole('heading', { name: 'Password set' }).waitFor();
const invitedLogin = await fetch(`${base}/api/auth/login`, {
  method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams({ username: 'invited', password: 'Invited-Password-1' }),
});
assert.equal(invitedLogin.status, 200, 'the invited person signs in with the password they chose');
await invitee.close();
// Or with a password set by the admin: it can sign in at once.
await page.getByLabel('New username').fill('direct');
await page.getByLabel('Set it now').check();
await page.getByLabel('Password of the new account').fill('Direct-Password-12');
await page.getByRole('button', { name: 'Create the account' }).click();
await page.getByText('The account direct is made; it can sign in now.').waitFor();
// The metrics screen draws the service's own figures as small charts.
await page.getByRole('navigation', { name: 'Admin' }).getByRole('link', { name: 'Metrics' }).click();
await page.getByRole('heading', { name: 'Metrics' }).waitFor();
await until(async () => !/waiting for a second read/.test(await page.getByRole('listitem').filter({ hasText: 'Requests' }).first().innerText()),
  'a second read of the metrics', 20_000);
assert.match(await page.getByRole('listitem').filter({ hasText: 'Requests' }).first().innerText(), /per second/);
assert.match(await page.getByRole('listitem').filter({ hasText: 'Latency, 95th percentile' }).innerText(), /ms|waiting/);
const storageBars = page.getByRole('list', { name: 'Storage by person' });
await storageBars.getByText(admin, { exact: true }).waitFor();
assert.match(await page.getByRole('list', { name: 'Datasets by person' }).innerText(), new RegExp(`${admin}\\s+\\d+`));
assert.ok(await page.locator('.chart polyline').count() >= 8, 'every figure has its line');
// A third read draws each figure's line through two points.
await until(async () => (await page.locator('.chart polyline').first().getAttribute('points')).trim().split(' ').length >= 2,
  'a line through two reads', 20_000);
await screen(page, 'admin-metrics');
await page.getByRole('navigation', { name: 'Admin' }).getByRole('link', { name: 'Users' }).click();
await page.getByRole('heading', { name: 'Users' }).waitFor();
// A forgotten password, with no mail server: the sign-in page points to
// the admin, who makes a one-time link; the link sets the password once.
await visitor.goto(`${base}/signin`);
await visitor.getByRole('link', { name: 'Forgot your password?' }).click();
await visitor.getByText('This service sends no mail. Ask an administrator').waitFor();
await screen(visitor, 'forgot-password');
await page.getByRole('button', { name: 'Make a password reset link for newcomer' }).click();
const resetUrl = await page.getByLabel('Password reset link for newcomer', { exact: true }).inputValue();
assert.ok(resetUrl.startsWith(`${base}/reset-password#token=`), resetUrl);
await visitor.goto(resetUrl);
await visitor.getByRole('heading', { name: 'Choose a new password' }).waitFor();
assert.equal(new URL(visitor.url()).hash, '', 'the token leaves the address bar');
await screen(visitor, 'reset-password');
await visitor.getByLabel('New password', { exact: true }).fill('Newcomer-Password-1');
await visitor.getByLabel('New password again').fill('Newcomer-Password-1');
await visitor.getByRole('button', { name: 'Set the password' }).click();
await visitor.getByRole('heading', { name: 'Password set' }).waitFor();
await visitor.goto(`${base}/signin`);
await visitor.goto(resetUrl);
await visitor.getByLabel('New password', { exact: true }).fill('Newcomer-Password-2');
await visitor.getByLabel('New password again').fill('Newcomer-Password-2');
await visitor.getByRole('button', { name: 'Set the password' }).click();
await visitor.getByRole('alert').waitFor();
assert.match(await visitor.getByRole('alert').innerText(), /already used or expired/, 'a link works once');
// A grant to the newcomer on the dataset page, then its revocation.
await page.goto(`${base}/datasets/${datasetId}`);
await page.getByLabel('Username of the person').fill('newcomer');
await page.getByRole('button', { name: 'Grant access' }).click();
await page.getByRole('button', { name: 'Revoke access of newcomer' }).click();
await page.getByRole('button', { name: 'Revoke access of newcomer' }).waitFor({ state: 'detached' });
await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: /^Admin/ }).click();

// --- Single sign-on: a provider added in the admin screen shows on the sign-in page at its next load,
// and so do its changes; the callback signs in and returns to where the person was.
step('sign-in providers');
await page.getByRole('navigation', { name: 'Admin' }).getByRole('link', { name: 'Sign-in providers' }).click();
await page.getByRole('heading', { name: 'Sign-in providers' }).waitFor();
await page.getByLabel('Slug').fill('company');
await page.getByLabel('Display name', { exact: true }).fill('Company');
await page.getByLabel('Client ID').fill(env('CATALOG_IDP_CLIENT_ID'));
await page.getByLabel('Client secret', { exact: true }).fill(env('CATALOG_IDP_CLIENT_SECRET'));
await page.getByLabel('Discovery URL').fill(env('CATALOG_IDP_DISCOVERY'));
await page.getByRole('button', { name: 'Add provider' }).click();
await page.getByRole('heading', { name: 'Company', exact: true }).waitFor();
const signinPage = await newPage();
await signinPage.goto(`${base}/signin`);
await signinPage.getByRole('button', { name: 'Sign in with Company' }).waitFor();
await page.getByLabel('Display name of company').fill('Company login');
await page.getByRole('button', { name: 'Save name' }).click();
await page.getByRole('heading', { name: 'Company login', exact: true }).waitFor();
await page.getByRole('button', { name: 'Disable company' }).click();
await page.getByRole('button', { name: 'Enable company' }).waitFor();
await signinPage.reload();
await signinPage.getByRole('heading', { name: 'Sign in' }).waitFor();
assert.equal(await signinPage.getByRole('button', { name: /^Sign in with / }).count(), 0, 'a disabled provider is not offered');
await page.getByLabel('New client secret for company').fill(env('CATALOG_IDP_CLIENT_SECRET'));
await page.getByRole('button', { name: 'Rotate secret' }).click();
await page.getByText('Secret rotated.').waitFor();
await page.getByRole('button', { name: 'Enable company' }).click();
await page.getByRole('button', { name: 'Disable company' }).waitFor();
await screen(page, 'admin-providers');
step('single sign-on');
const sso = await newPage();
await sso.goto(`${base}/signin?next=/jobs`);
await sso.getByRole('button', { name: 'Sign in with Company login' }).click();
await sso.waitForURL(`${base}/jobs`, { timeout: 30_000 });
await sso.getByRole('button', { name: 'Sign out' }).waitFor();
await sso.getByRole('heading', { name: 'Jobs' }).waitFor();
// Reloading keeps the session (the refresh cookie), as people expect.
await sso.reload();
await sso.getByRole('button', { name: 'Sign out' }).waitFor();

// --- An owner who is not an admin grants a restricted dataset to a person
// by username; that person then finds it, with its owner's name, and opens it.
step('owner grants');
await page.goto(`${base}/admin/users`);
await page.getByLabel('Role of newcomer').selectOption('editor');
await until(async () => (await api('GET', '/api/admin/users', adminToken))
  .find((u) => u.username === 'newcomer').roles[0] === 'editor', 'newcomer to be an editor');
await api('POST', '/api/admin/users', adminToken, { username: 'reader', password: 'Reader-Password-12', role: 'viewer' });
const owner = await signedIn('newcomer', 'Newcomer-Password-1');
const stopsFile = path.join(scratch, 'bus_stops.geojson');
fs.writeFileSync(stopsFile, JSON.stringify({ type: 'FeatureCollection', features: [
  { type: 'Feature', properties: { name: 'Main Street' }, geometry: { type: 'Point', coordinates: [-78.64, 35.78] } },
  { type: 'Feature', properties: { name: 'Station' }, geometry: { type: 'Point', coordinates: [-78.63, 35.77] } },
] }));
await owner.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Upload' }).click();
await owner.getByLabel('Files to upload').setInputFiles(stopsFile);
await owner.waitForURL(/\/datasets\/[0-9a-f-]{36}$/, { timeout: 120_000 });
await owner.getByRole('heading', { level: 1, name: 'bus_stops' }).waitFor();
await owner.getByLabel('Visibility').selectOption('restricted');
await owner.getByRole('button', { name: 'Save', exact: true }).click();
await owner.getByText('Saved.').waitFor();
const access = owner.getByRole('region', { name: 'Access for other people' });
await access.getByLabel('Username of the person').fill('nobody-here');
await access.getByRole('button', { name: 'Grant access' }).click();
await access.getByRole('alert').waitFor();
assert.match(await access.getByRole('alert').innerText(), /no account has the username "nobody-here"/);
await access.getByLabel('Username of the person').fill('reader');
await access.getByRole('button', { name: 'Grant access' }).click();
await access.getByRole('button', { name: 'Revoke access of reader' }).waitFor();
assert.match(await access.innerText(), /reader: read/);
await screen(owner, 'dataset-grants');
const reader = await signedIn('reader', 'Reader-Password-12');
const stopsCard = reader.locator('.card', { hasText: 'bus_stops' });
await stopsCard.waitFor();
assert.match(await stopsCard.innerText(), /by newcomer/, 'the card names the owner');
await screen(reader, 'catalog-reader');
await stopsCard.getByRole('link', { name: 'bus_stops' }).click();
await reader.getByRole('heading', { level: 1, name: 'bus_stops' }).waitFor();

// --- Quotas: each account's usage and caps; a cap set here refuses the
// owner's next upload with the service's reason.
step('quotas');
await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: /^Admin/ }).click();
await page.getByRole('navigation', { name: 'Admin' }).getByRole('link', { name: 'Quotas' }).click();
const newcomerQuota = page.getByRole('form', { name: 'newcomer', exact: true });
await until(async () => /Datasets: 1 of no limit/.test(await newcomerQuota.innerText()), 'newcomer\'s usage');
await newcomerQuota.getByLabel('Dataset cap of newcomer').fill('1');
await newcomerQuota.getByRole('button', { name: 'Save quota of newcomer' }).click();
await newcomerQuota.getByText('Quota of newcomer saved.').waitFor();
await until(async () => /Datasets: 1 of 1/.test(await newcomerQuota.innerText()), 'the new cap');
await screen(page, 'admin-quotas');
await owner.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Upload' }).click();
await owner.getByLabel('Files to upload').setInputFiles(stopsFile);
const refusal = owner.getByRole('alert');
await refusal.waitFor();
assert.match(await refusal.innerText(), /dataset_count quota would be exceeded: limit 1, usage 1/);
await screen(owner, 'upload-refused');
await owner.getByRole('link', { name: 'Account of newcomer' }).click();
await owner.getByText('1 of 1', { exact: true }).waitFor();

// --- Notification channels: saved (the secret is never shown again), and a
// test sent: the webhook takes it, the mail server (nothing listens) fails,
// and each outcome shows.
step('notifications');
await page.getByRole('navigation', { name: 'Admin' }).getByRole('link', { name: 'Notifications' }).click();
await page.getByLabel('Send mail').check();
await page.getByLabel('SMTP host').fill('127.0.0.1');
await page.getByLabel('SMTP port').fill('1');
await page.getByLabel('Connection security').selectOption('none');
await page.getByLabel('Sender address').fill('catalog@example.org');
await page.getByLabel('Recipients').fill('ops@example.org, gis@example.org');
await page.getByLabel('Call a webhook').check();
await page.getByLabel('Webhook URL').fill(env('CATALOG_WEBHOOK'));
await page.getByLabel('Signing secret').fill(env('CATALOG_WEBHOOK_SECRET'));
await page.getByLabel('A job succeeded').check();
await page.getByRole('button', { name: 'Save notification settings' }).click();
await page.getByText('Notification settings saved.').waitFor();
await page.getByText('A signing secret is stored; leave this empty to keep it.').waitFor();
await page.reload();
await page.getByLabel('Webhook URL').waitFor();
assert.equal(await page.getByLabel('Webhook URL').inputValue(), env('CATALOG_WEBHOOK'), 'the settings are kept');
assert.equal(await page.getByLabel('Recipients').inputValue(), 'ops@example.org, gis@example.org');
assert.equal(await page.getByLabel('Signing secret').inputValue(), '', 'a secret never comes back');
assert.ok(await page.getByLabel('A job succeeded').isChecked());
await page.getByRole('button', { name: 'Send test' }).click();
const outcome = page.getByRole('status', { name: 'Test result' });
await outcome.getByText('Webhook: delivered').waitFor({ timeout: 30_000 });
assert.match(await outcome.innerText(), /Mail: failed: \S/);
assert.match(await outcome.innerText(), /Sent through 1 of 2 channels\./);
await screen(page, 'admin-notifications');

// --- The site banner: shown as configured, and said to be configuration.
step('banner');
await page.getByRole('navigation', { name: 'Admin' }).getByRole('link', { name: 'Site banner' }).click();
await page.getByText("The banner is set by the service's configuration, not on this screen").waitFor();
const bannerFacts = page.locator('.facts dd');
assert.equal(await bannerFacts.nth(0).innerText(), 'yes');
assert.equal(await bannerFacts.nth(1).innerText(), env('CATALOG_BANNER_TEXT'), 'typed markup shown as text');
assert.match(await bannerFacts.nth(2).innerText(), /#fde68a/);
await screen(page, 'admin-banner');

// --- Not found, and sign out.
step('not found and sign out');
await page.goto(`${base}/no/such/page`);
await page.getByRole('heading', { name: 'Not found' }).waitFor();
await screen(page, 'not-found');
// "Sign out" ends this browser's sign-in only; "Sign out everywhere" ends them all.
const laptop = await signedIn(admin, adminPassword);
const tablet = await signedIn(admin, adminPassword);
await page.getByRole('button', { name: 'Sign out' }).click();
await page.getByRole('heading', { name: 'Sign in' }).waitFor();
await until(async () => (await page.title()) === 'Sign in · Spatial Data Catalog', 'the sign-in tab title');
await page.goto(`${base}/datasets`);
await page.getByRole('link', { name: 'Sign in' }).waitFor();
await laptop.reload();
await laptop.getByRole('link', { name: `Account of ${admin}` }).waitFor();
await laptop.getByRole('link', { name: `Account of ${admin}` }).click();
await laptop.getByRole('heading', { name: 'Sign out everywhere' }).waitFor();
await screen(laptop, 'account-sign-out');
await laptop.getByRole('button', { name: 'Sign out everywhere' }).click();
await laptop.getByRole('heading', { name: 'Sign in' }).waitFor();
await tablet.reload();
await tablet.getByRole('link', { name: 'Sign in' }).waitFor();
assert.equal(await tablet.getByRole('button', { name: 'Sign out' }).count(), 0, 'the other browser is signed out too');
await laptop.context().close();
await tablet.context().close();
// Each screen has a title of its own.
const titles = Object.entries(report.titles).filter(([name]) => !/ogc|embed/.test(name));
for (const [screenName, title] of titles) assert.match(title, / · Spatial Data Catalog$/, `${screenName}: ${title}`);
assert.ok(new Set(titles.map(([, t]) => t)).size >= 20, `screens have titles of their own: ${JSON.stringify(report.titles)}`);

// --- 390 px: every screen lays out without sideways scrolling.
step('390 px');
const phone = await newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
for (const route of ['/signin', '/datasets', `/datasets/${datasetId}`, '/register', '/no/such/page']) {
  await phone.goto(`${base}${route}`);
  await phone.locator('main h1').first().waitFor();
  await phone.waitForTimeout(300);
  const width = await phone.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `${route} is ${width} px wide at 390 px`);
  await screen(phone, `phone${route.replaceAll('/', '-').replace(/-[0-9a-f-]{36}$/, '-dataset')}`);
}

for (const [route, name] of [[`/api/collections/${datasetId}`, 'phone-ogc-collection'], [`/api/collections/${datasetId}/items`, 'phone-ogc-items']]) {
  await phone.goto(`${base}${route}`);
  await phone.locator('main h1').waitFor();
  const width = await phone.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `${route} is ${width} px wide at 390 px`);
  await screen(phone, name);
}

// Signed in, the screens with forms lay out at 390 px too. The menu folds
// behind one button, which opens it; the filters fold behind theirs, above the results.
const phoneAdmin = await signedIn(admin, adminPassword, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
await phoneAdmin.goto(`${base}/datasets`);
await phoneAdmin.getByRole('heading', { name: 'Datasets' }).waitFor();
const header = await phoneAdmin.locator('header .top').boundingBox();
assert.ok(header.height <= 64, `the folded menu bar takes ${header.height} px`);
assert.ok(!(await phoneAdmin.getByRole('navigation', { name: 'Main' }).isVisible()), 'the menu is folded');
await phoneAdmin.getByRole('button', { name: 'Menu' }).click();
await phoneAdmin.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Maps' }).waitFor();
assert.equal(await phoneAdmin.getByRole('button', { name: 'Menu' }).getAttribute('aria-expanded'), 'true');
await screen(phoneAdmin, 'phone-menu');
await phoneAdmin.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Datasets' }).click();
assert.ok(!(await phoneAdmin.getByRole('navigation', { name: 'Main' }).isVisible()), 'the menu folds after a choice');
assert.ok(!(await phoneAdmin.getByRole('complementary', { name: 'Filters' }).isVisible()), 'the filters are folded behind their button');
const [results, filtersButton] = await Promise.all([phoneAdmin.locator('.cards').boundingBox(), phoneAdmin.getByRole('button', { name: 'Filters', exact: true }).boundingBox()]);
assert.ok(filtersButton.y < results.y, 'the Filters button comes before the results');
for (const [route, name, ready] of [
  ['/admin/quotas', 'phone-admin-quotas', 'Dataset cap of newcomer'],
  ['/admin/notifications', 'phone-admin-notifications', 'Webhook URL'],
  ['/admin/banner', 'phone-admin-banner', null],
  ['/upload', 'phone-upload', 'Service URL'],
  [`/maps/${reliefId}`, 'phone-map-editor', 'Basemap tone'],
]) {
  await phoneAdmin.goto(`${base}${route}`);
  await phoneAdmin.locator('main h1').first().waitFor();
  if (ready) await phoneAdmin.getByLabel(ready).waitFor();
  await phoneAdmin.waitForTimeout(300);
  const width = await phoneAdmin.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `${route} is ${width} px wide at 390 px`);
  await screen(phoneAdmin, name);
}

// --- A file of several layers loaded whole (the chooser off): each dataset it made is named.
step('upload results');
const uploader = await signedIn(admin, adminPassword);
await uploader.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Upload' }).click();
await uploader.getByLabel(/^Choose the layers of GeoPackages and zips/).uncheck();
await uploader.getByLabel('Files to upload').setInputFiles(env('CATALOG_TWO_LAYERS'));
await uploader.getByText('2 layers loaded; each became a dataset:').waitFor({ timeout: 120_000 });
const madeLinks = await uploader.getByRole('list').filter({ hasText: /^Open / }).getByRole('link').allInnerTexts();
assert.ok(madeLinks.length === 2 && madeLinks.some((t) => /countries/.test(t)) && madeLinks.some((t) => /capitals/.test(t)),
  `each dataset is named by its layer: ${madeLinks.join(', ')}`);
await screen(uploader, 'upload-results');

for (const p of [page, visitor, sso, phone, ogc, owner, reader, phoneAdmin, uploader]) {
  assert.deepEqual(p.seen.foreign, [], 'nothing is fetched from another site');
  assert.deepEqual(p.seen.errors.filter((e) => !/status of 4[0-9][0-9]/.test(e)), [], 'no script errors');
}
await browser.close();
// Kept beside the screenshots for review: steps, timings, every axe-core finding.
fs.writeFileSync(path.join(shots, 'report.json'), JSON.stringify(report, null, 1));
console.log(JSON.stringify(report));
