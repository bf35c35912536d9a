// Batch-1 latency at 2 threads while 0, 1 and 2 other processes keep a core busy: cleave
// (its default wait policy, and libgomp's old default spin count) beside ONNX Runtime.
//
// Usage: node bench/load/run.mjs [--cleave build/cleave] [--models DIR] [--only a,b]
//          [--rounds 3] [--runs 10] [--warmup 3] [--threads 2] [--busy 0,1,2] [--nice N]
//          [--markdown FILE]
// Each round goes through the busy counts; for each it starts that many `yes > /dev/null`
// processes (unpinned, as a user's other work would be), times every runtime in a fresh child
// process (order rotating between rounds), then stops them. Latency is the median over every
// timed run of every round. "cleave spin 300000" is cleave with GOMP_SPINCOUNT=300000, libgomp's
// own default and what cleave ran with before it chose a bounded spin count itself; "cleave
// passive" sleeps at once (OMP_WAIT_POLICY=passive). With --nice N every child (the busy ones too)
// runs at that niceness, so that a shared host's other work disturbs the comparison less.
import { execFileSync, spawn } from "node:child_process";
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
  runs: 10,
  warmup: 3,
  threads: 2,
  busy: "0,1,2",
  nice: 0,
  markdown: "",
});
// Children inherit the niceness (a negative one needs root).
if (flags.nice) os.setPriority(0, flags.nice);
const here = path.dirname(fileURLToPath(import.meta.url));
const ortRun = path.join(here, "../ort/ort_run.mjs");
const busyCounts = flags.busy.split(",").map(Number);

// The environment a user would have: none of the wait-policy variables set.
function cleanEnvironment(extra = {}) {
  const env = { ...process.env };
  for (const name of ["OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS"]) delete env[name];
  return { ...env, ...extra };
}

const runtimes = [
  {
    name: "ort",
    label: "ORT",
    time: (model) =>
      JSON.parse(
        execFileSync(
          process.execPath,
          [ortRun, model.onnx, model.input, model.inputName, String(flags.threads),
            String(flags.warmup), String(flags.runs)],
          { env: cleanEnvironment(), maxBuffer: 64 << 20 },
        ).toString(),
      ).runs,
  },
  ...[
    ["cleave", "cleave (default)", {}],
    ["cleave_spin", "cleave spin 300000", { GOMP_SPINCOUNT: "300000" }],
    ["cleave_passive", "cleave passive", { OMP_WAIT_POLICY: "passive" }],
  ].map(([name, label, extra]) => ({
    name,
    label,
    time: (model) =>
      JSON.parse(
        execFileSync(
          flags.cleave,
          ["run", model.onnx, "--input", `${model.inputName}=${model.input}`, "--threads",
            String(flags.threads), "--warmup", String(flags.warmup), "--repeat",
            String(flags.runs), "--json"],
          { env: cleanEnvironment(extra), maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "inherit"] },
        ),
      ).latency_ms.runs,
  })),
];

function startBusy(count) {
  const children = [];
  for (let i = 0; i < count; ++i) {
    children.push(spawn("sh", ["-c", "exec yes > /dev/null"], { stdio: "ignore" }));
  }
  return children;
}

function stopBusy(children) {
  for (const child of children) child.kill("SIGKILL");
}

const corpus = loadCorpus(flags.models, flags.only ? flags.only.split(",") : null);
const results = [];
let busy = [];
process.on("exit", () => stopBusy(busy));
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130));
for (const model of corpus) {
  const times = {};
  for (const b of busyCounts) {
    times[b] = Object.fromEntries(runtimes.map((r) => [r.name, []]));
  }
  for (let round = 0; round < flags.rounds; ++round) {
    for (const b of busyCounts) {
      busy = startBusy(b);
      try {
        for (let k = 0; k < runtimes.length; ++k) {
          const runtime = runtimes[(k + round) % runtimes.length];
          times[b][runtime.name].push(...runtime.time(model));
        }
      } finally {
        stopBusy(busy);
        busy = [];
      }
      process.stderr.write(`\r${model.name}: round ${round + 1}/${flags.rounds}, ${b} busy   `);
    }
  }
  process.stderr.write("\n");
  for (const b of busyCounts) {
    const row = { name: model.name, busy: b };
    for (const r of runtimes) row[r.name] = median(times[b][r.name]);
    row.ratio = row.cleave / row.ort;
    row.ratio_spin = row.cleave_spin / row.ort;
    row.ratio_passive = row.cleave_passive / row.ort;
    results.push(row);
    console.log(
      `${model.name.padEnd(16)} ${b} busy: ORT ${row.ort.toFixed(2)} ms, cleave ${row.cleave.toFixed(2)} ms ` +
        `(${row.ratio.toFixed(3)}), cleave spin 300000 ${row.cleave_spin.toFixed(2)} ms (${row.ratio_spin.toFixed(3)}), ` +
        `cleave passive ${row.cleave_passive.toFixed(2)} ms (${row.ratio_passive.toFixed(3)})`,
    );
  }
}

const command = `node bench/load/run.mjs ${process.argv.slice(2).join(" ")}`.trim();
const summary = busyCounts.map((b) => {
  const rows = results.filter((r) => r.busy === b);
  return {
    busy: b,
    ratio: geomean(rows.map((r) => r.ratio)),
    ratio_spin: geomean(rows.map((r) => r.ratio_spin)),
    ratio_passive: geomean(rows.map((r) => r.ratio_passive)),
    worst: Math.max(...rows.map((r) => r.ratio)),
  };
});
for (const s of summary) {
  console.log(
    `${s.busy} busy: geometric mean cleave/ORT ${s.ratio.toFixed(3)} (worst ${s.worst.toFixed(3)}), ` +
      `with spin 300000 ${s.ratio_spin.toFixed(3)}, passive ${s.ratio_passive.toFixed(3)}`,
  );
}
if (flags.markdown) {
  const cpu = execFileSync("sh", ["-c", "lscpu | grep -E 'Model name|CPU family'"]).toString();
  const lines = [
    `Made by: \`${command}\` on ${new Date().toISOString().slice(0, 16)}Z, onnxruntime-node 1.30.0, ` +
      `${os.cpus().length} cores, niceness ${flags.nice}; lscpu: ${cpu.replace(/\s+/g, " ").trim()}; load average before: ` +
      `${os.loadavg().map((v) => v.toFixed(1)).join(" ")}.`,
    "",
    `${flags.threads} threads; median ms over ${flags.rounds} rounds x ${flags.runs} runs; ratio = cleave / ORT.`,
    "",
    "| model | busy | ORT | cleave (default) | ratio | cleave spin 300000 | ratio | cleave passive | ratio |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...results.map(
      (r) =>
        `| ${r.name} | ${r.busy} | ${r.ort.toFixed(2)} | ${r.cleave.toFixed(2)} | ${r.ratio.toFixed(3)} | ` +
        `${r.cleave_spin.toFixed(2)} | ${r.ratio_spin.toFixed(3)} | ${r.cleave_passive.toFixed(2)} | ${r.ratio_passive.toFixed(3)} |`,
    ),
    ...summary.map(
      (s) =>
        `| **geometric mean** | ${s.busy} | | | ${s.ratio.toFixed(3)} | | ${s.ratio_spin.toFixed(3)} | | ${s.ratio_passive.toFixed(3)} |`,
    ),
    "",
  ];
  fs.writeFileSync(flags.markdown, lines.join("\n"));
}
