#!/usr/bin/env node
// ort_compare.js - onnxruntime as the independent executor of the ONNX
// backend test data (Debian libonnx-testdata).
//
// For every test case (a directory holding model.onnx and test_data_set_*/
// with input_*.pb and output_*.pb): run the ORIGINAL model with onnxruntime
// on each data set and compare with the expected outputs (ONNX backend
// tolerances: rtol 1e-3, atol 1e-7, NaN equals NaN). Where onnxruntime
// passes the original, the model gwr exported (OUTDIR/<suite>/<name>/
// model.onnx, written by roundtrip) must pass too. Where onnxruntime runs
// the original but disagrees with the expected outputs, the exported model
// must still give the same outputs as the original did (a differential
// check); that case is counted under "ort cannot run original", not failed.
//
// Usage: node ort_compare.js [--out OUTDIR] [--expected FILE]
//          [--roundtrip-expected FILE] [--original-only] [--jobs N]
//          [--ort-original FILE]
//          (--out repeated: every tree's model against one run of the original)
//          [--timeout SECONDS] [-v] PATH...
// PATH is a case directory, or a directory searched (two levels deep) for
// them; <suite> is the name of a case directory's parent.
//
// Each case runs in a worker process, so a crash or a hang of onnxruntime
// on one model is reported against that model and the run goes on.
//
// Output: one line per failure `FAIL suite/name: reason`, counts, and last
// a line exactly `N passed, M failed`. Exit 0 only when every failure is
// listed in the expected-failures file and no entry there is stale.
'use strict';

const fs = require('fs');
const path = require('path');
const cp = require('child_process');

const RTOL = 1e-3;
const ATOL = 1e-7;

// ---------------------------------------------------------------------------
// Protobuf wire format: just what TensorProto and the parts of ModelProto
// we need use. Varints are read as BigInt where they may pass 2^53.

class Reader {
  constructor(buf, start = 0, end = buf.length) {
    this.buf = buf;
    this.pos = start;
    this.end = end;
  }
  done() { return this.pos >= this.end; }
  varint() { // BigInt, unsigned 64-bit
    let result = 0n, shift = 0n;
    for (;;) {
      if (this.pos >= this.end) throw new Error('truncated varint');
      const b = this.buf[this.pos++];
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
      shift += 7n;
      if (shift > 63n) throw new Error('varint too long');
    }
    return BigInt.asUintN(64, result);
  }
  smallVarint() {
    const v = this.varint();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error('length too large');
    return Number(v);
  }
  // Yields {field, wire, v} where v is a BigInt (wire 0), a Buffer of 8
  // (wire 1) or 4 (wire 5) bytes, or a Buffer (wire 2: length-delimited).
  *fields() {
    while (!this.done()) {
      const key = this.smallVarint();
      const field = Math.floor(key / 8), wire = key & 7;
      let v;
      if (wire === 0) v = this.varint();
      else if (wire === 1 || wire === 5) {
        const n = wire === 1 ? 8 : 4;
        if (this.pos + n > this.end) throw new Error('truncated fixed field');
        v = this.buf.subarray(this.pos, this.pos + n);
        this.pos += n;
      } else if (wire === 2) {
        const n = this.smallVarint();
        if (this.pos + n > this.end) throw new Error('truncated length-delimited field');
        v = this.buf.subarray(this.pos, this.pos + n);
        this.pos += n;
      } else throw new Error(`unsupported wire type ${wire} (field ${field})`);
      yield { field, wire, v };
    }
  }
}

// Repeated scalar field, packed (wire 2) or not: appends to `out` the
// values `one` reads from a Reader (varint) or a Buffer (fixed width).
function repeatedVarints(f, out) {
  if (f.wire === 0) out.push(f.v);
  else if (f.wire === 2) {
    const r = new Reader(f.v);
    while (!r.done()) out.push(r.varint());
  } else throw new Error(`field ${f.field}: wire type ${f.wire} for a varint`);
}
function repeatedFixed(f, width, out) { // pushes Buffers of `width` bytes
  if (f.wire === (width === 4 ? 5 : 1)) out.push(f.v);
  else if (f.wire === 2) {
    if (f.v.length % width) throw new Error(`field ${f.field}: packed length not a multiple of ${width}`);
    for (let i = 0; i < f.v.length; i += width) out.push(f.v.subarray(i, i + width));
  } else throw new Error(`field ${f.field}: wire type ${f.wire} for a fixed${width * 8}`);
}

// TensorProto.DataType -> [ort type name, bytes per element, typed array].
const DT = {
  1: ['float32', 4, Float32Array],
  2: ['uint8', 1, Uint8Array],
  3: ['int8', 1, Int8Array],
  4: ['uint16', 2, Uint16Array],
  5: ['int16', 2, Int16Array],
  6: ['int32', 4, Int32Array],
  7: ['int64', 8, BigInt64Array],
  8: ['string', 0, null],
  9: ['bool', 1, Uint8Array],
  10: ['float16', 2, Uint16Array],
  11: ['float64', 8, Float64Array],
  12: ['uint32', 4, Uint32Array],
  13: ['uint64', 8, BigUint64Array],
};
const DT_NAMES = {
  0: 'undefined', 1: 'float', 2: 'uint8', 3: 'int8', 4: 'uint16', 5: 'int16', 6: 'int32',
  7: 'int64', 8: 'string', 9: 'bool', 10: 'float16', 11: 'double', 12: 'uint32', 13: 'uint64',
  14: 'complex64', 15: 'complex128', 16: 'bfloat16', 17: 'float8e4m3fn', 18: 'float8e4m3fnuz',
  19: 'float8e5m2', 20: 'float8e5m2fnuz', 21: 'uint4', 22: 'int4',
};

class NotComparable extends Error {}

// Decodes a serialized TensorProto into {name, dtype, dims, type, data}
// where type/data are what ort.Tensor takes (typed array, or string[]).
function decodeTensor(buf) {
  let name = '', dtype = 0, raw = null, dataLocation = 0, hasSegment = false;
  const dims = [], f32 = [], i32 = [], i64 = [], u64 = [], f64 = [], strs = [];
  for (const f of new Reader(buf).fields()) {
    switch (f.field) {
      case 1: repeatedVarints(f, dims); break;
      case 2: dtype = Number(BigInt.asIntN(32, f.v)); break;
      case 3: hasSegment = true; break;
      case 4: repeatedFixed(f, 4, f32); break;
      case 5: repeatedVarints(f, i32); break;
      case 6: strs.push(Buffer.from(f.v)); break;
      case 7: repeatedVarints(f, i64); break;
      case 8: name = f.v.toString('utf8'); break;
      case 9: raw = f.v; break;
      case 10: repeatedFixed(f, 8, f64); break;
      case 11: repeatedVarints(f, u64); break;
      case 12: break; // doc_string
      case 13: break; // external_data: checked through data_location
      case 14: dataLocation = Number(f.v); break;
      default: break; // unknown fields are skipped, as protobuf does
    }
  }
  if (hasSegment) throw new Error(`tensor '${name}': segment is not supported`);
  if (dataLocation !== 0) throw new Error(`tensor '${name}': external data is not supported`);
  const shape = dims.map((d) => Number(BigInt.asIntN(64, d)));
  const count = shape.reduce((a, b) => a * b, 1);
  const info = DT[dtype];
  if (!info) throw new NotComparable(`tensor '${name}' has dtype ${DT_NAMES[dtype] || dtype}, which onnxruntime-node cannot take`);
  const [type, width, Arr] = info;
  let data;
  if (type === 'string') {
    if (raw) throw new Error(`tensor '${name}': string tensor with raw_data`);
    data = strs.map((b) => b.toString('utf8'));
  } else if (raw) {
    if (raw.length !== count * width) throw new Error(`tensor '${name}': raw_data has ${raw.length} bytes, shape needs ${count * width}`);
    const ab = new ArrayBuffer(raw.length); // aligned copy
    new Uint8Array(ab).set(raw);
    data = new Arr(ab);
  } else {
    data = new Arr(count);
    let src;
    switch (dtype) {
      case 1: src = f32.map((b) => b.readFloatLE(0)); break;
      case 11: src = f64.map((b) => b.readDoubleLE(0)); break;
      case 7: src = i64.map((v) => BigInt.asIntN(64, v)); break;
      case 12: src = u64.map((v) => Number(BigInt.asUintN(32, v))); break;
      case 13: src = u64.map((v) => BigInt.asUintN(64, v)); break;
      // int32_data holds int32, int16, int8, uint16, uint8, bool and the
      // float16 bits, each as a (sign-extended) int32 varint.
      default: src = i32.map((v) => Number(BigInt.asIntN(32, v))); break;
    }
    if (src.length !== count) throw new Error(`tensor '${name}': ${src.length} values for ${count} elements`);
    for (let i = 0; i < count; i++) data[i] = src[i];
  }
  if (type === 'string' && data.length !== count) throw new Error(`tensor '${name}': ${data.length} strings for ${count} elements`);
  return { name, dtype, dims: shape, type, data };
}

// TypeProto -> {kind, elem, dims} where kind is tensor/sequence/map/optional/
// sparse_tensor (or 'none' when no value is set).
function decodeType(buf) {
  const t = { kind: 'none', elem: 0, dims: null };
  for (const f of new Reader(buf).fields()) {
    if (f.field === 1) {
      t.kind = 'tensor';
      for (const g of new Reader(f.v).fields()) {
        if (g.field === 1) t.elem = Number(g.v);
        else if (g.field === 2) {
          t.dims = [];
          for (const d of new Reader(g.v).fields()) {
            if (d.field !== 1) continue;
            let dim = null;
            for (const e of new Reader(d.v).fields()) {
              if (e.field === 1) dim = Number(BigInt.asIntN(64, e.v));
              else if (e.field === 2) dim = e.v.toString('utf8');
            }
            t.dims.push(dim);
          }
        }
      }
    } else if (f.field === 4) t.kind = 'sequence';
    else if (f.field === 5) t.kind = 'map';
    else if (f.field === 9) t.kind = 'optional';
    else if (f.field === 8) t.kind = 'sparse_tensor';
  }
  return t;
}

// What the runner needs of a ModelProto: graph inputs (minus those an
// initializer feeds), graph outputs, each with its type.
function readModelInterface(file) {
  const buf = fs.readFileSync(file);
  let graph = null;
  for (const f of new Reader(buf).fields()) if (f.field === 7 && f.wire === 2) graph = f.v;
  if (!graph) throw new Error('model has no graph');
  const inputs = [], outputs = [], inits = new Set();
  const valueInfo = (b) => {
    const vi = { name: '', type: { kind: 'none' } };
    for (const f of new Reader(b).fields()) {
      if (f.field === 1) vi.name = f.v.toString('utf8');
      else if (f.field === 2) vi.type = decodeType(f.v);
    }
    return vi;
  };
  for (const f of new Reader(graph).fields()) {
    if (f.field === 11) inputs.push(valueInfo(f.v));
    else if (f.field === 12) outputs.push(valueInfo(f.v));
    else if (f.field === 5) {
      for (const g of new Reader(f.v).fields()) if (g.field === 8) inits.add(g.v.toString('utf8'));
    } else if (f.field === 15) {
      for (const g of new Reader(f.v).fields()) {
        if (g.field !== 1) continue;
        for (const h of new Reader(g.v).fields()) if (h.field === 8) inits.add(h.v.toString('utf8'));
      }
    }
  }
  return { feeds: inputs.filter((i) => !inits.has(i.name)), outputs };
}

// ---------------------------------------------------------------------------
// Test data and comparison.

function numbered(dir, prefix) {
  return fs.readdirSync(dir)
    .map((f) => { const m = new RegExp(`^${prefix}_(\\d+)\\.pb$`).exec(f); return m ? [Number(m[1]), f] : null; })
    .filter(Boolean).sort((a, b) => a[0] - b[0]).map(([, f]) => path.join(dir, f));
}

// [{name, inputs: [{file, tensor}], outputs: [...]}] for a case directory.
function loadDataSets(caseDir, iface) {
  const sets = fs.readdirSync(caseDir).filter((d) => /^test_data_set_\d+$/.test(d))
    .sort((a, b) => Number(a.slice(14)) - Number(b.slice(14)));
  if (!sets.length) throw new NotComparable('no test_data_set_* directory');
  return sets.map((s) => {
    const dir = path.join(caseDir, s);
    const ins = numbered(dir, 'input'), outs = numbered(dir, 'output');
    if (!outs.length) throw new NotComparable(`${s} has no expected outputs`);
    const decode = (files, vis, what) => files.map((file, i) => {
      const vi = vis[i];
      if (!vi) throw new Error(`${s}: ${path.basename(file)} but the model has only ${vis.length} ${what}s`);
      if (vi.type.kind !== 'tensor') throw new NotComparable(`${what} '${vi.name}' is a ${vi.type.kind}, stored as a non-TensorProto`);
      return { file, vi, tensor: decodeTensor(fs.readFileSync(file)) };
    });
    return { name: s, inputs: decode(ins, iface.feeds, 'input'), outputs: decode(outs, iface.outputs, 'output') };
  });
}

function f16ToNumber(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

function toNumbers(type, data) {
  if (type === 'float16' && data instanceof Uint16Array) return Array.from(data, f16ToNumber);
  return Array.from(data, Number);
}

function fmtDims(d) { return `[${d.join(',')}]`; }

// null when `got` (an ort.Tensor) matches `want` (decoded), else a reason.
function compareTensor(label, got, want, rtol = RTOL, atol = ATOL) {
  if (got.type !== want.type) return `${label}: dtype ${got.type}, expected ${want.type}`;
  const gd = Array.from(got.dims, Number);
  if (gd.length !== want.dims.length || gd.some((d, i) => d !== want.dims[i]))
    return `${label}: shape ${fmtDims(gd)}, expected ${fmtDims(want.dims)}`;
  if (got.data.length !== want.data.length) return `${label}: ${got.data.length} elements, expected ${want.data.length}`;
  if (want.type === 'string' || want.type === 'bool') {
    for (let i = 0; i < want.data.length; i++)
      if (String(got.data[i]) !== String(want.data[i]))
        return `${label}[${i}]: ${JSON.stringify(String(got.data[i]))}, expected ${JSON.stringify(String(want.data[i]))}`;
    return null;
  }
  const g = toNumbers(got.type, got.data), w = toNumbers(want.type, want.data);
  let bad = 0, first = -1, worst = 0;
  for (let i = 0; i < w.length; i++) {
    const a = g[i], b = w[i];
    if (Number.isNaN(a) && Number.isNaN(b)) continue;
    if (a === b) continue; // also equal infinities
    const err = Math.abs(a - b);
    if (!(err <= atol + rtol * Math.abs(b))) {
      if (first < 0) first = i;
      bad++;
      if (!(err <= worst)) worst = err;
    }
  }
  if (!bad) return null;
  return `${label}: ${bad}/${w.length} elements differ, first [${first}] ${g[first]} vs expected ${w[first]}, max abs err ${worst}`;
}

// ---------------------------------------------------------------------------
// Worker: runs one case at a time for the parent.

async function workerMain() {
  const ort = require('onnxruntime-node');
  const opts = {
    graphOptimizationLevel: 'disabled',
    executionMode: 'sequential',
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    logSeverityLevel: 3,
  };

  async function runModel(file, sets, iface) {
    let session;
    try {
      session = await ort.InferenceSession.create(file, opts);
    } catch (e) {
      return { error: `onnxruntime cannot load it: ${oneLine(e)}` };
    }
    try {
      const results = [];
      for (const set of sets) {
        const feeds = {};
        set.inputs.forEach(({ vi, tensor }, i) => {
          // The backend runner feeds positionally; a name in the file wins.
          let name = tensor.name && session.inputNames.includes(tensor.name) ? tensor.name : vi.name;
          if (!session.inputNames.includes(name)) name = session.inputNames[i] || name;
          feeds[name] = new ort.Tensor(tensor.type, tensor.data, tensor.dims);
        });
        let out;
        try {
          out = await session.run(feeds, iface.outputs.map((o) => o.name));
        } catch (e) {
          return { error: `${set.name}: onnxruntime run failed: ${oneLine(e)}` };
        }
        const copy = {};
        for (const [k, t] of Object.entries(out)) copy[k] = { type: t.type, dims: Array.from(t.dims), data: t.data };
        results.push(copy);
      }
      return { results };
    } finally {
      if (session && session.release) await session.release().catch(() => {});
    }
  }

  function compareSets(sets, results, iface) {
    for (let s = 0; s < sets.length; s++) {
      for (const { vi, tensor } of sets[s].outputs) {
        const got = results[s][vi.name];
        if (!got) return `${sets[s].name}: no output '${vi.name}'`;
        const why = compareTensor(`${sets[s].name} output '${vi.name}'`, got, tensor);
        if (why) return why;
      }
    }
    return null;
  }

  function compareRuns(sets, a, b, iface) {
    for (let s = 0; s < sets.length; s++) {
      for (const o of iface.outputs) {
        const x = a[s][o.name], y = b[s][o.name];
        if (!x || !y) return `${sets[s].name}: output '${o.name}' missing`;
        const why = compareTensor(`${sets[s].name} output '${o.name}' (exported vs original)`, y, x);
        if (why) return why;
      }
    }
    return null;
  }

  process.on('message', async (job) => {
    const res = { id: job.id };
    try {
      const modelFile = path.join(job.dir, 'model.onnx');
      const iface = readModelInterface(modelFile);
      const sets = loadDataSets(job.dir, iface);
      const orig = await runModel(modelFile, sets, iface);
      let origWhy = orig.error || compareSets(sets, orig.results, iface);
      if (job.originalOnly) {
        Object.assign(res, origWhy ? { status: 'ort-original', reason: origWhy } : { status: 'pass' });
      } else {
        // Each exported model (one per --out tree) against the original;
        // the first failure is the case's.
        let again = null;
        for (const exported of job.exported) {
          const what = job.exported.length > 1 ? `exported model (${path.basename(job.outs[job.exported.indexOf(exported)])})` : 'exported model';
          if (!fs.existsSync(exported)) {
            Object.assign(res, { status: 'no-export', reason: `no exported model at ${exported}`, origWhy });
            break;
          }
          process.send({ id: job.id, phase: 'exported' });
          const exp = await runModel(exported, sets, iface);
          if (!origWhy) {
            const why = exp.error || compareSets(sets, exp.results, iface);
            if (why) { Object.assign(res, { status: 'fail', reason: `${what}: ${why}` }); break; }
            res.status = 'pass';
            continue;
          }
          // ORT is wrong (or unable) on the original: still, where it ran,
          // the exported model must behave the same way.
          res.status = 'ort-original';
          res.reason = origWhy;
          if (orig.error) continue;
          // Random ops (Bernoulli, training Dropout) give other outputs on
          // every run: when a second run of the original disagrees with
          // the first, there is nothing to compare.
          if (!again) again = await runModel(modelFile, sets, iface);
          if (again.error || compareRuns(sets, orig.results, again.results, iface)) {
            res.nondeterministic = true;
            break;
          }
          const why = exp.error || compareRuns(sets, orig.results, exp.results, iface);
          if (why) {
            Object.assign(res, { status: 'fail', reason: `${what} differs from the original under onnxruntime (which itself fails the original: ${origWhy}): ${why}` });
            delete res.differential;
            break;
          }
          res.differential = true;
        }
      }
    } catch (e) {
      if (e instanceof NotComparable) Object.assign(res, { status: 'not-comparable', reason: e.message });
      else Object.assign(res, { status: 'error', reason: `test data: ${oneLine(e)}` });
    }
    process.send(res);
  });
  process.send({ ready: true });
}

function oneLine(e) {
  return String(e && e.message ? e.message : e).replace(/\s+/g, ' ').trim().slice(0, 400);
}

// ---------------------------------------------------------------------------
// Parent: finds the cases, hands them to workers, counts, judges.

function findCases(p, out, depth = 0) {
  let st;
  try { st = fs.statSync(p); } catch (e) { throw new Error(`${p}: ${e.code || e.message}`); }
  if (!st.isDirectory()) throw new Error(`${p}: not a directory`);
  if (fs.existsSync(path.join(p, 'model.onnx'))) {
    const abs = path.resolve(p);
    out.push({ dir: abs, suite: path.basename(path.dirname(abs)), name: path.basename(abs) });
    return;
  }
  if (depth >= 2) return;
  for (const e of fs.readdirSync(p).sort()) {
    const q = path.join(p, e);
    if (fs.statSync(q).isDirectory()) findCases(q, out, depth + 1);
  }
}

// Map "suite/name" -> reason. Lines: `suite/name  reason`, # comments.
function readList(file) {
  const m = new Map();
  if (!file) return m;
  const text = fs.readFileSync(file, 'utf8');
  text.split('\n').forEach((line, i) => {
    const l = line.replace(/#.*/, '').trim();
    if (!l) return;
    const sp = l.search(/\s/);
    const key = sp < 0 ? l : l.slice(0, sp);
    if (!key.includes('/')) throw new Error(`${file}:${i + 1}: expected 'suite/name reason'`);
    if (m.has(key)) throw new Error(`${file}:${i + 1}: ${key} listed twice`);
    m.set(key, sp < 0 ? '' : l.slice(sp).trim());
  });
  return m;
}

async function parentMain(argv) {
  const o = { outs: [], expected: null, rtExpected: null, ortOriginal: null, originalOnly: false, jobs: 2, timeout: 60, verbose: false, paths: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => { if (i + 1 >= argv.length) usage(`${a} needs a value`); return argv[++i]; };
    if (a === '--out') o.outs.push(val());
    else if (a === '--expected') o.expected = val();
    else if (a === '--roundtrip-expected') o.rtExpected = val();
    else if (a === '--ort-original') o.ortOriginal = val();
    else if (a === '--original-only') o.originalOnly = true;
    else if (a === '--jobs') o.jobs = Math.max(1, Number(val()) | 0);
    else if (a === '--timeout') o.timeout = Number(val());
    else if (a === '-v') o.verbose = true;
    else if (a.startsWith('-')) usage(`unknown option ${a}`);
    else o.paths.push(a);
  }
  if (!o.paths.length) usage('no test data paths');
  if (!o.outs.length && !o.originalOnly) usage('--out OUTDIR is needed (or --original-only)');

  const cases = [];
  for (const p of o.paths) findCases(p, cases);
  if (!cases.length) { console.log('FAIL: no test cases found under ' + o.paths.join(' ')); console.log('0 passed, 1 failed'); return 1; }
  const expected = readList(o.expected);
  // --ort-original: the cases onnxruntime itself cannot load or pass, each
  // with its reason; then one missing from the list, or listed but passing,
  // fails the run (without it they are only counted).
  const ortOriginal = o.ortOriginal ? readList(o.ortOriginal) : null;
  const rtExpected = readList(o.rtExpected);

  const t0 = Date.now();
  const results = new Array(cases.length);
  let next = 0;
  const runWorker = () => new Promise((resolve) => {
    let child = null, current = null, timer = null, phase = 'original';
    const spawn = () => {
      child = cp.fork(__filename, ['--worker'], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
      let stderr = '';
      child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-2000); });
      child.on('message', (m) => {
        if (m.ready) return feed();
        if (m.phase) { phase = m.phase; return; }
        clearTimeout(timer);
        results[m.id] = m;
        current = null;
        feed();
      });
      child.on('exit', (code, sig) => {
        clearTimeout(timer);
        if (current !== null) {
          const what = sig === 'SIGKILL' && timedOut ? `timed out after ${o.timeout} s` : `worker died (${sig || 'exit ' + code}): ${oneLine(stderr)}`;
          results[current] = phase === 'exported'
            ? { status: 'fail', reason: `exported model: onnxruntime ${what}` }
            : { status: 'ort-original', reason: `onnxruntime ${what}` };
          current = null;
          if (next < cases.length) { timedOut = false; spawn(); return; }
        }
        resolve();
      });
    };
    let timedOut = false;
    const feed = () => {
      if (next >= cases.length) { child.disconnect(); return; }
      current = next++;
      phase = 'original';
      const c = cases[current];
      const exported = o.outs.map((d) => path.join(d, c.suite, c.name, 'model.onnx'));
      timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, o.timeout * 1000);
      child.send({ id: current, dir: c.dir, exported, outs: o.outs, originalOnly: o.originalOnly });
    };
    spawn();
  });
  await Promise.all(Array.from({ length: Math.min(o.jobs, cases.length) }, runWorker));

  const count = { pass: 0, fail: 0, 'ort-original': 0, 'not-comparable': 0, 'no-export': 0, error: 0 };
  let differential = 0, nondet = 0, xfail = 0, unexpected = 0, stale = 0;
  const suitesRun = new Set(cases.map((c) => c.suite));
  const seen = new Set();
  const lines = { fail: [], ort: [], nc: [], stale: [] };
  cases.forEach((c, i) => {
    const key = `${c.suite}/${c.name}`;
    seen.add(key);
    const r = results[i] || { status: 'error', reason: 'no result' };
    // A missing export is only acceptable for a model whose round trip is
    // a listed failure; otherwise it is a failure here too.
    if (r.status === 'no-export') {
      if (rtExpected.has(key)) { count['no-export']++; if (o.verbose) lines.nc.push(`NOEXPORT ${key}: ${r.reason}`); return; }
      r.status = 'fail';
    }
    if (r.status === 'error') r.status = 'fail';
    count[r.status]++;
    if (r.differential) differential++;
    if (r.nondeterministic) nondet++;
    if (r.status === 'fail') {
      if (expected.has(key)) { xfail++; lines.fail.push(`FAIL ${key}: ${r.reason} (expected: ${expected.get(key)})`); }
      else { unexpected++; lines.fail.push(`FAIL ${key}: ${r.reason}`); }
    } else {
      if (expected.has(key)) { stale++; lines.stale.push(`STALE ${key}: listed in ${o.expected} but did not fail (${r.status})`); }
      if (r.status === 'ort-original' && o.verbose) lines.ort.push(`ORT ${key}: ${r.reason}`);
      if (ortOriginal && (r.status === 'ort-original') !== ortOriginal.has(key)) {
        if (r.status === 'ort-original') { unexpected++; lines.fail.push(`UNLISTED ${key}: onnxruntime cannot pass the original, and ${o.ortOriginal} does not say why: ${r.reason}`); }
        else { stale++; lines.stale.push(`STALE ${key}: listed in ${o.ortOriginal} but onnxruntime passes it (${r.status})`); }
      }
      if (r.status === 'not-comparable' && o.verbose) lines.nc.push(`NOTCOMPARABLE ${key}: ${r.reason}`);
    }
  });
  for (const key of ortOriginal ? ortOriginal.keys() : []) {
    if (!seen.has(key) && suitesRun.has(key.split('/')[0])) { stale++; lines.stale.push(`STALE ${key}: listed in ${o.ortOriginal} but no such test case`); }
  }
  for (const key of expected.keys()) {
    if (!seen.has(key) && suitesRun.has(key.split('/')[0])) { stale++; lines.stale.push(`STALE ${key}: listed in ${o.expected} but no such test case`); }
  }
  for (const l of [...lines.ort, ...lines.nc, ...lines.fail, ...lines.stale]) console.log(l);
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  console.log(`${cases.length} cases in ${secs} s${o.originalOnly ? ' (original models only)' : ''}`);
  console.log(`ort cannot run original: ${count['ort-original']}` +
    (o.originalOnly ? '' : ` (of which ${differential} ran, and the exported model gave the same outputs;` +
      ` ${nondet} ran but give other outputs on every run)`));
  console.log(`not comparable (non-tensor test data or dtype onnxruntime-node lacks): ${count['not-comparable']}`);
  if (!o.originalOnly) console.log(`no exported model (listed round-trip failure): ${count['no-export']}`);
  console.log(`${xfail} expected failures (listed), ${unexpected} unexpected, ${stale} stale entries`);
  console.log(`${count.pass} passed, ${count.fail} failed`);
  return unexpected || stale ? 1 : 0;
}

function usage(msg) {
  console.error(`ort_compare.js: ${msg}`);
  console.error('usage: node ort_compare.js [--out OUTDIR]... [--expected FILE] [--roundtrip-expected FILE] [--ort-original FILE] [--original-only] [--jobs N] [--timeout S] [-v] PATH...');
  process.exit(2);
}

if (require.main !== module) {
  // required for its decoder (tests of the test)
} else if (process.argv[2] === '--worker') {
  workerMain();
} else {
  parentMain(process.argv.slice(2)).then((rc) => process.exit(rc), (e) => {
    console.log(`FAIL: ${oneLine(e)}`);
    console.log('0 passed, 1 failed');
    process.exit(1);
  });
}

module.exports = { decodeTensor, decodeType, readModelInterface, compareTensor };
