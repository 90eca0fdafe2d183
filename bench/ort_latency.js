// ort_latency.js DIR ROUNDS MODEL:LEVEL...: onnxruntime-node inference
// latency of several (model, graph-optimization level) sessions on the same
// inputs (DIR/input_*.pb, as `gwr run -o DIR` writes them), one intra-op
// thread. Every session is created first and run once to warm up; then the
// sessions take turns, ROUNDS rounds of one run each, so that a change in
// the machine's load touches them all alike. Prints one line per session:
//   MODEL LEVEL: median M ms, best B ms of ROUNDS
// and the largest absolute difference of its outputs from the first
// session's (outputs matched by position). Exit 1 when one fails.
const path = require('path');
const ort = require('onnxruntime-node');
const {readFeeds} = require('./tensor_pb');

(async () => {
  const [dir, rounds, ...pairs] = process.argv.slice(2);
  if (!pairs.length) throw new Error('usage: ort_latency.js DIR ROUNDS MODEL:LEVEL...');
  const feeds = readFeeds(dir);
  const runs = [];
  for (const p of pairs) {
    const k = p.lastIndexOf(':');
    const model = p.slice(0, k), level = p.slice(k + 1);
    const s = await ort.InferenceSession.create(model, {graphOptimizationLevel: level, intraOpNumThreads: 1,
                                                        interOpNumThreads: 1});
    const res = await s.run(feeds);
    runs.push({model, level, s, outs: s.outputNames.map((n) => res[n]), times: []});
  }
  for (let r = 0; r < Number(rounds); r++)
    for (const x of runs) {
      const t0 = process.hrtime.bigint();
      await x.s.run(feeds);
      x.times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  for (const x of runs) {
    let maxerr = 0;
    x.outs.forEach((g, k) => {
      const w = runs[0].outs[k];
      for (let i = 0; w && i < g.data.length; i++) {
        const d = Math.abs(Number(g.data[i]) - Number(w.data[i]));
        maxerr = Number.isNaN(d) ? Infinity : Math.max(maxerr, d);
      }
    });
    x.times.sort((a, b) => a - b);
    console.log(`${path.basename(x.model)} ${x.level}: median ${x.times[x.times.length >> 1].toFixed(3)} ms, ` +
                `best ${x.times[0].toFixed(3)} ms of ${rounds}; max abs difference ${maxerr.toExponential(2)}`);
    if (x.s.release) await x.s.release();
  }
})().catch((e) => { console.error('ort_latency:', e.message); process.exit(1); });
