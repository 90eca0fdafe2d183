// ort_run.js MODEL DIR [REPEAT]: runs MODEL on onnxruntime-node (one
// intra-op thread, default graph optimizations) with the inputs in
// DIR/input_*.pb (as `gwr run -o DIR` writes them), REPEAT times (default
// 10) after one warm-up run, and prints the best and median latency and
// the largest absolute difference from DIR/output_*.pb (gwr's outputs).
const ort = require('onnxruntime-node');
const {readTensor, listPb, readFeeds} = require('./tensor_pb');

(async () => {
  const [model, dir, rep = '10'] = process.argv.slice(2);
  const outs = listPb(dir, 'output');
  const feeds = readFeeds(dir);
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
