// ONNX Runtime's own per-node times for one model, to set beside `cleave profile`'s.
// Usage: node profile_nodes.mjs model.onnx input.npy inputName threads [runs]
// (a model of several inputs: input.npy and inputName as comma-separated lists, in the same order)
// Runs the model `runs` times (default 200) with ORT's session profiler and prints, in execution
// order, each node's median kernel time in microseconds over all runs after the first 20, as
// JSON lines {"node", "op", "us", "us_p10", "shapes"} (us_p10: the 10th percentile, for a host
// that other processes disturb; shapes: each input's dims, as ORT's profiler gives them), then
// {"run_us", "run_min_us"}: the median and the fastest whole run under the profiler.
// ORT names a fused node after its output value ("..._nchwc"), not after the ONNX node.
import fs from "fs";
import os from "os";
import path from "path";
import ort from "onnxruntime-node";

import { readNpy } from "./common.mjs";

const [modelFile, inputFile, inputName, threads, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 200);
const inputFiles = inputFile.split(","), inputNames = inputName.split(",");
if (inputFiles.length !== inputNames.length) {
  console.error(`profile_nodes.mjs: ${inputFiles.length} input file(s) but ${inputNames.length} name(s)`);
  process.exit(1);
}
const prefix = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "ort-profile-")), "profile");
const session = await ort.InferenceSession.create(modelFile, {
  intraOpNumThreads: Number(threads),
  interOpNumThreads: 1,
  executionMode: "sequential",
  graphOptimizationLevel: "all",
  enableProfiling: true,
  profileFilePrefix: prefix,
});
const feeds = {};
inputNames.forEach((name, i) => {
  const input = readNpy(inputFiles[i]);
  feeds[name] = new ort.Tensor(input.ortType, input.data, input.shape);
});
for (let i = 0; i < runs; ++i) await session.run(feeds);
session.endProfiling();
const dir = path.dirname(prefix);
const events = JSON.parse(fs.readFileSync(path.join(dir, fs.readdirSync(dir)[0]), "utf8"));
fs.rmSync(dir, { recursive: true });

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length * q)];
};
const median = (values) => quantile(values, 0.5);
const skip = Math.min(20, Math.floor(runs / 3));  // Warm-up runs left out.
const perNode = new Map();  // In first-seen (execution) order.
const runTimes = [];
for (const event of events) {
  if (event.cat === "Node" && event.name.endsWith("_kernel_time")) {
    const name = event.name.slice(0, -"_kernel_time".length);
    if (!perNode.has(name)) {
      perNode.set(name, {
        op: event.args.op_name,
        shapes: (event.args.input_type_shape ?? []).map((input) => Object.values(input)[0]),
        us: [],
      });
    }
    perNode.get(name).us.push(event.dur);
  } else if (event.cat === "Session" && event.name === "model_run") {
    runTimes.push(event.dur);
  }
}
for (const [node, { op, shapes, us }] of perNode) {
  const timed = us.slice(skip);
  console.log(JSON.stringify({ node, op, us: median(timed), us_p10: quantile(timed, 0.1), shapes }));
}
console.log(JSON.stringify({
  run_us: median(runTimes.slice(skip)),
  run_min_us: Math.min(...runTimes.slice(skip)),
}));
