// ort_same_outputs.js A.onnx B.onnx TOL NAME=D1xD2x... ...: runs both
// models on onnxruntime-node (one thread, graph optimizations disabled, so
// that B's com.microsoft ops run as written) with the same seeded float32
// inputs in [-2, 2), and prints the largest absolute difference over the
// outputs of A (which B must have too). Exit 1 when it passes TOL or a
// model does not load or run.
const ort = require('onnxruntime-node');

(async () => {
  const [a, b, tol, ...shapes] = process.argv.slice(2);
  let state = 12345;
  const rand = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state / 4294967296) * 4 - 2;
  };
  const feeds = {};
  for (const s of shapes) {
    const [name, dims] = s.split('=');
    const d = dims.split('x').map(Number);
    const data = new Float32Array(d.reduce((p, q) => p * q, 1)).map(rand);
    feeds[name] = new ort.Tensor('float32', data, d);
  }
  const opts = {intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'disabled'};
  const sa = await ort.InferenceSession.create(a, opts), sb = await ort.InferenceSession.create(b, opts);
  const ra = await sa.run(feeds), rb = await sb.run(feeds);
  let worst = 0, where = '';
  for (const name of sa.outputNames) {
    const x = ra[name].data, y = rb[name] && rb[name].data;
    if (!y || y.length !== x.length) throw new Error(`output '${name}' missing or of another size in ${b}`);
    for (let i = 0; i < x.length; i++) {
      const d = Math.abs(x[i] - y[i]);
      if (!(d <= worst)) worst = d, where = name;
    }
  }
  console.log(`max abs difference ${worst.toExponential(3)}${where ? ` (${where})` : ''}`);
  process.exit(worst <= Number(tol) ? 0 : 1);
})().catch((e) => { console.error('ort_same_outputs:', e.message); process.exit(1); });
