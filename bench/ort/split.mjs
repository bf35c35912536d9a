// Proof that a `cleave split` is whole: runs each split's sub-models in ONNX Runtime, doing the
// manifest's transfers by copying array regions, and compares machine 0's outputs with the
// whole model run in ONNX Runtime.
//
// Usage: node bench/ort/split.mjs [--cleave build/cleave] [--models DIR] [--only a,b]
//            [--nodes 2,3,4] [--dims h,w,c,hw,auto] [--markdown docs/results/spatial_ort.md]
// A split matches when every output element satisfies |split - whole| <= 1e-3 * |whole| +
// 1e-4 * max|whole|. Exits 1 when any split fails to run or to match.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { defaultCleave, defaultCorpusDir, loadCorpus, parseFlags, readNpy } from "./common.mjs";

const flags = parseFlags(process.argv.slice(2), {
  cleave: defaultCleave,
  models: defaultCorpusDir,
  only: "",
  nodes: "2,3,4",
  dims: "h,w,c,hw,auto",
  markdown: "",
});
// Imported once the flags are read, so --help answers where onnxruntime-node is not installed.
const ort = (await import("onnxruntime-node")).default;

const arrays = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int32: Int32Array, int64: BigInt64Array, bool: Uint8Array,
};

// The elements of `tensor` (ort.Tensor) inside region [[b, e], ...] as a new ort.Tensor.
function copyRegion(tensor, region, dtype) {
  const dims = tensor.dims;
  const shape = region.map(([b, e]) => e - b);
  const count = shape.reduce((a, b) => a * b, 1);
  const out = new arrays[dtype](count);
  const strides = dims.map((_, d) => dims.slice(d + 1).reduce((a, b) => a * b, 1));
  const index = new Array(dims.length).fill(0);
  for (let k = 0; k < count; ++k) {
    let offset = 0;
    for (let d = 0; d < dims.length; ++d) offset += (region[d][0] + index[d]) * strides[d];
    out[k] = tensor.data[offset];
    for (let d = dims.length - 1; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return new ort.Tensor(dtype, out, shape);
}

async function runManifest(dir, manifest, inputs) {
  const env = manifest.steps.map(() => new Map());
  for (const t of manifest.inputs) for (const e of env) e.set(t.name, inputs[t.name]);
  const mailbox = new Map();
  const pc = manifest.steps.map(() => 0);
  const sessions = new Map();
  let runs = 0;
  for (let progress = true; progress; ) {
    progress = false;
    for (let m = 0; m < manifest.machines; ++m) {
      const steps = manifest.steps[m];
      while (pc[m] < steps.length) {
        const s = steps[pc[m]];
        if (s.op === "recv") {
          if (!mailbox.has(s.tag)) break;
          env[m].set(s.name, mailbox.get(s.tag));
          mailbox.delete(s.tag);
        } else if (s.op === "send") {
          mailbox.set(s.tag, copyRegion(env[m].get(s.tensor), s.region, s.dtype));
        } else {
          if (!sessions.has(s.model)) {
            sessions.set(s.model, await ort.InferenceSession.create(path.join(dir, s.model), {
              intraOpNumThreads: 1, executionMode: "sequential" }));
          }
          const feeds = {};
          for (const name of s.inputs) feeds[name] = env[m].get(name);
          const results = await sessions.get(s.model).run(feeds);
          for (const name of s.outputs) env[m].set(name, results[name]);
          ++runs;
        }
        ++pc[m];
        progress = true;
      }
    }
  }
  pc.forEach((p, m) => {
    if (p < manifest.steps[m].length) throw new Error(`machine ${m} deadlocked at step ${p}`);
  });
  const outputs = {};
  for (const t of manifest.outputs) outputs[t.name] = env[0].get(t.name);
  return { outputs, submodels: sessions.size, runs };
}

function maxError(actual, expected) {
  let largest = 0;
  for (const v of expected) largest = Math.max(largest, Math.abs(v));
  let maxAbs = 0;
  let ok = actual.length === expected.length;
  for (let i = 0; i < expected.length && ok; ++i) {
    const diff = Math.abs(actual[i] - expected[i]);
    if (!(diff <= 1e-3 * Math.abs(expected[i]) + 1e-4 * largest)) ok = false;
    maxAbs = Math.max(maxAbs, diff);
  }
  return { ok, maxAbs };
}

const corpus = loadCorpus(flags.models, flags.only ? flags.only.split(",") : null);
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "cleave-split-"));
const rows = [];
let failures = 0;
for (const model of corpus) {
  const npy = readNpy(model.input);
  const input = new ort.Tensor("float32", npy.data, npy.shape);
  const whole = await ort.InferenceSession.create(model.onnx, { intraOpNumThreads: 1 });
  const expected = await whole.run({ [model.inputName]: input });
  for (const nodes of flags.nodes.split(",")) {
    for (const dim of flags.dims.split(",")) {
      const dir = path.join(scratch, `${model.name}_${nodes}_${dim}`);
      const row = { model: model.name, nodes: Number(nodes), dim };
      try {
        const report = JSON.parse(execFileSync(flags.cleave,
          ["split", model.onnx, "--nodes", nodes, "--dim", dim, "--json", "-o", dir],
          { encoding: "utf8", maxBuffer: 1 << 28 }));
        const manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8"));
        const got = await runManifest(dir, manifest, { [model.inputName]: input });
        row.chosen = report.dim;
        row.submodels = got.submodels;
        row.naive = report.naive.transfer_bytes;
        row.optimized = report.optimized.transfer_bytes;
        row.gathers = report.gathers.length;
        let ok = true;
        let maxAbs = 0;
        for (const name of Object.keys(expected)) {
          const e = maxError(got.outputs[name].data, expected[name].data);
          ok = ok && e.ok;
          maxAbs = Math.max(maxAbs, e.maxAbs);
        }
        row.ok = ok;
        row.maxAbs = maxAbs;
      } catch (error) {
        row.ok = false;
        row.error = String(error.message || error).split("\n")[0].slice(0, 160);
      }
      if (!row.ok) ++failures;
      fs.rmSync(dir, { recursive: true, force: true });
      rows.push(row);
      console.log(JSON.stringify(row));
    }
  }
}
fs.rmSync(scratch, { recursive: true, force: true });

const lines = [
  `Command: \`node bench/ort/split.mjs${process.argv.slice(2).map((a) => " " + a).join("")}\``,
  "",
  "| model | machines | dim | sub-models | bytes naive | bytes optimised | reduction | gathered nodes | max abs error | matches ORT |",
  "|---|---|---|---|---|---|---|---|---|---|",
];
for (const r of rows) {
  const reduction = r.optimized ? (r.naive / r.optimized).toFixed(2) + "x" : "-";
  lines.push(`| ${r.model} | ${r.nodes} | ${r.dim}${r.chosen && r.dim === "auto" ? " (" + r.chosen + ")" : ""} | ${r.submodels ?? "-"} | ${r.naive ?? "-"} | ${r.optimized ?? "-"} | ${reduction} | ${r.gathers ?? "-"} | ${r.maxAbs !== undefined ? r.maxAbs.toExponential(1) : "-"} | ${r.ok ? "yes" : "NO " + (r.error ?? "")} |`);
}
if (flags.markdown) fs.writeFileSync(flags.markdown, lines.join("\n") + "\n");
else console.log(lines.join("\n"));
process.exit(failures ? 1 : 0);
