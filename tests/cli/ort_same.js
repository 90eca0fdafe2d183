// ort_same.js ORIG DIR TOL OTHER...: runs ORIG and each OTHER on
// onnxruntime-node (optimizations disabled, one thread) with the inputs in
// DIR/input_*.pb (`gwr run -o DIR`) and prints, per OTHER, the largest
// absolute difference of its outputs from ORIG's, NaN matching NaN (a
// query that sees no key is NaN in both forms of attention). Exit 1 when
// one fails to load or run, or differs by more than TOL.
const path = require('path');
const ort = require('onnxruntime-node');
const {readFeeds} = require('../../bench/tensor_pb');

async function run(model, feeds) {
  const s = await ort.InferenceSession.create(model, {graphOptimizationLevel: 'disabled', intraOpNumThreads: 1});
  const res = await s.run(feeds);
  return s.outputNames.map((n) => res[n]);
}

(async () => {
  const [orig, dir, tol, ...others] = process.argv.slice(2);
  const feeds = readFeeds(dir);
  const want = await run(orig, feeds);
  let failed = 0;
  for (const m of others) {
    try {
      const got = await run(m, feeds);
      if (got.length !== want.length) throw new Error(`${got.length} outputs, the original has ${want.length}`);
      let maxerr = 0, nans = 0;
      got.forEach((g, k) => {
        if (g.data.length !== want[k].data.length) throw new Error(`output ${k}: ${g.data.length} values`);
        for (let i = 0; i < g.data.length; i++) {
          const a = Number(g.data[i]), b = Number(want[k].data[i]);
          if (Number.isNaN(a) && Number.isNaN(b)) { nans++; continue; }
          const d = Math.abs(a - b);
          maxerr = Number.isNaN(d) ? Infinity : Math.max(maxerr, d);
        }
      });
      const ok = maxerr <= Number(tol);
      if (!ok) failed++;
      console.log(`${path.basename(m)}: ${ok ? 'same' : 'DIFFERS'}, max abs difference ${maxerr.toExponential(2)}, ${nans} NaN in both`);
    } catch (e) {
      failed++;
      console.log(`${path.basename(m)}: FAILS in onnxruntime: ${e.message.split('\n')[0]}`);
    }
  }
  process.exit(failed ? 1 : 0);
})();
