// Batch-1 latency and memory of cleave beside ONNX Runtime on the corpus, measured interleaved.
//
// Usage: node bench/ort/speed.mjs [--cleave build/cleave] [--models DIR] [--only a,b]
//          [--rounds 5] [--runs 10] [--warmup 3] [--markdown FILE] [--json FILE]
//          [--threads 1,2] [--baseline OTHER_BUILD/cleave] [--avx2-mask avx2_cpuid.so]
//          [--fresh-cache]
// Each round times, for 1 and then 2 threads, ONNX Runtime (a child ort_run.mjs) and cleave (a
// child `cleave run`); each loads the model, warms up and reports its own timed runs, so neither
// runtime's idle threads share the machine with the other's. The order of the two runtimes
// alternates between rounds so that drifts of a noisy machine hit both. Latency is
// the median over every timed run of every round; ratios are cleave / ORT. The paired ratio is
// the median over rounds of each round's cleave median over its ORT median: a slow spell of
// the machine that lasts one round then moves one ratio, not the answer. A round where cleave
// took fewer threads than asked (it does when other processes hold the cores) is counted.
// With --baseline, another build of cleave is timed in the same rounds (the three in rotating
// order): before and after a change, paired, with both ratios to ORT (console and --json).
// With --avx2-mask, every child runs on its AVX2 paths (the CPUID mask preloaded, oneDNN capped;
// common.mjs's avx2MaskEnv), checked once before the first round.
// With --fresh-cache, every cleave child starts from an empty CLEAVE_CACHE_DIR of its own, so
// each is a first run (the layout choice and the cost profile measured in it) and the memory
// column is a first run's peak.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import {
  avx2MaskEnv,
  checkAvx2Mask,
  defaultCleave,
  defaultCorpusDir,
  geomean,
  loadCorpus,
  median,
  parseFlags,
  runCleave,
} from "./common.mjs";

const flags = parseFlags(process.argv.slice(2), {
  cleave: defaultCleave,
  models: defaultCorpusDir,
  only: "",
  rounds: 5,
  runs: 10,
  warmup: 3,
  markdown: "",
  json: "",
  threads: "1,2",
  baseline: "",
  "avx2-mask": "",
  "fresh-cache": false,
});
const threadCounts = String(flags.threads).split(",").map(Number);
if (threadCounts.some((t) => !(t === 1 || t === 2))) throw new Error("--threads takes 1, 2 or 1,2");
if (flags.markdown && threadCounts.length !== 2) throw new Error("--markdown needs --threads 1,2");
const here = path.dirname(fileURLToPath(import.meta.url));
const childEnv = flags["avx2-mask"] ? avx2MaskEnv(flags["avx2-mask"]) : process.env;
if (flags["avx2-mask"]) {
  for (const binary of [flags.cleave, flags.baseline].filter(Boolean)) {
    const seen = checkAvx2Mask(binary, childEnv);
    process.stderr.write(
      `--avx2-mask: ${binary}: ISA ${seen.isa}, vector code ${seen.vector}; ONNX Runtime: ${seen.ortTraps} CPUIDs masked\n`,
    );
  }
}

function timeOrt(model, threads) {
  const text = execFileSync(process.execPath, [
    path.join(here, "ort_run.mjs"),
    model.onnx,
    model.input,
    model.inputName,
    String(threads),
    String(flags.warmup),
    String(flags.runs),
    // A model's further inputs (the held-out corpus lists every one).
    ...(model.inputs ?? []).slice(1).map((i) => `${i.name}=${i.file}`),
  ], { env: childEnv }).toString();
  return JSON.parse(text);
}

function timeCleave(model, threads, binary = flags.cleave) {
  const cache = flags["fresh-cache"] ? fs.mkdtempSync(path.join(os.tmpdir(), "cleave-cache-")) : "";
  const env = cache ? { ...childEnv, CLEAVE_CACHE_DIR: cache } : childEnv;
  try {
    return runCleaveOnce(model, threads, binary, env);
  } finally {
    if (cache) fs.rmSync(cache, { recursive: true, force: true });
  }
}

function runCleaveOnce(model, threads, binary, env) {
  const report = runCleave(binary, [
    model.onnx,
    ...(model.inputs ?? [{ name: model.inputName, file: model.input }]).flatMap((i) => [
      "--input",
      `${i.name}=${i.file}`,
    ]),
    "--threads",
    String(threads),
    "--warmup",
    String(flags.warmup),
    "--repeat",
    String(flags.runs),
  ], env);
  return report;
}

const corpus = loadCorpus(flags.models, flags.only ? flags.only.split(",") : null);
const results = [];
for (const model of corpus) {
  const times = { ort: { 1: [], 2: [] }, cleave: { 1: [], 2: [] }, baseline: { 1: [], 2: [] } };
  const roundRatios = { 1: [], 2: [] };
  const baselineRatios = { 1: [], 2: [] };
  const againstBaseline = { 1: [], 2: [] };
  const runtimes = flags.baseline ? ["ort", "cleave", "baseline"] : ["ort", "cleave"];
  const fewerThreads = { 1: 0, 2: 0 };
  let cleaveMemory = null;
  let ortMemory = null;
  for (let round = 0; round < flags.rounds; ++round) {
    for (const threads of threadCounts) {
      const roundMedian = {};
      const order = runtimes.map((_, i) => runtimes[(i + round) % runtimes.length]);
      for (const runtime of order) {
        if (runtime === "ort") {
          const report = timeOrt(model, threads);
          times.ort[threads].push(...report.runs);
          roundMedian.ort = median(report.runs);
          if (threads === 1) ortMemory = report;
        } else if (runtime === "baseline") {
          const report = timeCleave(model, threads, flags.baseline);
          times.baseline[threads].push(...report.latency_ms.runs);
          roundMedian.baseline = median(report.latency_ms.runs);
        } else {
          const report = timeCleave(model, threads);
          times.cleave[threads].push(...report.latency_ms.runs);
          roundMedian.cleave = median(report.latency_ms.runs);
          if (report.threads < threads) fewerThreads[threads] += 1;
          if (threads === 1) cleaveMemory = report;
        }
      }
      roundRatios[threads].push(roundMedian.cleave / roundMedian.ort);
      if (flags.baseline) {
        baselineRatios[threads].push(roundMedian.baseline / roundMedian.ort);
        againstBaseline[threads].push(roundMedian.cleave / roundMedian.baseline);
      }
    }
    process.stderr.write(`\r${model.name}: round ${round + 1}/${flags.rounds}   `);
  }
  const row = { name: model.name, nodes: model.nodes };
  for (const threads of threadCounts) {
    row[`cleave_${threads}`] = median(times.cleave[threads]);
    row[`ort_${threads}`] = median(times.ort[threads]);
    row[`ratio_${threads}`] = row[`cleave_${threads}`] / row[`ort_${threads}`];
    row[`paired_${threads}`] = median(roundRatios[threads]);
    row[`fewer_threads_${threads}`] = fewerThreads[threads];
    if (flags.baseline) {
      row[`baseline_${threads}`] = median(times.baseline[threads]);
      row[`baseline_paired_${threads}`] = median(baselineRatios[threads]);
      row[`paired_vs_baseline_${threads}`] = median(againstBaseline[threads]);
    }
  }
  // Memory is read in the 1-thread rounds only: with --threads 2 alone the row has none.
  if (cleaveMemory && ortMemory) {
    row.cleave_activation_mib = cleaveMemory.peak_activation_bytes / 2 ** 20;
    row.cleave_rss_mib = (cleaveMemory.peak_rss_bytes - cleaveMemory.baseline_rss_bytes) / 2 ** 20;
    row.ort_rss_mib = (ortMemory.peak_rss_bytes - ortMemory.baseline_rss_bytes) / 2 ** 20;
  }
  results.push(row);
  process.stderr.write("\n");
  for (const threads of flags.baseline ? threadCounts : []) {
    console.log(
      `${model.name.padEnd(20)} ${threads} thread(s): cleave ${row[`cleave_${threads}`].toFixed(2)} ms, ` +
        `baseline ${row[`baseline_${threads}`].toFixed(2)} ms, ORT ${row[`ort_${threads}`].toFixed(2)} ms | ` +
        `paired cleave/ORT ${row[`paired_${threads}`].toFixed(3)}, baseline/ORT ` +
        `${row[`baseline_paired_${threads}`].toFixed(3)}, cleave/baseline ` +
        `${row[`paired_vs_baseline_${threads}`].toFixed(3)} | rounds cleave/ORT ` +
        `${roundRatios[threads].map((r) => r.toFixed(2)).join(", ")}`,
    );
  }
  if (threadCounts.length !== 2) {
    if (flags.baseline) continue;
    const t = threadCounts[0];
    console.log(
      `${model.name.padEnd(20)} ${t} thread(s): cleave ${row[`cleave_${t}`].toFixed(2)} ms, ` +
        `ORT ${row[`ort_${t}`].toFixed(2)} ms, ratio ${row[`ratio_${t}`].toFixed(3)} | paired ` +
        `${row[`paired_${t}`].toFixed(3)}`,
    );
    continue;
  }
  console.log(
    `${model.name.padEnd(20)} 1 thread: cleave ${row.cleave_1.toFixed(2)} ms, ORT ${row.ort_1.toFixed(2)} ms, ` +
      `ratio ${row.ratio_1.toFixed(3)} | 2 threads: cleave ${row.cleave_2.toFixed(2)} ms, ` +
      `ORT ${row.ort_2.toFixed(2)} ms, ratio ${row.ratio_2.toFixed(3)} | paired ${row.paired_1.toFixed(3)}, ` +
      `${row.paired_2.toFixed(3)}` +
      (row.fewer_threads_2 > 0 ? ` | cleave took 1 thread in ${row.fewer_threads_2} round(s) at 2` : ""),
  );
}

const summary = {
  geomean_ratio_1: geomean(results.map((r) => r.ratio_1)),
  geomean_ratio_2: geomean(results.map((r) => r.ratio_2)),
  max_ratio_1: Math.max(...results.map((r) => r.ratio_1)),
  geomean_paired_1: geomean(results.map((r) => r.paired_1)),
  geomean_paired_2: geomean(results.map((r) => r.paired_2)),
};
if (threadCounts.length === 2) console.log(
  `geometric mean of cleave/ORT: ${summary.geomean_ratio_1.toFixed(3)} at 1 thread, ` +
    `${summary.geomean_ratio_2.toFixed(3)} at 2 threads; worst at 1 thread ${summary.max_ratio_1.toFixed(3)}; ` +
    `paired: ${summary.geomean_paired_1.toFixed(3)} and ${summary.geomean_paired_2.toFixed(3)}`,
);
const command = `node bench/ort/speed.mjs ${process.argv.slice(2).join(" ")}`.trim();
if (flags.json) fs.writeFileSync(flags.json, JSON.stringify({ command, results, summary }, null, 2) + "\n");
if (flags.markdown) {
  const ms = (v) => v.toFixed(2);
  const ratio = (v) => (v > 1.15 ? `**${v.toFixed(3)}**` : v.toFixed(3));
  const lines = [
    "# cleave vs ONNX Runtime: batch-1 latency and memory on the corpus",
    "",
    `Made by: \`${command}\` on ${new Date().toISOString().slice(0, 10)}, onnxruntime-node 1.30.0, ` +
      `${os.cpus()[0].model}, ${os.cpus().length} cores, nothing else running` +
      (flags["avx2-mask"]
        ? `; both runtimes on their AVX2 paths (CPUID mask ${path.basename(flags["avx2-mask"])}, ` +
          `ONEDNN_MAX_CPU_ISA=${childEnv.ONEDNN_MAX_CPU_ISA}).`
        : "."),
    "",
    `Each of ${flags.rounds} rounds runs, for 1 then 2 threads, ${flags.warmup} warm-up and ` +
      `${flags.runs} timed runs of ONNX Runtime (executionMode sequential, graphOptimizationLevel ` +
      "all, intraOpNumThreads 1 or 2) and of `cleave run --threads T`, alternating which goes first. " +
      "Latency is the median of all timed runs, in ms; ratio is cleave / ORT (below 1: cleave is " +
      "faster; bold: above 1.15); paired is the median over rounds of each round's cleave " +
      "median over its ORT median; a dagger marks a 2-thread row where cleave took 1 thread in " +
      "some round (other processes held the cores when it started). Memory: cleave's peak activation arena, and for both runtimes the " +
      "growth of the process's peak resident memory from just before the model is loaded to after " +
      "a run at 1 thread (weights, activations, workspaces, kernel caches)" +
      (flags["fresh-cache"]
        ? "; every cleave run started from an empty cache (--fresh-cache): a first run, its layout " +
          "choice and cost profile measured in it."
        : "."),
    "",
    "| model | nodes | cleave 1T | ORT 1T | ratio 1T | paired 1T | cleave 2T | ORT 2T | ratio 2T | paired 2T | cleave arena MiB | cleave RSS MiB | ORT RSS MiB |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...results.map(
      (r) =>
        `| ${r.name} | ${r.nodes} | ${ms(r.cleave_1)} | ${ms(r.ort_1)} | ${ratio(r.ratio_1)} | ` +
        `${ratio(r.paired_1)} | ${ms(r.cleave_2)} | ${ms(r.ort_2)} | ${ratio(r.ratio_2)}` +
        `${r.fewer_threads_2 > 0 ? " †" : ""} | ${ratio(r.paired_2)} | ${r.cleave_activation_mib.toFixed(1)} | ` +
        `${r.cleave_rss_mib.toFixed(1)} | ${r.ort_rss_mib.toFixed(1)} |`,
    ),
    `| **geometric mean** | | | | ${summary.geomean_ratio_1.toFixed(3)} | ${summary.geomean_paired_1.toFixed(3)} | | | ` +
      `${summary.geomean_ratio_2.toFixed(3)} | ${summary.geomean_paired_2.toFixed(3)} | | | |`,
    "",
  ];
  fs.writeFileSync(flags.markdown, lines.join("\n"));
}
