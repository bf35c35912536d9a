// Time from process start to first output: cleave beside ONNX Runtime, interleaved rounds.
//
// Usage: node bench/ort/first_output.mjs [--cleave build/cleave] [--models DIR] [--only a,b]
//          [--rounds 5] [--baseline OTHER_BUILD/cleave]
// Each round starts, per model, `cleave run MODEL --threads 1` (one run, no warm-up) and
// `node ort_run.mjs MODEL ... 1 0 1` (imports onnxruntime-node, creates a session, runs once),
// in alternating order, and times each child from spawn to exit: loading, preparing, the first
// run and the exit. cleave's layout measurement is cached first by one untimed run (a model's
// first run on a host measures it once, and later runs reuse it). Reported: the median per
// runtime and the median over rounds of each round's cleave / ORT ratio. With --baseline, a
// second cleave build (the one before a change) runs in the same rounds, the three in rotating
// order, so that before and after are paired with the same ORT runs under the same load.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { defaultCleave, defaultCorpusDir, loadCorpus, median, parseFlags } from "./common.mjs";

const flags = parseFlags(process.argv.slice(2), {
  cleave: defaultCleave,
  models: defaultCorpusDir,
  only: "",
  rounds: 5,
  baseline: "",
});
const here = path.dirname(fileURLToPath(import.meta.url));

function timed(command, args) {
  const start = process.hrtime.bigint();
  const result = spawnSync(command, args, { stdio: ["ignore", "ignore", "pipe"] });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.status !== 0) {
    throw new Error(`${path.basename(command)} failed: ${String(result.stderr).trim().split("\n").pop()}`);
  }
  return ms;
}

const cleaveArgs = (model) => [
  "run",
  model.onnx,
  ...model.inputs.flatMap((i) => ["--input", `${i.name}=${i.file}`]),
  "--threads",
  "1",
];
const ortArgs = (model) => [
  path.join(here, "ort_run.mjs"),
  model.onnx,
  model.input,
  model.inputName,
  "1",
  "0",
  "1",
  ...model.inputs.slice(1).map((i) => `${i.name}=${i.file}`),
];

const corpus = loadCorpus(flags.models, flags.only ? flags.only.split(",") : null);
const binaries = { cleave: flags.cleave, ...(flags.baseline ? { baseline: flags.baseline } : {}) };
for (const model of corpus) {
  for (const binary of Object.values(binaries)) timed(binary, cleaveArgs(model));  // Caches the layouts.
}
const runtimes = ["ort", ...Object.keys(binaries)];
const times = Object.fromEntries(
  corpus.map((m) => [m.name, Object.fromEntries(runtimes.flatMap((r) => [[r, []], [`${r}_ratio`, []]]))]),
);
for (let round = 0; round < flags.rounds; ++round) {
  for (const model of corpus) {
    const t = times[model.name];
    const order = runtimes.map((_, i) => runtimes[(i + round) % runtimes.length]);
    const ms = {};
    for (const runtime of order) {
      ms[runtime] =
        runtime === "ort" ? timed(process.execPath, ortArgs(model)) : timed(binaries[runtime], cleaveArgs(model));
      t[runtime].push(ms[runtime]);
    }
    for (const runtime of Object.keys(binaries)) t[`${runtime}_ratio`].push(ms[runtime] / ms.ort);
  }
  process.stderr.write(`\rround ${round + 1}/${flags.rounds}   `);
}
process.stderr.write("\n");
const before = flags.baseline ? " baseline ms | baseline / ORT |" : "";
console.log(`| model |${before} cleave ms | ORT ms | paired ratio | ratios per round |`);
console.log(`|---|${flags.baseline ? "---:|---:|" : ""}---:|---:|---:|---|`);
for (const model of corpus) {
  const t = times[model.name];
  const baseline = flags.baseline
    ? ` ${median(t.baseline).toFixed(0)} | ${median(t.baseline_ratio).toFixed(3)} |`
    : "";
  console.log(
    `| ${model.name} |${baseline} ${median(t.cleave).toFixed(0)} | ${median(t.ort).toFixed(0)} | ` +
      `${median(t.cleave_ratio).toFixed(3)} | ${t.cleave_ratio.map((r) => r.toFixed(2)).join(", ")} |`,
  );
}
