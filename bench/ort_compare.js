// ort_compare.js ORIG DIR OTHER...: runs ORIG and each OTHER model on
// onnxruntime-node (optimizations disabled, so that each graph runs as
// written; one intra-op thread) with the inputs in DIR/input_*.pb (as `gwr
// run -o DIR` writes them) and prints, per OTHER, the largest absolute
// difference of its outputs from ORIG's (outputs matched by position), or
// why onnxruntime could not load or run it. Exit 1 when one failed.
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function varint(b, p) {
  let v = 0n, s = 0n;
  for (;;) {
    const x = b[p.i++];
    v |= BigInt(x & 0x7f) << s;
    s += 7n;
    if (!(x & 0x80)) return v;
  }
}
const TYPES = {1: ['float32', Float32Array], 6: ['int32', Int32Array], 7: ['int64', BigInt64Array],
               9: ['bool', Uint8Array], 11: ['float64', Float64Array]};
function readTensor(file) {  // the TensorProto fields gwr writes (as ort_run.js)
  const b = fs.readFileSync(file), p = {i: 0};
  const dims = [];
  let dt = 0, name = '', raw = null;
  while (p.i < b.length) {
    const tag = Number(varint(b, p)), f = tag >> 3, wt = tag & 7;
    if (wt === 0) { const v = varint(b, p); if (f === 1) dims.push(Number(v)); else if (f === 2) dt = Number(v); }
    else if (wt === 2) {
      const n = Number(varint(b, p)), s = b.subarray(p.i, p.i + n);
      p.i += n;
      if (f === 1) { const q = {i: 0}; while (q.i < s.length) dims.push(Number(varint(s, q))); }
      else if (f === 8) name = s.toString();
      else if (f === 9) raw = s;
    } else if (wt === 5) p.i += 4; else if (wt === 1) p.i += 8;
    else throw new Error(`${file}: wire type ${wt}`);
  }
  const t = TYPES[dt];
  if (!t || !raw) throw new Error(`${file}: data_type ${dt} without raw_data is not supported here`);
  const copy = new Uint8Array(raw);
  return {name, tensor: new ort.Tensor(t[0], new t[1](copy.buffer, copy.byteOffset, copy.length / t[1].BYTES_PER_ELEMENT), dims)};
}

async function run(model, feeds) {
  const s = await ort.InferenceSession.create(model, {graphOptimizationLevel: 'disabled', intraOpNumThreads: 1});
  const res = await s.run(feeds);
  const outs = s.outputNames.map((n) => res[n]);
  if (s.release) await s.release();
  return outs;
}

(async () => {
  const [orig, dir, ...others] = process.argv.slice(2);
  const feeds = {};
  for (const f of fs.readdirSync(dir).filter((f) => /^input_\d+\.pb$/.test(f))) {
    const t = readTensor(`${dir}/${f}`);
    feeds[t.name] = t.tensor;
  }
  const want = await run(orig, feeds);
  let failed = 0;
  for (const m of others) {
    try {
      const got = await run(m, feeds);
      if (got.length !== want.length) throw new Error(`${got.length} outputs, the original has ${want.length}`);
      let maxerr = 0;
      got.forEach((g, k) => {
        if (g.data.length !== want[k].data.length) throw new Error(`output ${k}: ${g.data.length} values, want ${want[k].data.length}`);
        for (let i = 0; i < g.data.length; i++) {
          const d = Math.abs(Number(g.data[i]) - Number(want[k].data[i]));
          maxerr = Number.isNaN(d) ? Infinity : Math.max(maxerr, d);
        }
      });
      console.log(`${path.basename(m)}: loads, max abs difference from the original ${maxerr.toExponential(2)}`);
    } catch (e) {
      failed++;
      console.log(`${path.basename(m)}: FAILS in onnxruntime: ${e.message.split('\n')[0]}`);
    }
  }
  process.exit(failed ? 1 : 0);
})().catch((e) => { console.error('ort_compare:', e.message); process.exit(1); });
