// Shared pieces of the ONNX Runtime comparison scripts: .npy I/O, the corpus, running cleave.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

const npyTypes = {
  "<f4": { array: Float32Array, ort: "float32" },
  "<i4": { array: Int32Array, ort: "int32" },
  "<i8": { array: BigInt64Array, ort: "int64" },
  "|b1": { array: Uint8Array, ort: "bool" },
};

/** Reads a little-endian, C-order .npy file into {descr, shape, data}. */
export function readNpy(file) {
  const bytes = fs.readFileSync(file);
  if (bytes.toString("latin1", 0, 6) !== "\x93NUMPY") throw new Error(`${file}: not a .npy file`);
  const major = bytes[6];
  const headerLength = major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const headerStart = major === 1 ? 10 : 12;
  const header = bytes.toString("latin1", headerStart, headerStart + headerLength);
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order`);
  const type = npyTypes[descr];
  if (!type || shapeText === undefined) throw new Error(`${file}: unsupported header ${header}`);
  const shape = shapeText.split(",").map((s) => s.trim()).filter((s) => s.length).map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const offset = headerStart + headerLength;
  const copy = bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + bytes.length);
  const data = new type.array(copy, 0, count);
  return { descr, shape, data, ortType: type.ort };
}

/** Writes a float32 array as a .npy file. */
export function writeNpyFloat32(file, shape, data) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(", ")}${
    shape.length === 1 ? "," : ""
  }), }`;
  const total = 10 + header.length + 1;
  header += " ".repeat((64 - (total % 64)) % 64) + "\n";
  const prefix = Buffer.alloc(10);
  prefix.write("\x93NUMPY", 0, "latin1");
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([prefix, Buffer.from(header, "latin1"), body]));
}

/** The corpus exported by bench/models/export_corpus.py: [{name, onnx, input, inputName, ...}]. */
export function loadCorpus(dir, only) {
  const manifestFile = path.join(dir, "manifest.json");
  if (!fs.existsSync(manifestFile)) {
    throw new Error(
      `${manifestFile} not found: export the corpus first (/usr/bin/python3 bench/models/export_corpus.py)`,
    );
  }
  const manifest = JSON.parse(fs.readFileSync(manifestFile, "utf8"));
  return Object.entries(manifest.models)
    .filter(([name]) => !only || only.includes(name))
    .map(([name, entry]) => ({
      name,
      onnx: path.join(dir, entry.file),
      input: path.join(dir, entry.input_file),
      inputName: entry.input_name,
      outputName: entry.output_name,
      torchOutput: path.join(dir, entry.torch_output_file),
      nodes: entry.node_count,
      // export_heldout.py lists every input and output (and an int8 output's quantum);
      // export_corpus.py's models have one of each.
      inputs: (entry.inputs ?? [{ name: entry.input_name, file: entry.input_file }]).map((i) => ({
        name: i.name,
        file: path.join(dir, i.file),
      })),
      outputs: (entry.outputs ?? [{ name: entry.output_name, torch_file: entry.torch_output_file }]).map(
        (o) => ({ name: o.name, torchFile: path.join(dir, o.torch_file), quantum: o.quantum ?? null }),
      ),
    }));
}

export const defaultCorpusDir = path.join(os.homedir(), ".cache/cleave/models");
export const defaultCleave = path.join(repoRoot, "build/cleave");

/**
 * Runs `cleave run ... --json` and returns the parsed report. A failure's message is cleave's
 * own last error line, so that reports can quote it; on success its stderr is passed through.
 */
export function runCleave(cleave, args, env = process.env) {
  const result = spawnSync(cleave, ["run", ...args, "--json"], {
    env,
    encoding: "utf8",
    maxBuffer: 64 << 20,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const said = String(result.stderr ?? "").trim();
  if (result.error) throw result.error;
  if (result.status !== 0) {
    throw new Error(said ? said.split("\n").pop() : `${cleave} exited with ${result.status ?? result.signal}`);
  }
  if (said) process.stderr.write(`${said}\n`);
  return JSON.parse(result.stdout);
}

/**
 * The environment of children that run on their AVX2 paths on an AVX-512 CPU: `lib` (built from
 * bench/device/avx2_cpuid.c) preloaded hides AVX-512 and AMX from CPUID, which is what ONNX
 * Runtime reads; oneDNN reads CPUID before the library can hide it, so it is capped by
 * ONEDNN_MAX_CPU_ISA (AVX2, or AVX2_VNNI where AVX2_CPUID_AVX_VNNI=1 leaves AVX-VNNI visible;
 * a value already set is kept).
 */
export function avx2MaskEnv(lib, base = process.env) {
  if (!fs.existsSync(lib)) {
    throw new Error(`--avx2-mask ${lib}: no such file (gcc -O2 -shared -fPIC bench/device/avx2_cpuid.c -o ${lib})`);
  }
  const isa = base.AVX2_CPUID_AVX_VNNI === "1" ? "AVX2_VNNI" : "AVX2";
  return {
    ...base,
    LD_PRELOAD: [path.resolve(lib), base.LD_PRELOAD].filter(Boolean).join(":"),
    ONEDNN_MAX_CPU_ISA: base.ONEDNN_MAX_CPU_ISA || isa,
  };
}

/**
 * Checks that both runtimes' children take their AVX2 paths under `env` (avx2MaskEnv): cleave
 * reports AVX2 vector code and oneDNN ISA, and a node process that loads ONNX Runtime had its
 * CPUIDs answered by the mask. Throws, saying which side did not, otherwise.
 */
export function checkAvx2Mask(cleave, env) {
  const info = execFileSync(cleave, ["info"], { env, encoding: "utf8" });
  const isa = /^ISA:\s*(\S+)/m.exec(info)?.[1] ?? "";
  const vector = /^vector code:\s*(\S+)/m.exec(info)?.[1] ?? "";
  if (!isa.startsWith("AVX2") || vector !== "avx2") {
    throw new Error(`--avx2-mask: ${cleave} info says ISA '${isa}', vector code '${vector}'; expected AVX2, avx2`);
  }
  const probe = spawnSync(process.execPath, ["-e", "require('onnxruntime-node')"], {
    cwd: path.dirname(fileURLToPath(import.meta.url)),
    env: { ...env, AVX2_CPUID_COUNT: "1" },
    encoding: "utf8",
  });
  const traps = Number(/avx2_cpuid: (\d+) CPUID traps/.exec(probe.stderr ?? "")?.[1] ?? 0);
  if (probe.status !== 0 || traps === 0) {
    const said = String(probe.stderr ?? "").trim().split("\n").pop();
    throw new Error(
      `--avx2-mask: ONNX Runtime's process did not run under the mask (exit ${probe.status ?? probe.signal}, ` +
        `${traps} CPUID traps${said ? `: ${said}` : ""}); the CPU needs the cpuid_fault flag`,
    );
  }
  return { isa, vector, ortTraps: traps };
}

/** The script's opening comment (its usage), as text without the comment marks. */
export function scriptUsage(file) {
  const lines = [];
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    if (!line.startsWith("//")) break;
    lines.push(line.replace(/^\/\/ ?/, ""));
  }
  return lines.join("\n");
}

/** Command-line flags as {name: value}; a flag without a value is true. --help or -h prints the
 * running script's usage and the flags with their defaults, and exits. */
export function parseFlags(argv, defaults) {
  const flags = { ...defaults };
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(scriptUsage(process.argv[1]));
    console.log("\nFlags and defaults:");
    for (const [key, value] of Object.entries(defaults)) console.log(`  --${key} ${JSON.stringify(value)}`);
    process.exit(0);
  }
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    if (!arg.startsWith("--")) throw new Error(`unexpected argument '${arg}'`);
    const key = arg.slice(2);
    if (!(key in defaults)) throw new Error(`unknown flag --${key}; known: ${Object.keys(defaults).join(", ")}`);
    const next = argv[i + 1];
    if (typeof defaults[key] === "boolean") flags[key] = true;
    else if (next === undefined) throw new Error(`--${key} needs a value`);
    else {
      flags[key] = typeof defaults[key] === "number" ? Number(next) : next;
      ++i;
    }
  }
  return flags;
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function geomean(values) {
  return Math.exp(values.reduce((sum, v) => sum + Math.log(v), 0) / values.length);
}
