// Task-parallel benchmark (the Ramiel paper's Tables I, II, IV and VII, and hyperclustering) on the
// corpus and on generated randomly wired and Inception models, beside ONNX Runtime's best 2-thread
// latency.
//
// Usage: node bench/parallel/run.mjs [--cleave build/cleave] [--models DIR] [--only a,b]
//          [--rounds 3] [--workers 2] [--markdown docs/results/parallel.md] [--json FILE]
// Needs onnxruntime-node in bench/ort (see bench/ort/README.md). For each model, rounds of seven
// child processes, in alternating order: ONNX Runtime (intraOpNumThreads = workers), and
// `cleave run` sequential with 1 thread, with all threads intra-op, with `--plan auto`, with the
// lc and clone plans (one thread per worker), and with a switched-hypercluster plan of two
// samples. Each reports 10 timed runs after 3 warm-ups; latencies are medians over all rounds. Graph
// statistics, clusters and the bitwise check come from `cleave bench`. Planning time of a
// 1,500-node graph is measured on a generated RWNN.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import {
  defaultCleave,
  defaultCorpusDir,
  geomean,
  loadCorpus,
  median,
  parseFlags,
} from "../ort/common.mjs";

const flags = parseFlags(process.argv.slice(2), {
  cleave: defaultCleave,
  models: defaultCorpusDir,
  only: "",
  rounds: 3,
  workers: 2,
  markdown: "",
  json: "",
});
const here = path.dirname(fileURLToPath(import.meta.url));
const ortRun = path.join(here, "../ort/ort_run.mjs");
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "cleave-parallel-"));

// A cache of profiles and layout choices of this run only: a profile cached by an earlier run may
// have been made under other load or by an older build, and the predictions would not come from
// this run's measurements.
const cacheDir = path.join(scratch, "cache");
function cleave(args) {
  return execFileSync(flags.cleave, args, {
    encoding: "utf8",
    maxBuffer: 64 << 20,
    env: { ...process.env, CLEAVE_CACHE_DIR: cacheDir },
  });
}

// Generated models: randomly wired networks (DiviML's ER(0.2) and a Watts-Strogatz one) and
// stacks of Inception blocks, sized so that one conv takes ~0.1-1 ms here.
const generated = [
  { name: "rwnn_er_4x10", args: ["rwnn", "--modules", "4", "--nodes", "10", "--channels", "32", "--size", "56x56", "--seed", "1"] },
  { name: "rwnn_er_2x20", args: ["rwnn", "--modules", "2", "--nodes", "20", "--channels", "32", "--size", "56x56", "--seed", "2"] },
  { name: "rwnn_ws_3x16", args: ["rwnn", "--graph", "ws", "--modules", "3", "--nodes", "16", "--channels", "32", "--size", "56x56", "--seed", "3"] },
  { name: "inception_x4", args: ["inception", "--blocks", "4", "--channels", "128", "--size", "56x56"] },
  { name: "inception_x8", args: ["inception", "--blocks", "8", "--channels", "96", "--size", "28x28", "--double-3x3"] },
];

const models = [];
const only = flags.only ? flags.only.split(",") : null;
try {
  for (const model of loadCorpus(flags.models, only)) models.push({ ...model, kind: "corpus" });
} catch (error) {
  process.stderr.write(`corpus skipped: ${error.message}\n`);
}
for (const spec of generated) {
  if (only && !only.includes(spec.name)) continue;
  const file = path.join(scratch, `${spec.name}.onnx`);
  cleave(["gen", ...spec.args, "-o", file]);
  const summary = JSON.parse(cleave(["inspect", file, "--json"]));
  const input = summary.inputs[0];
  const shape = /\[(.*)\]/.exec(input.type)[1];
  models.push({ name: spec.name, onnx: file, input: `random:${shape}`, inputName: input.name, kind: "generated" });
}

function timeOrt(model) {
  const report = JSON.parse(
    execFileSync(process.execPath, [ortRun, model.onnx, model.input, model.inputName, String(flags.workers), "3", "10"]).toString(),
  );
  return report.runs;
}

// One `cleave run` child per timed variant: executors of different thread counts in one process
// leave OpenMP pools spinning that slow each other down (`cleave bench` interleaves in-process).
function timeCleave(model, variantArgs) {
  const input = model.input.startsWith("random:") ? [] : ["--input", `${model.inputName}=${model.input}`];
  const text = cleave(["run", model.onnx, ...input, ...variantArgs, "--warmup", "3", "--repeat", "10", "--json"]);
  return JSON.parse(text);
}

const variants = {
  sequential_1: ["--threads", "1"],
  intra_op: ["--threads", String(flags.workers)],
  planned: ["--plan", "auto", "--workers", String(flags.workers)],
};
// Plans of one strategy each, made once per model from this run's profile: the paper's Table IV
// (linear clustering), Table VII (with cloning) and its hyperclusters of two samples.
const fixedPlans = [
  { variant: "lc", strategy: "lc", samples: 1 },
  { variant: "clone", strategy: "clone", samples: 1 },
  { variant: "hypercluster", strategy: "switched-hypercluster", samples: 2 },
];
const allVariants = ["ort", "sequential_1", "intra_op", "planned", ...fixedPlans.map((p) => p.variant)];

const rows = [];
for (const model of models) {
  process.stderr.write(`${model.name} ...\n`);
  // Graph statistics, clusters, lc's plan time and the bitwise check of the lc and clone plans
  // (real 2-worker runs) against the sequential run; their timings are not used.
  const benchOf = (strategy) =>
    JSON.parse(
      cleave(["bench", model.onnx, "--workers", String(flags.workers), "--strategy", strategy, "--repeat", "1",
              "--warmup", "1", "--json"]),
    );
  const bench = benchOf("lc");
  const cloneBench = benchOf("clone");
  const modelVariants = { ...variants };
  for (const fixed of fixedPlans) {
    const file = path.join(scratch, `${model.name}.${fixed.variant}.json`);
    cleave(["plan", model.onnx, "--strategy", fixed.strategy, "--workers", String(flags.workers),
            "--samples", String(fixed.samples), "-o", file]);
    modelVariants[fixed.variant] = ["--plan", file];
  }
  const times = Object.fromEntries(allVariants.map((v) => [v, []]));
  // Per child process: its median. Some processes run whole at a lower speed (the host's other
  // load, not the variant), so the best process median is reported beside the overall median.
  const processMedians = Object.fromEntries(allVariants.map((v) => [v, []]));
  const plans = {};  // Variant -> the plan part of its last report (strategy, prediction).
  for (let round = 0; round < flags.rounds; ++round) {
    const order = round % 2 === 0 ? allVariants : [...allVariants].reverse();
    for (const variant of order) {
      let runs;
      if (variant === "ort") {
        runs = timeOrt(model);
      } else {
        const report = timeCleave(model, modelVariants[variant]);
        runs = report.latency_ms.runs;
        if (report.plan) plans[variant] = report.plan;
      }
      times[variant].push(...runs);
      processMedians[variant].push(median(runs));
    }
  }
  const row = {
    name: model.name,
    kind: model.kind,
    nodes: bench.nodes,
    weighted_cost: bench.weighted_cost,
    critical_path: bench.critical_path,
    parallelism: bench.parallelism,
    clusters_before_merge: bench.clusters_before_merge,
    clusters_after_merge: bench.clusters_after_merge,
    bitwise_equal: bench.bitwise_equal && cloneBench.bitwise_equal,
    lc_plan_ms: bench.plan_ms,
    strategy: plans.planned.strategy,
    predicted_ms: plans.planned.predicted_ms,
    sequential_1_thread_ms: median(times.sequential_1),
    sequential_intra_op_ms: median(times.intra_op),
    parallel_ms: median(times.planned),
    ort_ms: median(times.ort),
    process_medians_ms: processMedians,
    best_process_ratio: Math.min(...processMedians.planned) / Math.min(...processMedians.ort),
  };
  row.speedup_vs_1_thread = row.sequential_1_thread_ms / row.parallel_ms;
  row.prediction_error = row.predicted_ms / row.parallel_ms - 1;
  // A profile keeps its fastest block, so it is also set against the fastest process: that leaves
  // out the host's slower stretches during the timed runs (not during the profile).
  row.best_process_prediction_error = row.predicted_ms / Math.min(...processMedians.planned) - 1;
  // The fixed-strategy plans: measured and predicted latency (both samples for the hypercluster).
  for (const fixed of fixedPlans) {
    const measured = median(times[fixed.variant]);
    const plan = plans[fixed.variant];
    row[fixed.variant] = {
      strategy: plan.strategy,
      workers: plan.workers,
      samples: plan.samples,
      measured_ms: measured,
      predicted_ms: plan.predicted_ms,
      prediction_error: plan.predicted_ms / measured - 1,
      best_process_prediction_error: plan.predicted_ms / Math.min(...processMedians[fixed.variant]) - 1,
    };
  }
  rows.push(row);
  console.log(
    `${model.name.padEnd(20)} ${row.strategy.padEnd(10)} 1T ${row.sequential_1_thread_ms.toFixed(2)} ms, ` +
      `intra-op ${row.sequential_intra_op_ms.toFixed(2)} ms, planned ${row.parallel_ms.toFixed(2)} ms ` +
      `(predicted ${row.predicted_ms.toFixed(2)}), ORT ${row.ort_ms.toFixed(2)} ms, planned/ORT ${(row.parallel_ms / row.ort_ms).toFixed(3)}; ` +
      fixedPlans
        .map((f) => `${f.variant} ${row[f.variant].measured_ms.toFixed(2)} ms (predicted ${row[f.variant].predicted_ms.toFixed(2)})`)
        .join(", "),
  );
}

// Planning time on a big graph: 14 modules of 30 nodes (1,500 ONNX nodes after the passes), tiny tensors so profiling stays cheap.
const bigFile = path.join(scratch, "rwnn_1500.onnx");
cleave(["gen", "rwnn", "--modules", "14", "--nodes", "30", "--channels", "4", "--size", "4x4", "-o", bigFile]);
const planTimes = [];
let bigNodes = 0;
for (let i = 0; i < 5; ++i) {
  const plan = JSON.parse(cleave(["plan", bigFile, "--strategy", "lc", "--costs", "static", "--workers", String(flags.workers), "--json"]));
  planTimes.push(plan.planning_ms);
  bigNodes = plan.nodes;
}
const planning = { nodes: bigNodes, median_ms: median(planTimes), runs_ms: planTimes };
console.log(`planning a ${bigNodes}-node graph (lc, static costs): median ${planning.median_ms.toFixed(2)} ms`);
fs.rmSync(scratch, { recursive: true, force: true });

const command = `node bench/parallel/run.mjs ${process.argv.slice(2).join(" ")}`.trim();
if (flags.json) fs.writeFileSync(flags.json, JSON.stringify({ command, rows, planning }, null, 2) + "\n");
if (flags.markdown) {
  const ms = (v) => v.toFixed(2);
  const percent = (v) => `${(v * 100).toFixed(1)}%`;
  const lines = [
    "# Task-parallel plans on this machine: the Ramiel paper's Tables I, II, IV and VII, and hyperclusters",
    "",
    `Made by: \`${command}\` on ${new Date().toISOString().slice(0, 10)}, ${os.cpus()[0].model}, ` +
      `${os.cpus().length} cores, ${flags.workers} workers, onnxruntime-node 1.30.0.`,
    "",
    `Per model, ${flags.rounds} rounds, each timing seven child processes in alternating order (10 ` +
      "timed runs after 3 warm-ups each): `cleave run` with 1 thread, with " +
      `${flags.workers} intra-op threads, with the lc, clone and switched-hypercluster plans (tables ` +
      `below), and with \`--plan auto --workers ${flags.workers}\` (auto simulates ` +
      "sequential-with-intra-op, linear clustering and cloning on profiled costs and keeps the " +
      `fastest), and onnxruntime-node with intraOpNumThreads ${flags.workers} (its best setting here; its ` +
      "parallel executionMode is no faster). Latencies are medians over all rounds. Some child " +
      "processes run at a lower speed from start to end, whichever variant they time (other load " +
      "on the host), so \"best processes\" divides the lowest per-process median of the planned " +
      "run by ORT's lowest. Profiles (the costs behind the predictions) and layout choices are " +
      "made in this run, in a cache of its own. Weighted cost, " +
      "critical path, parallelism (the paper's static weights), LC clusters, LC plan time and the " +
      "bitwise check come from `cleave bench`; \"bitwise equal\" means the outputs of both the lc " +
      "and the clone plan, run on their workers, equal the sequential run's bit for bit.",
    "",
    "## Table I/II: graph and clusters",
    "",
    "| model | nodes | weighted cost | critical path | parallelism | LC clusters | after merging |",
    "|---|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.nodes} | ${r.weighted_cost} | ${r.critical_path} | ${r.parallelism.toFixed(2)} | ` +
        `${r.clusters_before_merge ?? "—"} | ${r.clusters_after_merge ?? "—"} |`,
    ),
    "",
    "## Table IV: latency (ms) and speedup",
    "",
    `| model | auto's plan | sequential 1T | intra-op ${flags.workers}T | planned | speedup vs 1T | predicted | prediction error | against the fastest process | LC plan time | ORT ${flags.workers}T | planned / ORT | best processes | bitwise equal |`,
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.strategy} | ${ms(r.sequential_1_thread_ms)} | ${ms(r.sequential_intra_op_ms)} | ` +
        `${ms(r.parallel_ms)} | ${r.speedup_vs_1_thread.toFixed(2)}x | ${ms(r.predicted_ms)} | ` +
        `${percent(r.prediction_error)} | ${percent(r.best_process_prediction_error)} | ${r.lc_plan_ms.toFixed(2)} ms | ${ms(r.ort_ms)} | ` +
        `${(r.parallel_ms / r.ort_ms).toFixed(3)} | ${r.best_process_ratio.toFixed(3)} | ` +
        `${r.bitwise_equal ? "yes" : "**no**"} |`,
    ),
    "",
    `Geometric mean of planned / ORT: ${geomean(rows.map((r) => r.parallel_ms / r.ort_ms)).toFixed(3)} ` +
      `(best processes: ${geomean(rows.map((r) => r.best_process_ratio)).toFixed(3)}).`,
    "",
    `## The paper's Tables IV and VII: linear clustering and cloning, ${flags.workers} workers of one thread`,
    "",
    "The plans of `cleave plan --strategy lc` and `--strategy clone` on this run's profile, run with " +
      "one thread per worker as in the paper (a model whose clusters merge into one runs on one " +
      "worker). Speedups are against the sequential run with 1 thread.",
    "",
    `| model | sequential 1T | lc | speedup | predicted | error | clone | speedup | predicted | error | intra-op ${flags.workers}T |`,
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.name} | ${ms(r.sequential_1_thread_ms)} | ${ms(r.lc.measured_ms)} (${r.lc.workers}w) | ` +
        `${(r.sequential_1_thread_ms / r.lc.measured_ms).toFixed(2)}x | ${ms(r.lc.predicted_ms)} | ` +
        `${percent(r.lc.prediction_error)} | ${ms(r.clone.measured_ms)} (${r.clone.workers}w) | ` +
        `${(r.sequential_1_thread_ms / r.clone.measured_ms).toFixed(2)}x | ${ms(r.clone.predicted_ms)} | ` +
        `${percent(r.clone.prediction_error)} | ${ms(r.sequential_intra_op_ms)} |`,
    ),
    "",
    `## Hyperclustering: two samples in flight on ${flags.workers} workers of one thread`,
    "",
    "`cleave plan --strategy switched-hypercluster --samples 2` interleaves the clusters of two " +
      "samples, pairing dissimilar ones; it is timed per run of both samples. Beside it, two runs " +
      `of one sample each with ${flags.workers} intra-op threads (cleave and ONNX Runtime): twice their ` +
      "median latency.",
    "",
    `| model | hyperclusters, 2 samples | predicted | error | cleave intra-op ${flags.workers}T, 2 samples | ` +
      `throughput gain | ORT ${flags.workers}T, 2 samples | hyperclusters / ORT |`,
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.name} | ${ms(r.hypercluster.measured_ms)} | ${ms(r.hypercluster.predicted_ms)} | ` +
        `${percent(r.hypercluster.prediction_error)} | ${ms(2 * r.sequential_intra_op_ms)} | ` +
        `${((2 * r.sequential_intra_op_ms) / r.hypercluster.measured_ms).toFixed(2)}x | ${ms(2 * r.ort_ms)} | ` +
        `${(r.hypercluster.measured_ms / (2 * r.ort_ms)).toFixed(3)} |`,
    ),
    "",
    ...(() => {
      const predictions = [
        ["auto's plan", (r) => r],
        ["lc", (r) => r.lc],
        ["clone", (r) => r.clone],
        ["hyperclusters", (r) => r.hypercluster],
      ];
      const within = (error) =>
        predictions
          .map(([name, of]) => `${name} ${rows.filter((r) => Math.abs(error(of(r))) <= 0.1).length} of ${rows.length}`)
          .join(", ");
      return [
        `Predictions within 10% of the measured latency: ${within((p) => p.prediction_error)}. ` +
          "Against the fastest child process of each variant (a profile keeps its fastest block; this " +
          `leaves out the host's slower stretches during the timed runs): ${within((p) => p.best_process_prediction_error)}.`,
        "",
      ];
    })(),
    `Planning a ${planning.nodes}-node randomly wired graph with \`--strategy lc --costs static\`: ` +
      `median ${planning.median_ms.toFixed(2)} ms over ${planTimes.length} runs.`,
    "",
  ];
  fs.writeFileSync(flags.markdown, lines.join("\n"));
}
