// ort_run.js MODEL DIR [REPEAT]: runs MODEL on onnxruntime-node (one
// intra-op thread, default graph optimizations) with the inputs in
// DIR/input_*.pb (as `gwr run -o DIR` writes them), REPEAT times (default
// 10) after one warm-up run, and prints the best and median latency and
// the largest absolute difference from DIR/output_*.pb (gwr's outputs).
// Reads the TensorProto fields gwr writes: dims, data_type, name, raw_data.
const fs = require('fs');
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

function readTensor(path) {
  const b = fs.readFileSync(path), p = {i: 0};
  const dims = [];
  let dt = 0, name = '', raw = null;
  while (p.i < b.length) {
    const tag = Number(varint(b, p)), f = tag >> 3, wt = tag & 7;
    if (wt === 0) {
      const v = varint(b, p);
      if (f === 1) dims.push(Number(v)); else if (f === 2) dt = Number(v);
    } else if (wt === 2) {
      const n = Number(varint(b, p)), s = b.subarray(p.i, p.i + n);
      p.i += n;
      if (f === 1) { const q = {i: 0}; while (q.i < s.length) dims.push(Number(varint(s, q))); }
      else if (f === 8) name = s.toString();
      else if (f === 9) raw = s;
    } else if (wt === 5) p.i += 4; else if (wt === 1) p.i += 8;
    else throw new Error(`${path}: wire type ${wt}`);
  }
  const t = TYPES[dt];
  if (!t || !raw) throw new Error(`${path}: data_type ${dt} without raw_data is not supported here`);
  const copy = new Uint8Array(raw);  // aligned copy
  const data = new t[1](copy.buffer, copy.byteOffset, copy.length / t[1].BYTES_PER_ELEMENT);
  return {name, tensor: new ort.Tensor(t[0], data, dims)};
}

(async () => {
  const [model, dir, rep = '10'] = process.argv.slice(2);
  const files = fs.readdirSync(dir);
  const ins = files.filter((f) => /^input_\d+\.pb$/.test(f)).sort((a, b) => parseInt(a.slice(6)) - parseInt(b.slice(6)));
  const outs = files.filter((f) => /^output_\d+\.pb$/.test(f)).sort((a, b) => parseInt(a.slice(7)) - parseInt(b.slice(7)));
  const feeds = {};
  for (const f of ins) { const t = readTensor(`${dir}/${f}`); feeds[t.name] = t.tensor; }
  const s = await ort.InferenceSession.create(model, {intraOpNumThreads: 1, interOpNumThreads: 1});
  let res = await s.run(feeds);
  const times = [];
  for (let i = 0; i < Number(rep); i++) {
    const t0 = process.hrtime.bigint();
    res = await s.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  let maxerr = 0;
  for (const f of outs) {
    const want = readTensor(`${dir}/${f}`), got = res[want.name];
    if (!got) throw new Error(`onnxruntime gave no output '${want.name}'`);
    for (let i = 0; i < got.data.length; i++) maxerr = Math.max(maxerr, Math.abs(Number(got.data[i]) - Number(want.tensor.data[i])));
  }
  console.log(`onnxruntime ${model}: best ${times[0].toFixed(3)} ms, median ${times[times.length >> 1].toFixed(3)} ms of ${rep}; ` +
              `max abs difference from gwr's outputs ${maxerr.toExponential(2)}`);
})().catch((e) => { console.error('ort_run:', e.message); process.exit(1); });
