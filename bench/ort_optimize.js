// ort_optimize.js FILE LEVEL OUT: creates an onnxruntime-node session on FILE
// with graph optimizations at LEVEL (basic, extended, all; one intra-op
// thread) and the session option optimizedModelFilePath, so that onnxruntime
// writes the graph it optimized to OUT. Prints the session-creation time.
// Run from the repo root.
const ort = require('onnxruntime-node');
(async () => {
  const [file, level, out] = process.argv.slice(2);
  if (!out) throw new Error('usage: ort_optimize.js FILE LEVEL OUT');
  const t0 = process.hrtime.bigint();
  const s = await ort.InferenceSession.create(file, {
    graphOptimizationLevel: level, intraOpNumThreads: 1, optimizedModelFilePath: out});
  const dt = Number(process.hrtime.bigint() - t0) / 1e9;
  if (s.release) await s.release();
  console.log(`ort optimized ${level} ${file} -> ${out}: ${dt.toFixed(4)} s`);
})().catch((e) => { console.error('ort_optimize:', e.message); process.exit(1); });
