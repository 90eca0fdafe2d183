// ort_exec.js MODEL DIR REPEAT THREADS [LEVEL]: onnxruntime-node's side of
// bench/run_exec_bench.sh. Creates a session on MODEL (graph optimization
// LEVEL, default 'all', as onnxruntime's own default; THREADS intra-op
// threads, one inter-op thread) and times the creation (reading the file
// included: onnxruntime takes a path); runs it once to warm up on the
// inputs in DIR/input_*.pb (as `gwr run -o DIR` writes them), then REPEAT
// timed runs. Prints one line:
//   onnxruntime: create C ms; best B ms, median M ms of REPEAT; max abs difference E
// where E is the largest absolute difference from DIR/output_*.pb (gwr's
// outputs, matched by name).
const ort = require('onnxruntime-node');
const {readTensor, listPb, readFeeds} = require('./tensor_pb');

(async () => {
  const [model, dir, rep = '20', threads = '1', level = 'all'] = process.argv.slice(2);
  if (!dir) throw new Error('usage: ort_exec.js MODEL DIR REPEAT THREADS [LEVEL]');
  const feeds = readFeeds(dir);
  const t0 = process.hrtime.bigint();
  const s = await ort.InferenceSession.create(model, {graphOptimizationLevel: level,
                                                      intraOpNumThreads: Number(threads), interOpNumThreads: 1});
  const create = Number(process.hrtime.bigint() - t0) / 1e6;
  let res = await s.run(feeds);
  const times = [];
  for (let i = 0; i < Number(rep); i++) {
    const t = process.hrtime.bigint();
    res = await s.run(feeds);
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  times.sort((a, b) => a - b);
  let maxerr = 0;
  for (const f of listPb(dir, 'output')) {
    const want = readTensor(`${dir}/${f}`), got = res[want.name];
    if (!got) throw new Error(`onnxruntime gave no output '${want.name}'`);
    for (let i = 0; i < got.data.length; i++) {
      const d = Math.abs(Number(got.data[i]) - Number(want.tensor.data[i]));
      maxerr = Number.isNaN(d) ? Infinity : Math.max(maxerr, d);
    }
  }
  console.log(`onnxruntime: create ${create.toFixed(3)} ms; best ${times[0].toFixed(3)} ms, ` +
              `median ${times[times.length >> 1].toFixed(3)} ms of ${rep}; max abs difference ${maxerr.toExponential(2)}`);
})().catch((e) => { console.error('ort_exec:', e.message); process.exit(1); });
