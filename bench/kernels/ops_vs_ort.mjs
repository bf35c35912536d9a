// Time per op type in cleave (`cleave run --stats`) beside ONNX Runtime's per-node kernel times
// (bench/ort/profile_nodes.mjs), per model, at one thread count.
//
// Usage: node bench/kernels/ops_vs_ort.mjs [--cleave build/cleave] [--models DIR] [--only a,b]
//          [--threads 1] [--runs 60] [--markdown FILE]
// Both runtimes fuse differently (ORT's FusedConv is a Conv with its activation; cleave folds
// activations, hard swish and residual Adds into its Conv), so fused op types are counted under
// the op they start from, and the per-model total is the fair comparison.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { defaultCleave, loadCorpus, parseFlags } from "../ort/common.mjs";

const flags = parseFlags(process.argv.slice(2), {
  cleave: defaultCleave,
  models: path.join(os.homedir(), ".cache/cleave/families"),
  only: "",
  threads: 1,
  runs: 60,
  markdown: "",
});
const here = path.dirname(fileURLToPath(import.meta.url));
const canonical = { FusedConv: "Conv", FusedGemm: "Gemm", FusedMatMul: "MatMul" };

const rows = [];
for (const model of loadCorpus(flags.models, flags.only ? flags.only.split(",") : null)) {
  const ortLines = execFileSync(
    process.execPath,
    [path.join(here, "../ort/profile_nodes.mjs"), model.onnx, model.input, model.inputName,
      String(flags.threads), String(flags.runs)],
    { maxBuffer: 256 << 20 },
  ).toString().trim().split("\n").map((line) => JSON.parse(line));
  const ort = {};
  for (const entry of ortLines) {
    if (entry.op === undefined) continue;
    const op = canonical[entry.op] ?? entry.op;
    ort[op] = (ort[op] ?? 0) + entry.us / 1e3;
  }
  const report = JSON.parse(
    execFileSync(
      flags.cleave,
      ["run", model.onnx, "--input", `${model.inputName}=${model.input}`, "--threads",
        String(flags.threads), "--warmup", "3", "--repeat", String(Math.max(5, flags.runs / 6)),
        "--stats", "--json"],
      { maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "inherit"] },
    ),
  );
  const cleave = Object.fromEntries(report.ops.map((e) => [e.op, e.ms_per_run]));
  const ops = [...new Set([...Object.keys(ort), ...Object.keys(cleave)])].sort(
    (a, b) => Math.max(ort[b] ?? 0, cleave[b] ?? 0) - Math.max(ort[a] ?? 0, cleave[a] ?? 0),
  );
  const total = (m) => Object.values(m).reduce((s, v) => s + v, 0);
  rows.push({ model: model.name, ops, ort, cleave, ortTotal: total(ort), cleaveTotal: total(cleave) });
  console.log(`${model.name}: cleave ${total(cleave).toFixed(2)} ms in kernels, ORT ${total(ort).toFixed(2)} ms`);
  for (const op of ops.slice(0, 8)) {
    console.log(`  ${op.padEnd(20)} cleave ${(cleave[op] ?? 0).toFixed(3).padStart(8)}  ORT ${(ort[op] ?? 0).toFixed(3).padStart(8)}`);
  }
}

if (flags.markdown) {
  const cpu = execFileSync("sh", ["-c", "lscpu | grep -E 'Model name|CPU family'"]).toString();
  const lines = [
    `Made by: \`node bench/kernels/ops_vs_ort.mjs ${process.argv.slice(2).join(" ")}\` on ` +
      `${new Date().toISOString().slice(0, 16)}Z, onnxruntime-node 1.30.0; lscpu: ` +
      `${cpu.replace(/\s+/g, " ").trim()}; ${flags.threads} thread(s); load average ${os.loadavg()[0].toFixed(1)}.`,
    "",
    "ms per run summed over the nodes of each op type (ORT: median kernel time per node under its " +
      "profiler; cleave: `run --stats`, mean per run). Fused ops count under the op they start from.",
    "",
    "| model | op | cleave ms | ORT ms | cleave / ORT |",
    "|---|---|---:|---:|---:|",
  ];
  for (const r of rows) {
    lines.push(`| ${r.model} | **all** | ${r.cleaveTotal.toFixed(2)} | ${r.ortTotal.toFixed(2)} | ${(r.cleaveTotal / r.ortTotal).toFixed(2)} |`);
    for (const op of r.ops.slice(0, 6)) {
      const c = r.cleave[op] ?? 0, o = r.ort[op] ?? 0;
      lines.push(`| | ${op} | ${c.toFixed(3)} | ${o.toFixed(3)} | ${o > 0 && c > 0 ? (c / o).toFixed(2) : "-"} |`);
    }
  }
  fs.writeFileSync(flags.markdown, lines.join("\n") + "\n");
}
