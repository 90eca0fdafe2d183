#!/usr/bin/env node
// ort_models.js LIST: onnxruntime-node as the independent judge of
// optimized models, many in one process. LIST has one line per check,
// `ORIGINAL OPTIMIZED ATOL RTOL` (# comments): both models run on
// onnxruntime (graph optimizations disabled, so each graph runs as written;
// one thread) with the same seeded inputs, made here from ORIGINAL's
// declared input shapes (floats uniform in [-1, 1), integers in [0, 3],
// a fixed xorshift generator per original), and every output of OPTIMIZED
// must be within |a - b| <= ATOL + RTOL * |b| of ORIGINAL's (matched by
// name; NaN matches NaN). Then OPTIMIZED runs again with onnxruntime's own
// optimizations at 'all' (its fusions and layouts on top of gwr's), within
// 1e-4 + 1e-3|b| (its kernels round differently): gwr's output must be
// something onnxruntime can still optimize. Each original runs once,
// however many optimized models it is compared with.
// Prints one line per check, then `N passed, M failed`; exit 1 on a failure.
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { readModelInterface } = require('../conformance/ort_compare.js');

const OPTS = { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1, interOpNumThreads: 1, logSeverityLevel: 3 };
const ELEM = { 1: 'float32', 6: 'int32', 7: 'int64', 9: 'bool', 11: 'float64' };

function feedsFor(file) {
  let s = 0x9e3779b97f4a7c15n;
  const next = () => { // xorshift64*, as gwr_value_random's generator kind
    s ^= s >> 12n; s ^= (s << 25n) & 0xffffffffffffffffn; s ^= s >> 27n;
    return Number(((s * 0x2545f4914f6cdd1dn) & 0xffffffffffffffffn) >> 11n) / 2 ** 53;
  };
  const feeds = {};
  for (const vi of readModelInterface(file).feeds) {
    const type = ELEM[vi.type.elem];
    if (vi.type.kind !== 'tensor' || !type) throw new Error(`input '${vi.name}': no random data for this type`);
    const dims = (vi.type.dims || []).map((d) => (typeof d === 'number' && d >= 0 ? d : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    let data;
    if (type === 'float32' || type === 'float64') {
      data = new (type === 'float32' ? Float32Array : Float64Array)(n);
      for (let i = 0; i < n; i++) data[i] = next() * 2 - 1;
    } else if (type === 'int64') {
      data = new BigInt64Array(n);
      for (let i = 0; i < n; i++) data[i] = BigInt(Math.floor(next() * 4));
    } else {
      data = type === 'bool' ? new Uint8Array(n) : new Int32Array(n);
      for (let i = 0; i < n; i++) data[i] = Math.floor(next() * (type === 'bool' ? 2 : 4));
    }
    feeds[vi.name] = new ort.Tensor(type, data, dims);
  }
  return feeds;
}

async function run(file, feeds, level = 'disabled') {
  const sess = await ort.InferenceSession.create(file, { ...OPTS, graphOptimizationLevel: level });
  try {
    const res = await sess.run(feeds);
    const out = {};
    for (const k of sess.outputNames) out[k] = res[k];
    return out;
  } finally {
    if (sess.release) await sess.release();
  }
}

// null when every output agrees, else why not
function compare(want, got, atol, rtol) {
  const names = Object.keys(want);
  if (Object.keys(got).length !== names.length) return `${Object.keys(got).length} outputs, the original has ${names.length}`;
  let worst = 0, worstName = '';
  for (const k of names) {
    const a = got[k], b = want[k];
    if (!a) return `no output '${k}'`;
    if (a.type !== b.type || a.dims.join(',') !== b.dims.join(',')) return `output '${k}': ${a.type}[${a.dims}] against ${b.type}[${b.dims}]`;
    for (let i = 0; i < b.data.length; i++) {
      const x = Number(a.data[i]), y = Number(b.data[i]);
      if (Number.isNaN(x) && Number.isNaN(y)) continue;
      const d = Math.abs(x - y);
      if (!(d <= atol + rtol * Math.abs(y))) return `output '${k}'[${i}]: ${x} against ${y}`;
      if (d > worst) worst = d, worstName = k;
    }
  }
  return { worst, worstName };
}

(async () => {
  const list = process.argv[2];
  if (!list) { console.error('usage: node ort_models.js LIST'); process.exit(2); }
  const checks = fs.readFileSync(list, 'utf8').split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean)
    .map((l) => { const [orig, opt, atol, rtol] = l.split(/\s+/); return { orig, opt, atol: Number(atol), rtol: Number(rtol) }; });
  const wants = new Map();
  let pass = 0, fail = 0;
  for (const c of checks) {
    let why;
    try {
      if (!wants.has(c.orig)) {
        const feeds = feedsFor(c.orig);
        wants.set(c.orig, { feeds, out: await run(c.orig, feeds) });
      }
      const w = wants.get(c.orig);
      why = compare(w.out, await run(c.opt, w.feeds), c.atol, c.rtol);
      if (typeof why !== 'string') {
        const all = compare(w.out, await run(c.opt, w.feeds, 'all'), 1e-4, 1e-3);
        if (typeof all === 'string') why = `with onnxruntime's optimizations at 'all': ${all}`;
      }
    } catch (e) {
      why = `onnxruntime: ${String(e.message || e).split('\n')[0]}`;
    }
    if (typeof why === 'string') {
      fail++;
      console.log(`FAIL ${path.basename(c.opt)}: ${why}`);
    } else {
      pass++;
      console.log(`ok ${path.basename(c.opt)}: max abs difference ${why.worst.toExponential(2)}${why.worstName ? ` ('${why.worstName}')` : ''}`);
    }
  }
  console.log(`${pass} passed, ${fail} failed`);
  process.exit(fail ? 1 : 0);
})().catch((e) => { console.error('ort_models:', e.message); process.exit(1); });
