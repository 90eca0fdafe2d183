// ort_compare.js ORIG DIR OTHER...: runs ORIG and each OTHER model on
// onnxruntime-node (optimizations disabled, so that each graph runs as
// written; one intra-op thread) with the inputs in DIR/input_*.pb (as `gwr
// run -o DIR` writes them) and prints, per OTHER, the largest absolute
// difference of its outputs from ORIG's (outputs matched by position), or
// why onnxruntime could not load or run it. Exit 1 when one failed.
const path = require('path');
const ort = require('onnxruntime-node');
const {readFeeds} = require('./tensor_pb');

async function run(model, feeds) {
  const s = await ort.InferenceSession.create(model, {graphOptimizationLevel: 'disabled', intraOpNumThreads: 1});
  const res = await s.run(feeds);
  const outs = s.outputNames.map((n) => res[n]);
  if (s.release) await s.release();
  return outs;
}

(async () => {
  const [orig, dir, ...others] = process.argv.slice(2);
  const feeds = readFeeds(dir);
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
