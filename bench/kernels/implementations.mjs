// Which implementation runs each node, per model and per ISA: oneDNN's jit kernels, its gemm
// convolutions, its reference kernels ("ref:"), or cleave's own code.
//
// Usage: node bench/kernels/implementations.mjs [--cleave build/cleave] [--models DIR,DIR...]
//          [--only a,b] [--threads 1] [--repeat 3] [--markdown FILE]
// For every model in the manifests of the given directories it runs `cleave run --stats --json`
// twice: as the machine is, and with ONEDNN_MAX_CPU_ISA=AVX2 (oneDNN's AVX2 kernels). Each row
// counts nodes per implementation family with their share of the run's time; "slow" lists the
// op and implementation of every reference (ref) node that takes more than 1% of the run.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { defaultCleave, loadCorpus, parseFlags } from "../ort/common.mjs";

const flags = parseFlags(process.argv.slice(2), {
  cleave: defaultCleave,
  models: [".cache/cleave/models", ".cache/cleave/families"].map((d) => path.join(os.homedir(), d)).join(","),
  only: "",
  threads: 1,
  repeat: 3,
  markdown: "",
});

// "gemm" is a convolution run as im2col + sgemm, the fallback of convolutions no jit kernel
// takes; a MatMul's or Gemm's `gemm:jit` is oneDNN's jit sgemm, its AVX2 matmul, so "jit".
function family(op, implementation) {
  if (implementation === "cleave" || implementation.startsWith("cleave:")) return "cleave";
  if (implementation.startsWith("ref") || implementation.includes(":ref")) return "ref";
  if (implementation.includes("gemm") && op.startsWith("Conv")) return "gemm";
  return "jit";
}

const isas = [
  { name: "native", env: {} },
  { name: "AVX2", env: { ONEDNN_MAX_CPU_ISA: "AVX2" } },
];
const rows = [];
for (const dir of flags.models.split(",")) {
  if (!fs.existsSync(path.join(dir, "manifest.json"))) continue;
  for (const model of loadCorpus(dir, flags.only ? flags.only.split(",") : null)) {
    for (const isa of isas) {
      const env = { ...process.env, ...isa.env };
      if (!isa.env.ONEDNN_MAX_CPU_ISA) delete env.ONEDNN_MAX_CPU_ISA;
      let report;
      try {
        report = JSON.parse(
          execFileSync(
            flags.cleave,
            ["run", model.onnx, "--input", `${model.inputName}=${model.input}`, "--threads",
              String(flags.threads), "--warmup", "1", "--repeat", String(flags.repeat), "--stats",
              "--json"],
            { env, maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "inherit"], timeout: 600_000 },
          ),
        );
      } catch (error) {
        rows.push({ model: model.name, isa: isa.name, error: String(error.message).split("\n")[0] });
        console.log(`${model.name} ${isa.name}: failed (${rows.at(-1).error})`);
        continue;
      }
      const total = report.implementations.reduce((sum, e) => sum + e.ms_per_run, 0);
      const families = {};
      const slow = [];
      for (const entry of report.implementations) {
        const f = family(entry.op, entry.implementation);
        families[f] ??= { nodes: 0, ms: 0 };
        families[f].nodes += entry.nodes;
        families[f].ms += entry.ms_per_run;
        if (f === "ref" && entry.ms_per_run > 0.01 * total) {
          slow.push(`${entry.op} ${entry.implementation} (${entry.nodes}, ${((100 * entry.ms_per_run) / total).toFixed(1)}%)`);
        }
      }
      const row = { model: model.name, isa: isa.name, median_ms: report.latency_ms.median, families, slow,
        implementations: report.implementations };
      rows.push(row);
      const text = ["jit", "gemm", "ref", "cleave"]
        .filter((f) => families[f])
        .map((f) => `${f} ${families[f].nodes} (${((100 * families[f].ms) / total).toFixed(1)}%)`)
        .join(", ");
      console.log(`${model.name.padEnd(26)} ${isa.name.padEnd(6)} ${report.latency_ms.median.toFixed(2)} ms: ${text}` +
        (slow.length ? ` | SLOW: ${slow.join("; ")}` : ""));
    }
  }
}

if (flags.markdown) {
  const cpu = execFileSync("sh", ["-c", "lscpu | grep -E 'Model name|CPU family'"]).toString();
  const cell = (r, f) =>
    r.families?.[f] ? `${r.families[f].nodes} (${((100 * r.families[f].ms) / Object.values(r.families).reduce((s, e) => s + e.ms, 0)).toFixed(1)}%)` : "";
  const lines = [
    `Made by: \`node bench/kernels/implementations.mjs ${process.argv.slice(2).join(" ")}\` on ` +
      `${new Date().toISOString().slice(0, 16)}Z; lscpu: ${cpu.replace(/\s+/g, " ").trim()}; ${flags.threads} thread(s).`,
    "",
    "Nodes per implementation family (share of the run's time): jit = oneDNN's jit kernels " +
      "(jit, jit_dw, brgconv, ...), gemm = oneDNN's im2col + sgemm convolutions (a MatMul's `gemm:jit` sgemm counts as jit), ref = oneDNN's " +
      "reference kernels, cleave = kernels of cleave's own. AVX2: `ONEDNN_MAX_CPU_ISA=AVX2`.",
    "",
    "| model | ISA | median ms | jit | gemm | ref | cleave | ref nodes over 1% |",
    "|---|---|---:|---:|---:|---:|---:|---|",
    ...rows.map((r) =>
      r.error
        ? `| ${r.model} | ${r.isa} | failed: ${r.error} | | | | | |`
        : `| ${r.model} | ${r.isa} | ${r.median_ms.toFixed(2)} | ${cell(r, "jit")} | ${cell(r, "gemm")} | ` +
          `${cell(r, "ref")} | ${cell(r, "cleave")} | ${r.slow.join("; ")} |`,
    ),
    "",
  ];
  fs.writeFileSync(flags.markdown, lines.join("\n"));
}
