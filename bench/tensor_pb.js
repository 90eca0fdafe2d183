// tensor_pb.js - reads the TensorProto files `gwr run -o DIR` writes
// (input_N.pb, output_N.pb) as onnxruntime tensors, for the bench scripts
// (ort_run.js, ort_compare.js). Reads the fields gwr writes: dims,
// data_type, name, raw_data.
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

// The files of DIR named PREFIX_N.pb, in N order.
function listPb(dir, prefix) {
  const re = new RegExp(`^${prefix}_\\d+\\.pb$`);
  return fs.readdirSync(dir).filter((f) => re.test(f))
    .sort((a, b) => parseInt(a.slice(prefix.length + 1)) - parseInt(b.slice(prefix.length + 1)));
}

// {name: tensor} of DIR's input_N.pb files.
function readFeeds(dir) {
  const feeds = {};
  for (const f of listPb(dir, 'input')) { const t = readTensor(`${dir}/${f}`); feeds[t.name] = t.tensor; }
  return feeds;
}

module.exports = {readTensor, listPb, readFeeds};
