// Browser tests of `gwr view`'s page (tools/view/*): Debian's chromium, headless, driven by npm
// playwright-core (never a downloaded browser). Usage:
//   node tests/view/view_test.js GWR BENCH_ONNX OUTDIR [DOCS_IMG_DIR]
// Models: `gwr demo`'s decoder, its rewrite by the demo's three patterns with --trace-json, a
// profile of it (`gwr run --profile`), and a generated decoder of ~6,800 layers (bench_onnx
// gen-gpt 100, ~4,500 layers) for the collapsed start. Expected values come from the models themselves, read by
// the onnx package (tests/view/onnx_facts.py: gwr's layers are the nodes and the initializers, each
// initializer a Constant layer of its name), and from the trace, never from the page.
// Screenshots of each view go to OUTDIR (and, with DOCS_IMG_DIR, the docs' pictures there).
'use strict';
const path = require('path');
const fs = require('fs');
const { execFileSync } = require('child_process');

const [GWR, BENCH_ONNX, OUT, DOCS] = process.argv.slice(2);
if (!GWR || !BENCH_ONNX || !OUT) { console.error('usage: view_test.js GWR BENCH_ONNX OUTDIR [DOCS_IMG_DIR]'); process.exit(2); }
const ROOT = path.resolve(__dirname, '..', '..');
const CHROMIUM = '/usr/bin/chromium';
let chromium;
try { ({ chromium } = require(path.join(ROOT, 'node_modules', 'playwright-core'))); } catch (e) {
  console.log('SKIP: node_modules/playwright-core is missing'); process.exit(77);
}
if (!fs.existsSync(CHROMIUM)) { console.log('SKIP: ' + CHROMIUM + ' is missing'); process.exit(77); }

const W = path.join(OUT, 'view-work');
fs.mkdirSync(W, { recursive: true });
const run = (cmd, args, opts) => execFileSync(cmd, args, Object.assign({ cwd: W, encoding: 'utf8', maxBuffer: 1 << 28 }, opts || {}));
const facts = (f) => JSON.parse(run('/usr/bin/python3', [path.join(__dirname, 'onnx_facts.py'), f]));

let failures = 0, checks = 0;
function check(cond, what) {
  checks++;
  if (cond) console.log('ok   ' + what);
  else { failures++; console.log('FAIL ' + what); }
}
function sameSet(a, b) { const A = new Set(a), B = new Set(b); return A.size === B.size && [...A].every((x) => B.has(x)); }
function showDiff(a, b) {
  const A = new Set(a), B = new Set(b);
  return 'only shown: [' + [...A].filter((x) => !B.has(x)).join(', ') + '] only expected: [' + [...B].filter((x) => !A.has(x)).join(', ') + ']';
}

// ---- the inputs ----
run(GWR, ['demo', '--dir', W]);
const PATTERNS = ['--pattern', 'fuse_attention_with_bias', '--pattern', 'gpt_attention_remove_padding', '--pattern', 'replace_add_with_sub',
  '--arg', 'batch_size=2', '--arg', 'in_len=16', '--arg', 'hidden_size=192'];
const traceText = run(GWR, ['rewrite', 'demo.onnx', ...PATTERNS, '--trace-json', '-o', 'demo.rw.onnx']);
const trace = traceText.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((e) => e.event === 'rewrite');
fs.writeFileSync(path.join(W, 'trace.jsonl'), trace.map((e) => JSON.stringify(e)).join('\n') + '\n');
run(GWR, ['run', 'demo.onnx', '--random', '1', '--no-optimize', '--repeat', '3', '--profile', 'prof.json']);
run(BENCH_ONNX, ['gen-gpt', '100', '32', 'big.onnx', '--static']);
run('/usr/bin/python3', [path.join(__dirname, 'make_if.py'), 'if.onnx']);

run(GWR, ['view', 'demo.onnx', '-o', 'one.html']);
run(GWR, ['view', 'demo.onnx', 'demo.rw.onnx', '--trace', 'trace.jsonl', '-o', 'diff.html']);
run(GWR, ['view', 'demo.onnx', '--profile', 'prof.json', '-o', 'prof.html']);
run(GWR, ['view', 'big.onnx', '-o', 'big.html']);
run(GWR, ['view', 'if.onnx', '-o', 'if.html']);

const demo = facts(path.join(W, 'demo.onnx'));
const demoRw = facts(path.join(W, 'demo.rw.onnx'));
const big = facts(path.join(W, 'big.onnx'));

(async () => {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], headless: true });
  async function open(file) {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    // record the size of every dagre layout (the page's dagre is a global assigned by its script)
    await page.addInitScript(() => {
      let d;
      window.gwrLayoutSizes = [];
      Object.defineProperty(window, 'dagre', {
        configurable: true,
        get: () => d,
        set: (v) => {                  // the module's exports are getters: copy them, wrap layout
          d = Object.assign({}, v);
          d.layout = (g, o) => { window.gwrLayoutSizes.push(g.nodeCount()); return v.layout(g, o); };
        },
      });
    });
    const requests = [], errors = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('pageerror', (e) => errors.push(e.message));
    const url = 'file://' + path.join(W, file);
    await page.goto(url);
    await page.waitForSelector('#status[data-rendered="1"]', { timeout: 60000 });
    page.gwrCheckClean = (what) => {
      check(errors.length === 0, what + ': no script error' + (errors.length ? ' (' + errors.join('; ') + ')' : ''));
      check(requests.length === 1 && requests[0] === url, what + ': the page loads no resource but itself (' + requests.length + ' requests' + (requests.length > 1 ? ': ' + requests.slice(1, 4).join(' ') : '') + ')');
    };
    return page;
  }
  async function shot(page, name, docName) {
    await page.screenshot({ path: path.join(OUT, name) });
    if (DOCS && docName) await page.screenshot({ path: path.join(DOCS, docName) });
  }
  const nodeNames = (page, model) => page.$$eval('.gwr-node[data-model="' + model + '"]:not([data-body])', (els) => els.map((e) => e.getAttribute('data-name')));

  // ---- one model: count, names as text, search, details ----
  {
    const page = await open('one.html');
    const names = await nodeNames(page, 0);
    check(names.length === demo.count, 'demo: ' + names.length + ' layer elements, the model has ' + demo.nodes.length + ' nodes and ' + demo.weights.length + ' initializers');
    check(sameSet(names, demo.layers), 'demo: the layer elements are the model\'s nodes and initializers ' + showDiff(names, demo.layers));
    const status = await page.textContent('#status');
    check(status.trim() === demo.count + ' layers', 'demo: #status says "' + status.trim() + '"');
    const text = await page.$eval('#panes', (e) => e.innerText);
    check(demo.layers.every((n) => text.includes(n)), 'demo: every layer name is text of the page (the browser\'s find sees it)');

    const target = demo.nodes[Math.floor(demo.nodes.length * 2 / 3)];
    await page.fill('#search', target.name);
    await page.press('#search', 'Enter');
    const sel = '.gwr-node[data-model="0"][data-name="' + target.name + '"]';
    await page.waitForSelector(sel + '.gwr-match', { timeout: 5000 }).catch(() => null);
    check(await page.$(sel + '.gwr-match') !== null, 'demo: search "' + target.name + '" highlights it');
    const inView = await page.$eval(sel, (e) => { const r = e.getBoundingClientRect(), p = e.closest('.gwr-pane').getBoundingClientRect(); return r.right > p.left && r.left < p.right && r.bottom > p.top && r.top < p.bottom; });
    check(inView, 'demo: search scrolls the match into the pane');
    await page.fill('#search', '');
    await page.press('#search', 'Enter');

    const withAttrs = demo.nodes.find((n) => Object.keys(n.attrs).some((k) => typeof n.attrs[k] === 'string'));
    await page.click('.gwr-node[data-model="0"][data-name="' + withAttrs.name + '"]');
    const det = await page.$eval('#details', (e) => e.innerText);
    check(det.includes(withAttrs.name) && det.includes(withAttrs.op), 'details: ' + withAttrs.name + ' with its op');
    for (const [k, v] of Object.entries(withAttrs.attrs)) {
      if (typeof v !== 'string') continue;
      const row = await page.$$eval('#details tr', (trs, k) => trs.filter((tr) => tr.cells[0] && tr.cells[0].innerText.trim() === k).map((tr) => tr.cells[1].innerText.trim()), k);
      check(row.length > 0 && row[0].includes(v), 'details: attribute ' + k + ' = ' + v + ' (shown: ' + row[0] + ')');
    }
    check(/params/.test(det) && /FLOPs/.test(det) && /Inputs/.test(det) && /Users/.test(det), 'details: params, FLOPs, inputs and users');
    // zoom by the wheel about the pointer, pan by dragging
    const scale = () => page.$eval('.gwr-world', (e) => +(/scale\(([0-9.e-]+)\)/.exec(e.style.transform) || [0, 0])[1]);
    const pane = await page.$eval('.gwr-pane', (e) => { const r = e.getBoundingClientRect(); return { x: r.x + r.width / 2, y: r.y + r.height / 2 }; });
    const z0 = await scale();
    await page.mouse.move(pane.x, pane.y);
    await page.mouse.wheel(0, -400);
    await page.waitForTimeout(100);
    const z1 = await scale();
    check(z1 > z0 * 1.5, 'zoom: the wheel zooms in (' + z0 + ' -> ' + z1 + ')');
    const top0 = await page.$eval('.gwr-pane', (e) => e.scrollTop);
    await page.mouse.move(pane.x, pane.y);
    await page.mouse.down();
    await page.mouse.move(pane.x - 30, pane.y - 200, { steps: 8 });
    await page.mouse.up();
    const top1 = await page.$eval('.gwr-pane', (e) => e.scrollTop);
    check(top1 >= top0 + 150, 'pan: dragging up by 200 px scrolls down (' + top0 + ' -> ' + top1 + ')');
    await shot(page, 'view-one.png');
    page.gwrCheckClean('demo');
    await page.close();
  }

  // ---- two models and the trace: diff colours, trace list ----
  {
    const page = await open('diff.html');
    const removedByTrace = new Set(trace.flatMap((e) => e.removed));
    const addedByTrace = new Set(trace.flatMap((e) => e.added));
    const expRemoved = demo.layers.filter((n) => removedByTrace.has(n));
    const expAdded = demoRw.layers.filter((n) => addedByTrace.has(n));
    check(expRemoved.length > 0 && expAdded.length > 0, 'diff: the trace removes ' + expRemoved.length + ' and adds ' + expAdded.length + ' layers of the models');
    const shownRemoved = await page.$$eval('.gwr-node.gwr-removed', (els) => els.map((e) => e.getAttribute('data-model') + ':' + e.getAttribute('data-name')));
    const shownAdded = await page.$$eval('.gwr-node.gwr-added', (els) => els.map((e) => e.getAttribute('data-model') + ':' + e.getAttribute('data-name')));
    check(sameSet(shownRemoved, expRemoved.map((n) => '0:' + n)), 'diff: red = exactly the layers of model 0 the trace removes ' + showDiff(shownRemoved, expRemoved.map((n) => '0:' + n)));
    check(sameSet(shownAdded, expAdded.map((n) => '1:' + n)), 'diff: green = exactly the layers of model 1 the trace adds ' + showDiff(shownAdded, expAdded.map((n) => '1:' + n)));
    const names1 = await nodeNames(page, 1);
    check(names1.length === demoRw.count, 'diff: model 1 shows ' + names1.length + ' layers, it has ' + demoRw.count);
    const seqs = await page.$$eval('#trace-list li[data-seq]', (els) => els.map((e) => +e.getAttribute('data-seq')));
    check(sameSet(seqs, trace.map((e) => e.seq)), 'diff: the trace list holds the ' + trace.length + ' rewrites');
    const r = trace.find((e) => e.removed.some((n) => demo.layers.includes(n)) && e.added.some((n) => demoRw.layers.includes(n)));
    await page.click('#trace-list li[data-seq="' + r.seq + '"]');
    const hl = await page.$$eval('.gwr-node.gwr-hl', (els) => els.map((e) => e.getAttribute('data-model') + ':' + e.getAttribute('data-name')));
    const expHl = r.removed.filter((n) => demo.layers.includes(n)).map((n) => '0:' + n)
      .concat(r.added.filter((n) => demoRw.layers.includes(n)).map((n) => '1:' + n));
    check(sameSet(hl, expHl), 'diff: a click on rewrite #' + r.seq + ' highlights what it removed and added ' + showDiff(hl, expHl));
    await shot(page, 'view-diff.png', 'view_diff.png');
    await page.click('#overlay');
    await page.waitForTimeout(200);
    const ov = await page.$$eval('.gwr-pane-wrap', (els) => els.filter((e) => e.style.display !== 'none').map((e) => e.querySelectorAll('.gwr-node').length));
    check(ov.length === 1 && ov[0] === demoRw.count + expRemoved.length, 'overlay: one pane of model 1\'s ' + demoRw.count + ' layers and the ' + expRemoved.length + ' removed (shows ' + ov + ')');
    await shot(page, 'view-overlay.png', 'view_overlay.png');
    page.gwrCheckClean('diff');
    await page.close();
  }

  // ---- a profile: every profiled layer coloured by its time ----
  {
    const page = await open('prof.html');
    const ev = JSON.parse(fs.readFileSync(path.join(W, 'prof.json'), 'utf8')).traceEvents.filter((e) => e.cat === 'layer' && (e.args || {}).depth === 0);
    const us = {};
    ev.forEach((e) => { us[e.name] = (us[e.name] || 0) + e.dur; });
    check(Object.keys(us).every((n) => demo.layers.includes(n)), 'profile: the profile names layers of the model');
    const shown = await page.$$eval('.gwr-node[data-model="0"][data-us]', (els) => els.map((e) => [e.getAttribute('data-name'), +e.getAttribute('data-us'), e.style.background]));
    check(sameSet(shown.map((s) => s[0]), Object.keys(us)), 'profile: the ' + Object.keys(us).length + ' profiled layers are coloured ' + showDiff(shown.map((s) => s[0]), Object.keys(us)));
    check(shown.every((s) => Math.abs(s[1] - us[s[0]]) <= 0.01 * us[s[0]] + 0.01 && s[2] !== ''), 'profile: each one\'s time is the sum of its events');
    check(await page.$('#legend .gwr-scale') !== null, 'profile: a legend');
    const hottest = Object.keys(us).sort((a, b) => us[b] - us[a])[0];
    await page.click('#top-layers a');
    const pdet = await page.$eval('#details', (e) => e.innerText);
    check(pdet.includes(hottest) && /time/.test(pdet), 'profile: the first of the costliest layers is ' + hottest + ', its details show its time');
    await shot(page, 'view-profile.png', 'view_profile.png');
    page.gwrCheckClean('profile');
    await page.close();
  }

  // ---- a large model opens collapsed; search expands the groups holding the match ----
  {
    const page = await open('big.html');
    const status = (await page.textContent('#status')).trim();
    check(big.count > 3000 && status === big.count + ' layers', 'big: #status "' + status + '" for ' + big.nodes.length + ' nodes and ' + big.weights.length + ' initializers');
    const shownNodes = await page.$$eval('.gwr-node', (els) => els.length);
    const groups = await page.$$eval('.gwr-group.collapsed', (els) => els.length);
    check(shownNodes < 300 && groups > 0, 'big: opens collapsed (' + shownNodes + ' layer elements, ' + groups + ' collapsed groups)');
    const deep = big.nodes[Math.floor(big.nodes.length * 0.77)];
    await page.fill('#search', deep.name);
    await page.press('#search', 'Enter');
    const sel = '.gwr-node[data-name="' + deep.name + '"].gwr-match';
    await page.waitForSelector(sel, { timeout: 10000 }).catch(() => null);
    check(await page.$(sel) !== null, 'big: search "' + deep.name + '" expands the groups holding it');
    const sizes = await page.evaluate(() => window.gwrLayoutSizes);
    check(sizes.length > 1 && Math.max(...sizes) <= 200, 'big: ' + sizes.length + ' dagre layouts, the largest of ' + Math.max(...sizes) + ' nodes (at most 200)');
    await shot(page, 'view-big.png');
    page.gwrCheckClean('big');
    await page.close();
  }
  // ---- provenance (gwr rewrite --provenance, when this gwr has it): a click on a layer a rewrite
  // made shows its chain: every rule on the way and the original layers, computed from the trace ----
  {
    let made = null;
    try { run(GWR, ['rewrite', 'demo.onnx', ...PATTERNS, '--provenance', '-o', 'demo.prov.onnx'], { stdio: 'pipe' }); made = true; } catch (e) { made = false; }
    if (!made) console.log('skip provenance: this gwr has no rewrite --provenance');
    else {
      run(GWR, ['view', 'demo.prov.onnx', '-o', 'prov.html']);
      const addedBy = new Map();
      trace.forEach((e) => e.added.forEach((n) => addedBy.set(n, e)));
      const chain = (n, rules, leaves) => {          // n was added by addedBy.get(n)
        const e = addedBy.get(n);
        rules.add(e.label);
        e.removed.forEach((r) => (addedBy.has(r) && addedBy.get(r).seq < e.seq ? chain(r, rules, leaves) : leaves.add(r)));
      };
      const page = await open('prov.html');
      for (const name of ['GPTAttention_59', 'Sub_62']) {
        const rules = new Set(), leaves = new Set();
        chain(name, rules, leaves);
        await page.click('.gwr-node[data-model="0"][data-name="' + name + '"]');
        const tree = await page.$eval('#details .gwr-prov', (e) => e.innerText).catch(() => '');
        const missing = [...rules, ...leaves].filter((x) => !tree.includes(x));
        check(tree !== '' && missing.length === 0, 'provenance of ' + name + ': rules ' + [...rules].join(', ') + ' from ' + [...leaves].join(', ') + (missing.length ? ' (missing ' + missing.join(', ') + ')' : ''));
      }
      await shot(page, 'view-provenance.png', 'view_provenance.png');
      page.gwrCheckClean('provenance');
      await page.close();
    }
  }

  // ---- If bodies: open at the start (small model), closed by their title, opened by a double click ----
  {
    const page = await open('if.html');
    const bodyNames = ['then_neg', 'then_relu', 'else_abs'];
    const inBodies = () => page.$$eval('.gwr-node[data-body]', (els) => els.map((e) => e.getAttribute('data-name')));
    check(sameSet(await inBodies(), bodyNames), 'if: the bodies\' layers are shown (' + (await inBodies()).join(' ') + ')');
    await page.click('.gwr-node[data-name="the_if"] > .gwr-ghead');
    check((await inBodies()).length === 0, 'if: a click on the If\'s title closes its bodies');
    await page.dblclick('.gwr-node[data-name="the_if"]');
    check(sameSet(await inBodies(), bodyNames), 'if: a double click opens them again');
    await shot(page, 'view-if.png');
    page.gwrCheckClean('if');
    await page.close();
  }
  await browser.close();
  console.log(failures ? failures + ' of ' + checks + ' checks FAILED' : 'all ' + checks + ' checks passed');
  process.exit(failures ? 1 : 0);
})().catch((e) => { console.error(e); process.exit(1); });
