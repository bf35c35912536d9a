// Child process of speed.mjs: ONNX Runtime's side of `cleave run --json`, for one model.
// Usage: node ort_run.mjs model.onnx (input.npy | random:d0,d1,...) inputName threads warmup runs
//          [name=more.npy ...]
// Prints {"runs": [ms...], "baseline_rss_bytes", "peak_rss_bytes"}: resident memory after loading
// the runtime, and its high-water mark after the timed runs.
import ort from "onnxruntime-node";

import { readNpy } from "./common.mjs";

const [modelFile, inputFile, inputName, threads, warmup, runs, ...moreInputs] =
  process.argv.slice(2);
// Seeded uniform values in [-1, 1) when no input file is given (generated models).
function randomInput(shape) {
  const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
  let state = 12345;
  for (let i = 0; i < data.length; ++i) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    data[i] = (state / 2 ** 31) - 1;
  }
  return { shape, data, ortType: "float32" };
}
const input = inputFile.startsWith("random:")
  ? randomInput(inputFile.slice(7).split(",").map(Number))
  : readNpy(inputFile);
const baseline = process.resourceUsage().maxRSS * 1024;
const session = await ort.InferenceSession.create(modelFile, {
  intraOpNumThreads: Number(threads),
  interOpNumThreads: 1,
  executionMode: "sequential",
  graphOptimizationLevel: "all",
});
const feeds = { [inputName]: new ort.Tensor(input.ortType, input.data, input.shape) };
for (const pair of moreInputs) {
  const at = pair.indexOf("=");
  const more = readNpy(pair.slice(at + 1));
  feeds[pair.slice(0, at)] = new ort.Tensor(more.ortType, more.data, more.shape);
}
for (let i = 0; i < Number(warmup); ++i) await session.run(feeds);
const times = [];
for (let i = 0; i < Number(runs); ++i) {
  const start = process.hrtime.bigint();
  await session.run(feeds);
  times.push(Number(process.hrtime.bigint() - start) / 1e6);
}
console.log(
  JSON.stringify({
    runs: times,
    baseline_rss_bytes: baseline,
    peak_rss_bytes: process.resourceUsage().maxRSS * 1024,
  }),
);
