// Batch-1 latency at 2 threads while other processes keep cores busy: cleave (its default wait
// policy, fixed spin counts, sleeping at once) beside ONNX Runtime.
//
// Usage: node bench/load/run.mjs [--cleave build/cleave] [--models DIR] [--only a,b]
//          [--rounds 3] [--runs 10] [--warmup 3] [--threads 2] [--busy 0,1,2]
//          [--spins 1000,300000] [--nice N] [--ort-one-thread] [--cleave-one-thread]
//          [--plan STRATEGY]
//          [--markdown FILE]
// Each round goes through the busy counts; for each it starts that many `yes > /dev/null`
// processes (unpinned, as a user's other work would be), times every runtime in a fresh child
// process (order rotating between rounds), then stops them. Latency is the median over every
// timed run of every round. "cleave (default)" is the command as a user starts it: it picks its
// spin count from the host's load (runtime/wait_policy.h). "cleave spin N" sets GOMP_SPINCOUNT=N
// (300000 is libgomp's own default, 1000 cleave's fixed default before the load-based choice);
// "cleave fixed threads" keeps --threads whatever the load (CLEAVE_FIXED_THREADS, as before the
// default took only the cores other processes leave free). "cleave passive" sleeps at once (OMP_WAIT_POLICY=passive). With --nice N every child (the busy
// ones too) runs at that niceness, so that a shared host's other work disturbs the comparison less.
// --ort-one-thread adds ONNX Runtime on one intra-op thread, as cleave runs when the other
// processes leave it one core: what ORT's second thread buys it under that load.
// --cleave-one-thread adds `cleave run --threads 1`: what the default ran with every core held
// before its convolutions were cut into parts that its threads claim (ClaimPool).
// --plan STRATEGY runs every cleave column on the plan `cleave plan --strategy STRATEGY
// --workers <threads>` makes for each model (auto: what `cleave plan` writes by default), so
// that a plan's workers are measured under load: by default they run on the cores other
// processes leave free (plan_threads_for, runtime/wait_policy.h), "fixed threads" keeps the
// plan's counts.
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
  spins: "1000,300000",
  nice: 0,
  "ort-one-thread": false,
  "cleave-one-thread": false,
  plan: "",
  markdown: "",
});
// Children inherit the niceness (a negative one needs root).
if (flags.nice) os.setPriority(0, flags.nice);
const here = path.dirname(fileURLToPath(import.meta.url));
const ortRun = path.join(here, "../ort/ort_run.mjs");
const busyCounts = flags.busy.split(",").map(Number);
const spinCounts = String(flags.spins).split(",").filter(Boolean).map(Number);

// The environment a user would have: none of the wait-policy variables set.
function cleanEnvironment(extra = {}) {
  const env = { ...process.env };
  for (const name of ["OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS", "CLEAVE_FIXED_THREADS"])
    delete env[name];
  return { ...env, ...extra };
}

const ortTimer = (threads) => (model) =>
  JSON.parse(
    execFileSync(
      process.execPath,
      [ortRun, model.onnx, model.input, model.inputName, String(threads), String(flags.warmup),
        String(flags.runs)],
      { env: cleanEnvironment(), maxBuffer: 64 << 20 },
    ).toString(),
  ).runs;

// Per model, the plan file its cleave runs use (--plan), made once on the idle host.
const planDir = flags.plan ? fs.mkdtempSync(path.join(os.tmpdir(), "cleave-load-plans-")) : "";
process.on("exit", () => planDir && fs.rmSync(planDir, { recursive: true, force: true }));
function planArgs(model) {
  if (!flags.plan) return [];
  const file = path.join(planDir, `${model.name}.json`);
  if (!fs.existsSync(file)) {
    execFileSync(flags.cleave, ["plan", model.onnx, "--strategy", flags.plan, "--workers",
      String(flags.threads), "-o", file], { env: cleanEnvironment(), stdio: "ignore" });
  }
  return ["--plan", file];
}

const runtimes = [
  { name: "ort", label: "ORT", time: ortTimer(flags.threads) },
  ...[
    ["cleave", "cleave (default)", {}],
    ["cleave_fixed", "cleave fixed threads", { CLEAVE_FIXED_THREADS: "1" }],
    ...spinCounts.map((n) => [`cleave_spin_${n}`, `cleave spin ${n}`, { GOMP_SPINCOUNT: String(n) }]),
    ["cleave_passive", "cleave passive", { OMP_WAIT_POLICY: "passive" }],
    ...(flags["cleave-one-thread"] ? [["cleave_1", "cleave 1 thread", {}, 1]] : []),
  ].map(([name, label, extra, threads = flags.threads]) => ({
    name,
    label,
    time: (model) =>
      JSON.parse(
        execFileSync(
          flags.cleave,
          ["run", model.onnx, "--input", `${model.inputName}=${model.input}`, "--threads",
            String(threads), "--warmup", String(flags.warmup), "--repeat",
            String(flags.runs), "--json", ...planArgs(model)],
          { env: cleanEnvironment(extra), maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "inherit"] },
        ),
      ).latency_ms.runs,
  })),
  ...(flags["ort-one-thread"] ? [{ name: "ort_1", label: "ORT 1 thread", time: ortTimer(1) }] : []),
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

const cleaveRuntimes = runtimes.filter((r) => r.name !== "ort");
const loadBefore = os.loadavg().map((v) => v.toFixed(1)).join(" ");
const corpus = loadCorpus(flags.models, flags.only ? flags.only.split(",") : null);
const results = [];
let busy = [];
process.on("exit", () => stopBusy(busy));
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130));
for (const model of corpus) {
  planArgs(model);
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
    const row = { name: model.name, busy: b, ms: {}, ratio: {} };
    for (const r of runtimes) row.ms[r.name] = median(times[b][r.name]);
    for (const r of cleaveRuntimes) row.ratio[r.name] = row.ms[r.name] / row.ms.ort;
    results.push(row);
    console.log(
      `${model.name.padEnd(16)} ${b} busy: ORT ${row.ms.ort.toFixed(2)} ms, ` +
        cleaveRuntimes
          .map((r) => `${r.label} ${row.ms[r.name].toFixed(2)} ms (${row.ratio[r.name].toFixed(3)})`)
          .join(", "),
    );
  }
}

const command = `node bench/load/run.mjs ${process.argv.slice(2).join(" ")}`.trim();
const summary = busyCounts.map((b) => {
  const rows = results.filter((r) => r.busy === b);
  const ratio = Object.fromEntries(
    cleaveRuntimes.map((r) => [r.name, geomean(rows.map((row) => row.ratio[r.name]))]),
  );
  return { busy: b, ratio, worst: Math.max(...rows.map((row) => row.ratio.cleave)) };
});
for (const s of summary) {
  console.log(
    `${s.busy} busy: geometric mean cleave/ORT ${s.ratio.cleave.toFixed(3)} (worst ${s.worst.toFixed(3)}), ` +
      cleaveRuntimes.slice(1).map((r) => `${r.label.replace("cleave ", "")} ${s.ratio[r.name].toFixed(3)}`).join(", "),
  );
}
if (flags.markdown) {
  const cpu = execFileSync("sh", ["-c", "lscpu | grep -E 'Model name|CPU family'"]).toString();
  const lines = [
    `Made by: \`${command}\` on ${new Date().toISOString().slice(0, 16)}Z, onnxruntime-node 1.30.0, ` +
      `${os.cpus().length} cores, niceness ${flags.nice}; lscpu: ${cpu.replace(/\s+/g, " ").trim()}; load average before: ` +
      `${loadBefore}.`,
    "",
    (flags.plan ? `cleave runs the plan of \`cleave plan --strategy ${flags.plan} --workers ${flags.threads}\`. ` : "") +
    `${flags.threads} threads; median ms over ${flags.rounds} rounds x ${flags.runs} runs; ratio = cleave / ORT.`,
    "",
    `| model | busy | ORT | ${cleaveRuntimes.map((r) => `${r.label} | ratio`).join(" | ")} |`,
    `|---|---:|---:|${cleaveRuntimes.map(() => "---:|---:").join("|")}|`,
    ...results.map(
      (r) =>
        `| ${r.name} | ${r.busy} | ${r.ms.ort.toFixed(2)} | ` +
        cleaveRuntimes.map((c) => `${r.ms[c.name].toFixed(2)} | ${r.ratio[c.name].toFixed(3)}`).join(" | ") +
        " |",
    ),
    ...summary.map(
      (s) =>
        `| **geometric mean** | ${s.busy} | | ` +
        cleaveRuntimes.map((c) => ` | ${s.ratio[c.name].toFixed(3)}`).join(" | ") +
        " |",
    ),
    "",
  ];
  fs.writeFileSync(flags.markdown, lines.join("\n"));
}
