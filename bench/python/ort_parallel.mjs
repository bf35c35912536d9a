// onnxruntime-node's side of bench/python/parallel.py: one model, one execution setting.
// Usage: node ort_parallel.mjs model.onnx inputName d0,d1 mode intra inter warmup runs
// mode: sequential | parallel. Prints {"runs": [ms...]}.
import ort from "../ort/node_modules/onnxruntime-node/dist/index.js";

const [model, inputName, dims, mode, intra, inter, warmup, runs] = process.argv.slice(2);
const shape = dims.split(",").map(Number);
const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
let state = 12345;
for (let i = 0; i < data.length; ++i) {
  state = (Math.imul(state, 1103515245) + 12345) >>> 0;
  data[i] = state / 2 ** 31 - 1;
}
const session = await ort.InferenceSession.create(model, {
  intraOpNumThreads: Number(intra),
  interOpNumThreads: Number(inter),
  executionMode: mode,
  graphOptimizationLevel: "all",
});
const feeds = { [inputName]: new ort.Tensor("float32", data, shape) };
for (let i = 0; i < Number(warmup); ++i) await session.run(feeds);
const times = [];
for (let i = 0; i < Number(runs); ++i) {
  const start = process.hrtime.bigint();
  await session.run(feeds);
  times.push(Number(process.hrtime.bigint() - start) / 1e6);
}
console.log(JSON.stringify({ runs: times }));
