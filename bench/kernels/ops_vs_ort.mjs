// Time per op type in cleave (`cleave profile`) beside ONNX Runtime's per-node kernel times
// (bench/ort/profile_nodes.mjs), per model, at one thread count, natively and with cleave capped
// to AVX2 (ONEDNN_MAX_CPU_ISA=AVX2; ONNX Runtime has no such switch and runs natively).
//
// Usage: node bench/kernels/ops_vs_ort.mjs [--cleave build/cleave] [--models DIR,DIR]
//          [--only a,b] [--threads 1] [--rounds 3] [--runs 60] [--isas native,AVX2]
//          [--markdown FILE]
// The host may be busy, so every figure is a ratio taken in one interleaved run: each round runs
// every model once in ORT and once per cleave ISA, in an order that rotates from round to round,
// and each whole-run time is the median over the rounds. Per op: ORT's median kernel time per
// node under its profiler, cleave's from `cleave profile` (each node timed alone, lowest block
// median, unscaled; the blocked convolution family, where `run` may pick another per model). Both runtimes fuse differently (ORT's FusedConv is
// a Conv with its activation; cleave folds activations, hard swish and residual Adds into its
// Conv), so fused op types count under the op they start from, ORT's layout conversions
// (ReorderInput/ReorderOutput) under "layout" (cleave's are inside the node that needs them),
// and the per-model run time is the fair comparison.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { defaultCleave, geomean, loadCorpus, median, parseFlags } from "../ort/common.mjs";

const flags = parseFlags(process.argv.slice(2), {
  cleave: defaultCleave,
  models: ["ops", "families"].map((d) => path.join(os.homedir(), ".cache/cleave", d)).join(","),
  only: "",
  threads: 1,
  rounds: 3,
  runs: 60,
  isas: "native,AVX2",
  markdown: "",
});
const here = path.dirname(fileURLToPath(import.meta.url));
const canonical = {
  FusedConv: "Conv",
  FusedGemm: "Gemm",
  FusedMatMul: "MatMul",
  Upsample: "Resize",  // ORT's channel-blocked (NCHWc) resize.
  ReorderInput: "layout",
  ReorderOutput: "layout",
};
const isas = flags.isas.split(",");
const runners = ["ORT", ...isas.map((isa) => `cleave ${isa}`)];

function runOrt(model) {
  const lines = execFileSync(
    process.execPath,
    [path.join(here, "../ort/profile_nodes.mjs"), model.onnx, model.input, model.inputName,
      String(flags.threads), String(flags.runs)],
    { maxBuffer: 256 << 20 },
  ).toString().trim().split("\n").map((line) => JSON.parse(line));
  const ops = {};
  let run = 0, fastest = 0;
  for (const entry of lines) {
    if (entry.run_us !== undefined) {
      run = entry.run_us / 1e3;
      fastest = entry.run_min_us / 1e3;
    }
    if (entry.op === undefined) continue;
    const op = canonical[entry.op] ?? entry.op;
    ops[op] = (ops[op] ?? 0) + entry.us / 1e3;
  }
  return { ops, run, fastest };
}

function cleaveEnv(isa) {
  const env = { ...process.env };
  delete env.ONEDNN_MAX_CPU_ISA;
  if (isa !== "native") env.ONEDNN_MAX_CPU_ISA = isa;
  return env;
}

// The median whole run of `cleave run` (as a user runs it: its default layouts).
function runCleave(model, isa) {
  const report = JSON.parse(
    execFileSync(
      flags.cleave,
      ["run", model.onnx, "--input", `${model.inputName}=${model.input}`, "--threads",
        String(flags.threads), "--warmup", "3", "--repeat", String(Math.max(5, Math.round(flags.runs / 3))),
        "--json"],
      { env: cleaveEnv(isa), maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "inherit"] },
    ),
  );
  return { run: report.latency_ms.median, fastest: report.latency_ms.min };
}

// Time per op type from `cleave profile`: each node timed alone, the lowest median of its
// blocks of runs, so that a busy host's preemptions fall out as they do from ORT's per-node
// medians (the means of `run --stats` keep them). The profile scales its node times so that
// they add up to its whole run, which on a busy host holds the preemptions again: that scale
// (printed on stderr) is taken back out.
function profileCleave(model, isa) {
  const result = spawnSync(
    flags.cleave,
    ["profile", model.onnx, "--max-threads", String(flags.threads), "--force-threads",
      "--no-cache", "--json"],
    { env: cleaveEnv(isa), maxBuffer: 64 << 20, encoding: "utf8" },
  );
  if (result.status !== 0) throw new Error(`cleave profile ${model.name}: ${result.stderr}`);
  const scaled = new RegExp(`${flags.threads} thread\\(s\\):.*scaled by ([0-9.]+)`).exec(result.stderr);
  const scale = scaled ? Number(scaled[1]) : 1;
  console.log(`  cleave profile ${model.name} ${isa}: node times scaled by ${scale} (taken out)`);
  const ops = {};
  for (const node of JSON.parse(result.stdout).nodes) {
    ops[node.op] = (ops[node.op] ?? 0) + (node.seconds[flags.threads - 1] * 1e3) / scale;
  }
  return ops;
}

const models = [];
for (const dir of flags.models.split(",")) {
  if (!fs.existsSync(path.join(dir, "manifest.json"))) continue;
  models.push(...loadCorpus(dir, flags.only ? flags.only.split(",") : null));
}
if (models.length === 0) throw new Error(`no model found in ${flags.models}`);

// samples[model][runner] = [{ops, run}, ...], one per round.
const samples = models.map(() => runners.map(() => []));
const loads = [];
for (let round = 0; round < flags.rounds; ++round) {
  loads.push(os.loadavg()[0]);
  models.forEach((model, m) => {
    for (let k = 0; k < runners.length; ++k) {
      const r = (k + round + m) % runners.length;
      if (r === 0) {
        samples[m][r].push(runOrt(model));
      } else {
        const isa = isas[r - 1];
        samples[m][r].push({ ...runCleave(model, isa), ops: profileCleave(model, isa) });
      }
    }
    const last = samples[m].map((s) => s.at(-1).run.toFixed(2)).join(" / ");
    console.log(`round ${round + 1} ${model.name}: ${runners.join(" / ")} ms = ${last}`);
  });
}
loads.push(os.loadavg()[0]);

// Per runner: the median over rounds of the run time and of each op type's time.
const rows = models.map((model, m) => {
  const summary = samples[m].map((rounds) => {
    const ops = {};
    for (const op of new Set(rounds.flatMap((s) => Object.keys(s.ops)))) {
      ops[op] = median(rounds.map((s) => s.ops[op] ?? 0));
    }
    return {
      run: median(rounds.map((s) => s.run)),
      fastest: Math.min(...rounds.map((s) => s.fastest)),
      ops,
    };
  });
  const ops = [...new Set(summary.flatMap((s) => Object.keys(s.ops)))].sort(
    (a, b) => Math.max(...summary.map((s) => s.ops[b] ?? 0)) -
      Math.max(...summary.map((s) => s.ops[a] ?? 0)),
  );
  const kernels = summary.map((s) => Object.values(s.ops).reduce((sum, v) => sum + v, 0));
  return { model: model.name, summary, ops, kernels };
});

const ratio = (c, o) => (o > 0 && c > 0 ? (c / o).toFixed(2) : "-");
for (const r of rows) {
  console.log(`${r.model}: run ms ${runners.map((n, i) => `${n} ${r.summary[i].run.toFixed(2)}`).join(", ")}`);
  for (const op of r.ops.slice(0, 6)) {
    console.log(`  ${op.padEnd(20)} ${r.summary.map((s) => (s.ops[op] ?? 0).toFixed(3).padStart(8)).join(" ")}`);
  }
}
const geo = isas.map((_, i) => geomean(rows.map((r) => r.summary[i + 1].run / r.summary[0].run)));
const geoKernels = isas.map((_, i) => geomean(rows.map((r) => r.kernels[i + 1] / r.kernels[0])));
const geoFastest = isas.map((_, i) => geomean(rows.map((r) => r.summary[i + 1].fastest / r.summary[0].fastest)));
console.log(`geometric mean of run-time ratios: ${isas.map((isa, i) => `${isa} ${geo[i].toFixed(3)}`).join(", ")}`);
console.log(`geometric mean of kernel-sum ratios: ${isas.map((isa, i) => `${isa} ${geoKernels[i].toFixed(3)}`).join(", ")}`);
console.log(`geometric mean of fastest-run ratios: ${isas.map((isa, i) => `${isa} ${geoFastest[i].toFixed(3)}`).join(", ")}`);

if (flags.markdown) {
  const cpu = execFileSync("sh", ["-c", "lscpu | grep -E 'Model name|CPU family'"]).toString();
  const avx512 = fs.readFileSync("/proc/cpuinfo", "utf8").includes(" avx512f") ? "AVX2 and AVX-512" : "AVX2, no AVX-512";
  const ortVersion = JSON.parse(
    fs.readFileSync(path.join(here, "../ort/node_modules/onnxruntime-node/package.json"), "utf8"),
  ).version;
  const head = ["model", "ORT ms", ...isas.flatMap((isa) => [`cleave ${isa} ms`, `${isa} / ORT`]),
    "ORT kernels ms", ...isas.flatMap((isa) => [`cleave ${isa} kernels ms`, `${isa} / ORT`]),
    "ORT fastest ms", ...isas.flatMap((isa) => [`cleave ${isa} fastest ms`, `${isa} / ORT`])];
  const lines = [
    `Made by: \`node bench/kernels/ops_vs_ort.mjs ${process.argv.slice(2).join(" ")}\` on ` +
      `${new Date().toISOString().slice(0, 16)}Z, onnxruntime-node ${ortVersion}; lscpu: ` +
      `${cpu.replace(/\s+/g, " ").trim()}, ${avx512}; ${flags.threads} thread(s); ` +
      `${flags.rounds} interleaved rounds; load average ${loads.map((l) => l.toFixed(1)).join(", ")} ` +
      "at the start of each round and at the end.",
    "",
    "Run: median over the rounds of each runtime's median whole run (ORT under its session " +
      "profiler, cleave `run` with its default layouts); on a busy host it includes preemptions. " +
      "Kernels: the sum of the per-node times below, which mostly do not. Fastest: the fastest " +
      "whole run over all rounds, the least disturbed one.",
    "",
    `| ${head.join(" | ")} |`,
    `|---|${head.slice(1).map(() => "---:").join("|")}|`,
  ];
  for (const r of rows) {
    const o = r.summary[0].run;
    const cells = isas.flatMap((_, i) => [r.summary[i + 1].run.toFixed(2), ratio(r.summary[i + 1].run, o)]);
    const kernelCells = isas.flatMap((_, i) => [r.kernels[i + 1].toFixed(2), ratio(r.kernels[i + 1], r.kernels[0])]);
    const f = r.summary[0].fastest;
    const fastCells = isas.flatMap((_, i) => [r.summary[i + 1].fastest.toFixed(2), ratio(r.summary[i + 1].fastest, f)]);
    lines.push(`| ${r.model} | ${o.toFixed(2)} | ${cells.join(" | ")} | ${r.kernels[0].toFixed(2)} | ` +
      `${kernelCells.join(" | ")} | ${f.toFixed(2)} | ${fastCells.join(" | ")} |`);
  }
  lines.push(`| geometric mean | | ${isas.flatMap((_, i) => ["", geo[i].toFixed(2)]).join(" | ")} | | ` +
    `${isas.flatMap((_, i) => ["", geoKernels[i].toFixed(2)]).join(" | ")} | | ` +
    `${isas.flatMap((_, i) => ["", geoFastest[i].toFixed(2)]).join(" | ")} |`);
  lines.push(
    "",
    "Per op type: ms per run summed over the nodes of that type (ORT: median kernel time per " +
      "node; cleave: `cleave profile`'s time per node, without the scale it applies to match a " +
      "whole run), the six largest per model.",
    "",
    `| model | op | ORT ms | ${isas.flatMap((isa) => [`cleave ${isa} ms`, `${isa} / ORT`]).join(" | ")} |`,
    `|---|---|---:|${isas.flatMap(() => ["---:", "---:"]).join("|")}|`,
  );
  for (const r of rows) {
    r.ops.slice(0, 6).forEach((op, k) => {
      const o = r.summary[0].ops[op] ?? 0;
      const cells = isas.flatMap((_, i) => {
        const c = r.summary[i + 1].ops[op] ?? 0;
        return [c.toFixed(3), ratio(c, o)];
      });
      lines.push(`| ${k === 0 ? r.model : ""} | ${op} | ${o.toFixed(3)} | ${cells.join(" | ")} |`);
    });
  }
  fs.writeFileSync(flags.markdown, lines.join("\n") + "\n");
}
