// Renders a style exported by the service in MapLibre GL JS, in headless
// Chromium, from a page on its own origin (so every request to the
// service is cross-origin, as for any embedding site). Prints a JSON
// report: whether the map became idle, the errors MapLibre raised, the
// features of one layer it drew, whether terrain is on and the ground's
// height at the map's centre.
//
// usage: node maplibre_render.mjs <style-url> <layer-id> [<embed-token>]
// env:   CATALOG_NODE_MODULES (maplibre-gl, playwright-core), CHROMIUM,
//        CATALOG_SCREENSHOT (optional: where to write a PNG of the map)
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const [styleUrl, layerId, embedToken] = process.argv.slice(2);
const modules = process.env.CATALOG_NODE_MODULES;
// The packages live in the test set-up's own node_modules, not beside this file.
const { chromium } = createRequire(path.join(modules, 'index.js'))('playwright-core');
const dist = path.join(modules, 'maplibre-gl', 'dist');

const page = `<!doctype html><html><head><link rel="stylesheet" href="/maplibre-gl.css"></head>
<body style="margin:0"><div id="map" style="width:512px;height:512px"></div>
<script type="module">
import { Map } from '/maplibre-gl.mjs';
const params = new URLSearchParams(location.search);
const styleUrl = params.get('style');
const token = params.get('embed');
const origin = new URL(styleUrl).origin;
window.report = { errors: [], idle: false };
const map = new Map({
  container: 'map',
  style: styleUrl,
  transformRequest: (url) => (token && url.startsWith(origin) ? { url, headers: { 'X-Embed-Token': token } } : { url }),
});
map.on('error', (e) => window.report.errors.push(String(e.error && e.error.message || e.error || e)));
map.once('idle', () => { window.report.idle = true; });
window.map = map;
</script></body></html>`;

const server = http.createServer((req, res) => {
  const file = new URL(req.url, 'http://x').pathname;
  if (file === '/') {
    res.writeHead(200, { 'content-type': 'text/html' });
    return res.end(page);
  }
  const local = path.join(dist, path.basename(file));
  if (!fs.existsSync(local)) {
    res.writeHead(404);
    return res.end();
  }
  const type = local.endsWith('.css') ? 'text/css' : 'text/javascript';
  res.writeHead(200, { 'content-type': type });
  fs.createReadStream(local).pipe(res);
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const viewer = `http://127.0.0.1:${server.address().port}/`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--no-first-run'],
});
let report;
try {
  const tab = await browser.newPage();
  const consoleErrors = [];
  tab.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  tab.on('pageerror', (e) => consoleErrors.push(String(e)));
  const query = new URLSearchParams({ style: styleUrl, ...(embedToken ? { embed: embedToken } : {}) });
  await tab.goto(`${viewer}?${query}`);
  // Done when the map is idle, or as soon as MapLibre reports an error.
  await tab
    .waitForFunction(() => window.report && (window.report.idle || window.report.errors.length > 0), null, { timeout: 60000 })
    .catch(() => {});
  report = await tab.evaluate((id) => {
    const r = window.report || { errors: ['no report'], idle: false };
    const features = window.map && window.map.getLayer(id) ? window.map.queryRenderedFeatures({ layers: [id] }) : [];
    const map = window.map;
    const terrain = Boolean(map && map.getTerrain());
    const elevation = terrain ? map.queryTerrainElevation(map.getCenter()) : null;
    return { ...r, rendered: features.length, properties: features.slice(0, 5).map((f) => f.properties), terrain, elevation };
  }, layerId);
  if (process.env.CATALOG_SCREENSHOT) {
    await tab.locator('#map').screenshot({ path: process.env.CATALOG_SCREENSHOT });
  }
  report.console = consoleErrors;
} finally {
  await browser.close();
  server.close();
}
console.log(JSON.stringify(report));
