// ONNX Runtime's side of benchmarks/peers/networks: an ONNX model with one float input x of
// the shape given, timed on the CPU.
//
//   node ort_model.js MODEL THREADS RUNS DIM...
//
// Prints the median of RUNS runs in milliseconds as `ort_ms VALUE`, all graph
// optimisations on, THREADS intra-op threads. Exit status 77 when the package
// onnxruntime-node is not found (scripts/setup --peers installs it).
let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  console.log('onnxruntime-node is not installed (scripts/setup --peers)');
  process.exit(77);
}
const [model, threads, runs, ...dims] = process.argv.slice(2);
(async () => {
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, graphOptimizationLevel: 'all',
  });
  const shape = dims.map(Number);
  const n = shape.reduce((a, b) => a * b, 1);
  const x = new ort.Tensor('float32', Float32Array.from({length: n}, (_, i) => Math.sin(i)), shape);
  for (let i = 0; i < 3; ++i) await session.run({x});
  const times = [];
  for (let i = 0; i < Number(runs); ++i) {
    const start = process.hrtime.bigint();
    await session.run({x});
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  console.log(`ort_ms ${times[Math.floor(times.length / 2)].toFixed(3)}`);
})().catch((e) => { console.error(`ort_model: ${e.message}`); process.exit(1); });
