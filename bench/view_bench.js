// Page size and time to first full render of `gwr view`'s page in headless chromium.
//   node bench/view_bench.js GWR BENCH_ONNX [WORKDIR] [--only NAME] [--runs N]
// Models: a real ~500-layer CNN from the real-model cache (ppocr-cls, PaddleOCR's MobileNetV3
// direction classifier, 566 nodes) when present, else a generated decoder of about as many; the 1,000-block decoder
// (`bench_onnx gen-gpt 1000 32 FILE --static`); a ~4,500-block decoder (~200k gwr layers, its
// weights counted) that opens collapsed. For each: `gwr view MODEL -o FILE.html` (its time), the
// file's size, then in Debian's chromium (headless, playwright-core) the page's own figure
// (#status data-ms: performance.now() two animation frames after the first full render, i.e. from
// the start of navigation, parsing of the inlined data and the layout included) and the wall time
// from page.goto to #status[data-rendered="1"] seen by the driver; the median of --runs (default 3)
// fresh pages. For the collapsed ones also the time of a search for a layer deep inside (expanding
// the groups that hold it) as the "usable" figure.
'use strict';
const path = require('path');
const fs = require('fs');
const { execFileSync } = require('child_process');

const args = process.argv.slice(2);
const opt = (name, def) => { const i = args.indexOf(name); if (i < 0) return def; const v = args[i + 1]; args.splice(i, 2); return v; };
const ONLY = opt('--only', null), RUNS = +opt('--runs', '3');
const [GWR, BENCH_ONNX, WORK = '/tmp/gwr-view-bench'] = args;
if (!GWR || !BENCH_ONNX) { console.error('usage: view_bench.js GWR BENCH_ONNX [WORKDIR] [--only NAME] [--runs N]'); process.exit(2); }
const { chromium } = require(path.resolve(__dirname, '..', 'node_modules', 'playwright-core'));
fs.mkdirSync(WORK, { recursive: true });
const run = (cmd, a) => execFileSync(cmd, a, { cwd: WORK, encoding: 'utf8', maxBuffer: 1 << 28 });
const CNN = '/work/wt/real/bench/real/cache/models/ppocr-cls.onnx';

const cases = [
  { name: 'cnn', what: fs.existsSync(CNN) ? 'ppocr-cls (real CNN)' : 'decoder, 19 blocks (no CNN cached)', make: (f) => fs.existsSync(CNN) ? fs.copyFileSync(CNN, f) : run(BENCH_ONNX, ['gen-gpt', '19', '32', f, '--static']) },
  { name: 'gpt1000', what: 'decoder, 1,000 blocks', make: (f) => run(BENCH_ONNX, ['gen-gpt', '1000', '32', f, '--static']), search: true },
  { name: 'gpt4500', what: 'decoder, 4,500 blocks', make: (f) => run(BENCH_ONNX, ['gen-gpt', '4500', '32', f, '--static']), search: true },
].filter((c) => !ONLY || c.name === ONLY);

const median = (xs) => { const s = xs.slice().sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

(async () => {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'], headless: true });
  const rows = [];
  console.log('how: gwr view MODEL -o FILE.html; the file\'s size; ' + RUNS + ' fresh 1200x800 pages of /usr/bin/chromium headless (playwright-core ' +
    require(path.resolve(__dirname, '..', 'node_modules', 'playwright-core', 'package.json')).version + ', ' + browser.version() + '): #status data-ms (performance.now() two animation frames after the first full render, from navigation start) and the wall time from page.goto to #status[data-rendered="1"], medians');
  for (const c of cases) {
    const onnx = path.join(WORK, c.name + '.onnx'), html = path.join(WORK, c.name + '.html');
    if (!fs.existsSync(onnx)) c.make(onnx);
    const t0 = Date.now();
    run(GWR, ['view', onnx, '-o', html]);
    const writeMs = Date.now() - t0;
    const bytes = fs.statSync(html).size;
    const pageMs = [], wallMs = [], searchMs = [];
    let layers = '', shown = 0, groups = 0, usedJsHeap = 0;
    for (let r = 0; r < RUNS; r++) {
      const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
      const w0 = Date.now();
      await page.goto('file://' + html, { timeout: 120000 });
      await page.waitForSelector('#status[data-rendered="1"]', { timeout: 120000 });
      wallMs.push(Date.now() - w0);
      pageMs.push(+(await page.getAttribute('#status', 'data-ms')));
      layers = (await page.textContent('#status')).trim();
      shown = await page.$$eval('.gwr-node', (e) => e.length);
      groups = await page.$$eval('.gwr-group.collapsed', (e) => e.length);
      usedJsHeap = await page.evaluate(() => (performance.memory ? performance.memory.usedJSHeapSize : 0));
      if (c.search) {
        // a layer about 3/4 down the topological order, by its name
        const name = await page.evaluate(() => { const L = window.gwrView.data.models[0].layers; return L[Math.floor(L.length * 0.75)].name; });
        const s0 = Date.now();
        await page.fill('#search', name);
        await page.press('#search', 'Enter');
        await page.waitForSelector('.gwr-node.gwr-match[data-name="' + name + '"]', { timeout: 60000 });
        searchMs.push(Date.now() - s0);
      }
      await page.close();
    }
    rows.push({ name: c.name, what: c.what, layers, bytes, writeMs, pageMs: median(pageMs), wallMs: median(wallMs), searchMs: searchMs.length ? median(searchMs) : null, shown, groups, heapMB: usedJsHeap / 1048576, all: pageMs });
    const r = rows[rows.length - 1];
    console.log(`${r.name}: ${r.what}, ${r.layers}, page ${(r.bytes / 1048576).toFixed(2)} MiB (gwr view ${r.writeMs} ms); first full render ${r.pageMs} ms (page's data-ms, runs ${r.all.join(' ')}), ${r.wallMs} ms wall from goto; ${r.shown} layer elements, ${r.groups} collapsed groups shown; JS heap ${r.heapMB.toFixed(0)} MiB` + (r.searchMs != null ? `; search + expand to a deep layer ${r.searchMs} ms` : ''));
  }
  await browser.close();
  console.log('\n| model | layers | page size | first full render (data-ms) | wall, goto to rendered | search + expand |');
  console.log('|---|---|---|---|---|---|');
  rows.forEach((r) => console.log(`| ${r.what} | ${r.layers.replace(' layers', '')} | ${(r.bytes / 1048576).toFixed(2)} MiB | ${(r.pageMs / 1000).toFixed(2)} s | ${(r.wallMs / 1000).toFixed(2)} s | ${r.searchMs != null ? (r.searchMs / 1000).toFixed(2) + ' s' : '-'} |`));
})().catch((e) => { console.error(e); process.exit(1); });
