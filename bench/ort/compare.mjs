// Checks that cleave computes the same outputs as ONNX Runtime on every corpus model.
//
// Usage: node bench/ort/compare.mjs [--cleave build/cleave] [--models DIR] [--only a,b]
//                                   [--markdown docs/results/ort_correctness.md]
// A model matches when every element of every output satisfies
// |cleave - ort| <= 1e-3 * |ort| + 1e-4 * max|ort|; an int8 output whose manifest entry gives its
// quantum (bench/models/export_heldout.py) when no element differs by more than one quantum.
// Exits 1 when any model fails to run or to match.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import {
  defaultCleave,
  defaultCorpusDir,
  loadCorpus,
  parseFlags,
  readNpy,
  runCleave,
} from "./common.mjs";

const flags = parseFlags(process.argv.slice(2), {
  cleave: defaultCleave,
  models: defaultCorpusDir,
  only: "",
  markdown: "",
});
// Imported once the flags are read, so --help answers where onnxruntime-node is not installed.
const ort = (await import("onnxruntime-node")).default;
const relativeTolerance = 1e-3;
const absoluteToleranceFraction = 1e-4;

// Error statistics of `actual` against `expected` under the tolerance above; with `quantum` (an
// int8 output's scale), ONNX Runtime's int8 tolerance instead: no element off by more than one
// quantum (`offByOne` counts those that differ by one).
function compare(actualData, expectedData, quantum = null) {
  const actual = Float64Array.from(actualData, Number);
  const expected = Float64Array.from(expectedData, Number);
  if (actual.length !== expected.length) {
    return { ok: false, reason: `length ${actual.length} vs ${expected.length}` };
  }
  let largest = 0;
  for (const v of expected) largest = Math.max(largest, Math.abs(v));
  const absoluteTolerance = absoluteToleranceFraction * largest;
  let maxAbs = 0;
  let worstRatio = 0;
  let violations = 0;
  let offByOne = 0;
  for (let i = 0; i < expected.length; ++i) {
    const diff = Math.abs(actual[i] - expected[i]);
    const allowed = quantum
      ? quantum * 1.001
      : relativeTolerance * Math.abs(expected[i]) + absoluteTolerance;
    if (!(diff <= allowed)) ++violations;
    if (quantum && diff > quantum * 0.5 && diff <= allowed) ++offByOne;
    maxAbs = Math.max(maxAbs, diff);
    worstRatio = Math.max(worstRatio, allowed > 0 ? diff / allowed : diff > 0 ? Infinity : 0);
  }
  return { ok: violations === 0, maxAbs, worstRatio, violations, largest, offByOne, count: expected.length };
}

// The worst of several outputs' statistics (the first that fails, else the largest ratio).
function worst(stats) {
  return stats.reduce((a, b) => (!a.ok ? a : !b.ok ? b : b.worstRatio > a.worstRatio ? b : a));
}

const corpus = loadCorpus(flags.models, flags.only ? flags.only.split(",") : null);
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "cleave-ort-"));
const rows = [];
for (const model of corpus) {
  const row = { name: model.name, nodes: model.nodes };
  try {
    const session = await ort.InferenceSession.create(model.onnx, {
      intraOpNumThreads: 1,
      executionMode: "sequential",
      graphOptimizationLevel: "all",
    });
    const feeds = {};
    for (const i of model.inputs) {
      const input = readNpy(i.file);
      feeds[i.name] = new ort.Tensor(input.ortType, input.data, input.shape);
    }
    const ortOutputs = await session.run(feeds);
    const outputDir = path.join(scratch, model.name);
    const report = runCleave(flags.cleave, [
      model.onnx,
      ...model.inputs.flatMap((i) => ["--input", `${i.name}=${i.file}`]),
      "--output-dir",
      outputDir,
    ]);
    const shapes = [];
    const vsOrt = [];
    const ortVsTorch = [];
    const cleaveVsTorch = [];
    for (const output of model.outputs) {
      const file = report.outputs.find((o) => o.name === output.name)?.file;
      if (!file) throw new Error(`cleave wrote no output '${output.name}'`);
      const cleaveOutput = readNpy(file);
      const ortOutput = ortOutputs[output.name];
      shapes.push(cleaveOutput.shape.join("x"));
      if (cleaveOutput.shape.join(",") !== ortOutput.dims.join(",")) {
        throw new Error(`${output.name}: shape ${cleaveOutput.shape} vs ONNX Runtime's ${ortOutput.dims}`);
      }
      const torchOutput = readNpy(output.torchFile).data;
      vsOrt.push(compare(cleaveOutput.data, ortOutput.data, output.quantum));
      ortVsTorch.push(compare(ortOutput.data, torchOutput));
      cleaveVsTorch.push(compare(cleaveOutput.data, torchOutput));
    }
    row.shape = shapes.join(", ");
    row.quantum = model.outputs[0].quantum;
    row.vsOrt = worst(vsOrt);
    row.ortVsTorch = worst(ortVsTorch);
    row.cleaveVsTorch = worst(cleaveVsTorch);
    await session.release();
  } catch (error) {
    row.error = String(error.message ?? error).split("\n")[0];
  }
  rows.push(row);
  const status = row.error ? `ERROR ${row.error}` : row.vsOrt.ok ? "match" : "MISMATCH";
  const detail = row.vsOrt
    ? ` max|diff| ${row.vsOrt.maxAbs.toExponential(2)}, worst diff/allowed ${row.vsOrt.worstRatio.toFixed(3)}` +
      (row.quantum ? ` (int8: quantum ${row.quantum.toExponential(2)}, ${row.vsOrt.offByOne} of ${
        row.vsOrt.count} off by one, ${row.vsOrt.violations} by more)` : "")
    : "";
  console.log(`${model.name.padEnd(20)} ${status}${detail}`);
}
fs.rmSync(scratch, { recursive: true, force: true });

const failures = rows.filter((row) => row.error || !row.vsOrt.ok);
console.log(`${rows.length - failures.length} of ${rows.length} models match ONNX Runtime`);

if (flags.markdown) {
  const format = (c) => (c ? `${c.maxAbs.toExponential(2)} (${c.worstRatio.toFixed(3)})` : "—");
  const lines = [
    "# cleave vs ONNX Runtime: outputs on the corpus",
    "",
    `Made by: \`node bench/ort/compare.mjs --markdown docs/results/ort_correctness.md\` ` +
      `on ${new Date().toISOString().slice(0, 10)}, onnxruntime-node ${ort.env.versions?.common ?? "1.30"}, ` +
      `${os.cpus()[0].model}.`,
    "",
    "Inputs are the seeded inputs of bench/models/export_corpus.py; ONNX Runtime runs with " +
      "graphOptimizationLevel all, one thread. A model matches when every output element satisfies " +
      "|cleave − ORT| ≤ 1e-3·|ORT| + 1e-4·max|ORT|. Cells give max |difference| and, in brackets, " +
      "the worst difference as a fraction of the allowed one (≤ 1 passes). The PyTorch columns " +
      "compare each runtime with the exporter's own output, for scale.",
    "",
    "| model | nodes | output | cleave vs ORT | match | ORT vs PyTorch | cleave vs PyTorch |",
    "|---|---:|---|---:|---|---:|---:|",
    ...rows.map((row) =>
      row.error
        ? `| ${row.name} | ${row.nodes} | — | error: ${row.error} | no | — | — |`
        : `| ${row.name} | ${row.nodes} | ${row.shape} | ${format(row.vsOrt)} | ${
            row.vsOrt.ok ? "yes" : "**no**"
          } | ${format(row.ortVsTorch)} | ${format(row.cleaveVsTorch)} |`,
    ),
    "",
    `${rows.length - failures.length} of ${rows.length} models match.`,
    "",
  ];
  fs.writeFileSync(flags.markdown, lines.join("\n"));
}
process.exit(failures.length ? 1 : 0);
