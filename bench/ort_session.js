// ort_session.js FILE [REPEAT] [LEVEL]: best-of-REPEAT time of onnxruntime's
// InferenceSession.create on FILE, graph optimizations at LEVEL ('disabled'
// by default; 'basic' for the rewrite comparison). Run from the repo root.
const ort = require('onnxruntime-node');
(async () => {
  const [file, rep = '3', level = 'disabled'] = process.argv.slice(2);
  let best = Infinity;
  for (let i = 0; i < Number(rep); i++) {
    const t0 = process.hrtime.bigint();
    const s = await ort.InferenceSession.create(file, { graphOptimizationLevel: level, intraOpNumThreads: 1 });
    const dt = Number(process.hrtime.bigint() - t0) / 1e9;
    if (s.release) await s.release();
    best = Math.min(best, dt);
  }
  console.log(`ort session ${level} ${file}: ${best.toFixed(4)} s`);
})().catch((e) => { console.error('ort_session:', e.message); process.exit(1); });
