// Peak resident memory of cleave beside ONNX Runtime, one definition for both, per model.
//
// Usage: node bench/ort/memory.mjs [--cleave build/cleave] [--models DIR] [--only a,b]
//          [--runs 1] [--layouts auto] [--json FILE]
// Each runtime runs in a fresh child at 1 thread: cleave's `cleave run --json` and ONNX
// Runtime's ort_run.mjs, each with one warm-up run and --runs timed ones. Memory is the growth
// of the process's peak resident set (getrusage's ru_maxrss) from just before the model is
// loaded to after the last run: weights, activations, workspaces and kernel caches, not the
// binary and its libraries (which differ: node against a C++ executable). cleave's report adds
// the bytes of packed weight copies alive at the end and of loaded weights released.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { defaultCleave, defaultCorpusDir, loadCorpus, parseFlags, runCleave } from "./common.mjs";

const flags = parseFlags(process.argv.slice(2), {
  cleave: defaultCleave,
  models: defaultCorpusDir,
  only: "",
  runs: 1,
  layouts: "auto",
  json: "",
});
const here = path.dirname(fileURLToPath(import.meta.url));
const mib = (bytes) => bytes / 2 ** 20;

function ortMemory(model) {
  const text = execFileSync(process.execPath, [
    path.join(here, "ort_run.mjs"),
    model.onnx,
    model.input,
    model.inputName,
    "1",
    "1",
    String(flags.runs),
    ...(model.inputs ?? []).slice(1).map((i) => `${i.name}=${i.file}`),
  ]).toString();
  const report = JSON.parse(text);
  return mib(report.peak_rss_bytes - report.baseline_rss_bytes);
}

function cleaveMemory(model) {
  const report = runCleave(flags.cleave, [
    model.onnx,
    ...model.inputs.flatMap((i) => ["--input", `${i.name}=${i.file}`]),
    "--threads",
    "1",
    "--warmup",
    "1",
    "--repeat",
    String(flags.runs),
    "--layouts",
    flags.layouts,
  ]);
  return {
    rss: mib(report.peak_rss_bytes - report.baseline_rss_bytes),
    packed: mib(report.packed_weight_bytes),
    released: mib(report.released_weight_bytes),
    arena: mib(report.peak_activation_bytes),
  };
}

const rows = [];
for (const model of loadCorpus(flags.models, flags.only ? flags.only.split(",") : null)) {
  const cleave = cleaveMemory(model);
  const ort = ortMemory(model);
  const row = {
    name: model.name,
    file_mib: mib(fs.statSync(model.onnx).size),
    cleave_rss_mib: cleave.rss,
    ort_rss_mib: ort,
    ratio: cleave.rss / ort,
    packed_mib: cleave.packed,
    released_mib: cleave.released,
    arena_mib: cleave.arena,
  };
  rows.push(row);
  console.log(
    `${model.name.padEnd(40)} file ${row.file_mib.toFixed(1)} MiB | cleave ${cleave.rss.toFixed(1)} ` +
      `ORT ${ort.toFixed(1)} MiB (ratio ${row.ratio.toFixed(3)}) | packed ${cleave.packed.toFixed(1)}, ` +
      `released ${cleave.released.toFixed(1)}, arena ${cleave.arena.toFixed(1)} MiB`,
  );
}
if (flags.json) fs.writeFileSync(flags.json, JSON.stringify(rows, null, 2));
