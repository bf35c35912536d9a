// Runs the ONNX backend test cases in ONNX Runtime's CPU provider and writes an expectations file.
//
//   node bench/ort/conformance.mjs [--data DIR] [--out FILE] [--filter TEXT] [--timeout S]
//
// Each case runs in a child process (this script with --case), so a crash or hang of one case
// is a result ("error") rather than the end of the run. The comparison is cleave's own
// (src/conformance/conformance.cc): floats within 1e-5 + 1e-3·|expected|, NaN equals NaN,
// everything else exact; the same output types and shapes.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { repoRoot } from "./common.mjs";

const relativeTolerance = 1e-3;
const absoluteTolerance = 1e-5;

// ---- A minimal protobuf reader, enough for TensorProto (onnx.proto3 field numbers). ----

function readVarint(buf, pos) {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    const byte = buf[pos.at++];
    result |= BigInt(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return result;
    shift += 7n;
  }
}

/** Splits a message into [{field, wire, value}] (value: BigInt for varints, a Buffer otherwise). */
function readFields(buf) {
  const pos = { at: 0 };
  const fields = [];
  while (pos.at < buf.length) {
    const key = Number(readVarint(buf, pos));
    const field = key >> 3;
    const wire = key & 7;
    if (wire === 0) {
      fields.push({ field, wire, value: readVarint(buf, pos) });
    } else if (wire === 1) {
      fields.push({ field, wire, value: buf.subarray(pos.at, pos.at + 8) });
      pos.at += 8;
    } else if (wire === 2) {
      const length = Number(readVarint(buf, pos));
      fields.push({ field, wire, value: buf.subarray(pos.at, pos.at + length) });
      pos.at += length;
    } else if (wire === 5) {
      fields.push({ field, wire, value: buf.subarray(pos.at, pos.at + 4) });
      pos.at += 4;
    } else {
      throw new Error(`wire type ${wire} in a TensorProto`);
    }
  }
  return fields;
}

function packedVarints(fields, number) {
  const values = [];
  for (const f of fields.filter((f) => f.field === number)) {
    if (f.wire === 0) {
      values.push(f.value);
    } else {
      const pos = { at: 0 };
      while (pos.at < f.value.length) values.push(readVarint(f.value, pos));
    }
  }
  return values;
}

function packedFixed(fields, number, width, read) {
  const values = [];
  for (const f of fields.filter((f) => f.field === number)) {
    for (let i = 0; i + width <= f.value.length; i += width) values.push(read(f.value, i));
  }
  return values;
}

// ONNX data_type -> ORT tensor type and typed array.
const onnxTypes = {
  1: { ort: "float32", array: Float32Array },
  2: { ort: "uint8", array: Uint8Array },
  3: { ort: "int8", array: Int8Array },
  4: { ort: "uint16", array: Uint16Array },
  5: { ort: "int16", array: Int16Array },
  6: { ort: "int32", array: Int32Array },
  7: { ort: "int64", array: BigInt64Array },
  8: { ort: "string", array: Array },
  9: { ort: "bool", array: Uint8Array },
  10: { ort: "float16", array: Uint16Array },
  11: { ort: "float64", array: Float64Array },
  12: { ort: "uint32", array: Uint32Array },
  13: { ort: "uint64", array: BigUint64Array },
  16: { ort: "bfloat16", array: Uint16Array },
};

const toSigned64 = (v) => BigInt.asIntN(64, v);

/** Parses a TensorProto file into {name, type, dims, data}. Throws on other protos. */
function readTensorProto(file) {
  const fields = readFields(fs.readFileSync(file));
  const dims = packedVarints(fields, 1).map((v) => Number(toSigned64(v)));
  const dataType = Number(fields.find((f) => f.field === 2)?.value ?? 0n);
  const nameField = fields.find((f) => f.field === 8);
  if (fields.some((f) => f.field === 3)) throw new Error("segmented tensor");
  if (fields.some((f) => f.field === 13 || f.field === 14)) throw new Error("external data");
  const type = onnxTypes[dataType];
  if (!type) throw new Error(`data_type ${dataType}`);
  const count = dims.reduce((a, b) => a * b, 1);
  if (!Number.isSafeInteger(count) || count < 0 || count > 1 << 28)
    throw new Error(`not a TensorProto (a sequence or optional?): dims [${dims}]`);
  const raw = fields.find((f) => f.field === 9)?.value;
  let data;
  if (dataType === 8) {
    data = fields.filter((f) => f.field === 6).map((f) => f.value.toString("utf8"));
  } else if (raw) {
    const copy = new Uint8Array(raw).buffer;
    data = new type.array(copy, 0, count);
  } else if (dataType === 1) {
    data = Float32Array.from(packedFixed(fields, 4, 4, (b, i) => b.readFloatLE(i)));
  } else if (dataType === 11) {
    data = Float64Array.from(packedFixed(fields, 10, 8, (b, i) => b.readDoubleLE(i)));
  } else if (dataType === 7) {
    data = BigInt64Array.from(packedVarints(fields, 7).map(toSigned64));
  } else if (dataType === 12 || dataType === 13) {
    const values = packedVarints(fields, 11);
    data = dataType === 13 ? BigUint64Array.from(values) : Uint32Array.from(values.map(Number));
  } else {
    // int32_data carries int32, and every narrower integer, bool, float16 and bfloat16.
    const values = packedVarints(fields, 5).map((v) => Number(BigInt.asIntN(32, v)));
    data = type.array.from(values);
  }
  if (data.length !== count) throw new Error(`${data.length} elements for dims [${dims}]`);
  return { name: nameField ? nameField.value.toString("utf8") : "", type: type.ort, dims, data };
}

// ---- Comparison (cleave's rule) ----

function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (mantissa / 1024);
  if (exponent === 31) return mantissa ? NaN : sign * Infinity;
  return sign * 2 ** (exponent - 15) * (1 + mantissa / 1024);
}

function bfloatToFloat(b) {
  const view = new DataView(new ArrayBuffer(4));
  view.setUint32(0, b << 16);
  return view.getFloat32(0);
}

function asNumbers(type, data) {
  if (type === "float16") return Array.from(data, halfToFloat);
  if (type === "bfloat16") return Array.from(data, bfloatToFloat);
  return Array.from(data);
}

/** "" when equal, else what differs. */
function compare(actual, expected) {
  if (actual.type !== expected.type) return `type ${actual.type} instead of ${expected.type}`;
  const shape = actual.dims.map(Number);
  if (shape.join(",") !== expected.dims.join(","))
    return `shape [${shape}] instead of [${expected.dims}]`;
  const a = asNumbers(actual.type, actual.data);
  const e = asNumbers(expected.type, expected.data);
  const floating = ["float32", "float64", "float16", "bfloat16"].includes(actual.type);
  for (let i = 0; i < e.length; ++i) {
    if (typeof e[i] === "string" || typeof e[i] === "bigint") {
      if (a[i] !== e[i]) return `element ${i} is ${a[i]} instead of ${e[i]}`;
      continue;
    }
    if (Number.isNaN(e[i]) && Number.isNaN(a[i])) continue;
    if (!Number.isFinite(e[i]) && a[i] === e[i]) continue;
    const allowed = floating ? absoluteTolerance + relativeTolerance * Math.abs(e[i]) : 0;
    if (!(Math.abs(a[i] - e[i]) <= allowed)) return `element ${i} is ${a[i]} instead of ${e[i]}`;
  }
  return "";
}

function numbered(folder, prefix) {
  const files = [];
  for (let i = 0; fs.existsSync(path.join(folder, `${prefix}_${i}.pb`)); ++i)
    files.push(path.join(folder, `${prefix}_${i}.pb`));
  return files;
}

// ---- One case, in this process ----

async function runCase(dir) {
  const ort = (await import("onnxruntime-node")).default;
  let session;
  try {
    session = await ort.InferenceSession.create(path.join(dir, "model.onnx"), {
      executionProviders: ["cpu"],
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
    });
  } catch (e) {
    return { status: "error", reason: `load: ${e.message}` };
  }
  const sets = fs
    .readdirSync(dir)
    .filter((d) => d.startsWith("test_data_set_"))
    .sort();
  if (!sets.length) return { status: "error", reason: "no test_data_set_* folder" };
  for (const set of sets) {
    const folder = path.join(dir, set);
    let inputs, expected;
    try {
      inputs = numbered(folder, "input").map(readTensorProto);
      expected = numbered(folder, "output").map(readTensorProto);
    } catch (e) {
      return { status: "error", reason: `${set}: test data: ${e.message}` };
    }
    // Test data is positional over the graph's inputs (the ONNX backend runner's rule).
    const feeds = {};
    inputs.forEach((t, i) => {
      const name = session.inputNames.includes(t.name) ? t.name : session.inputNames[i];
      feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
    });
    let results;
    try {
      results = await session.run(feeds);
    } catch (e) {
      return { status: "error", reason: `${set}: run: ${e.message}` };
    }
    if (expected.length !== session.outputNames.length)
      return {
        status: "fail",
        reason: `${session.outputNames.length} outputs, the test expects ${expected.length}`,
      };
    for (let i = 0; i < expected.length; ++i) {
      const out = results[session.outputNames[i]];
      const difference = compare({ type: out.type, dims: out.dims, data: out.data }, expected[i]);
      if (difference)
        return { status: "fail", reason: `${set}: output ${i} ('${session.outputNames[i]}'): ${difference}` };
    }
  }
  return { status: "pass", reason: "" };
}

// ---- The driver ----

function findCases(root) {
  const cases = [];
  for (const suite of fs.readdirSync(root).sort()) {
    const suiteDir = path.join(root, suite);
    if (!fs.statSync(suiteDir).isDirectory()) continue;
    for (const name of fs.readdirSync(suiteDir).sort()) {
      const dir = path.join(suiteDir, name);
      if (fs.existsSync(path.join(dir, "model.onnx"))) cases.push({ name: `${suite}/${name}`, dir });
    }
  }
  return cases.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function option(args, name, fallback) {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
}

async function main() {
  const args = process.argv.slice(2);
  if (args[0] === "--case") {
    const result = await runCase(args[1]);
    process.stdout.write(JSON.stringify(result));
    return;
  }
  const data = option(args, "--data", "/usr/share/libonnx-testdata/data");
  const out = option(args, "--out", path.join(repoRoot, "tests/conformance/ort_expectations.txt"));
  const filter = option(args, "--filter", "");
  const timeout = Number(option(args, "--timeout", "60"));
  const ort = (await import("onnxruntime-node")).default;
  const version = ort.env.versions?.node ?? ort.env.versions?.common ?? "?";
  const self = fileURLToPath(import.meta.url);
  const lines = [];
  const counts = { pass: 0, fail: 0, error: 0 };
  for (const c of findCases(data)) {
    if (filter && !c.name.includes(filter)) continue;
    const child = spawnSync(process.execPath, [self, "--case", c.dir], {
      encoding: "utf8",
      timeout: timeout * 1000,
      maxBuffer: 1 << 24,
    });
    let result;
    try {
      result = JSON.parse(child.stdout);
    } catch {
      const why = child.error?.code === "ETIMEDOUT" ? `timed out after ${timeout} s`
        : child.signal ? `crashed with signal ${child.signal}`
        : `exited ${child.status}: ${(child.stderr || "").trim().split("\n").pop()}`;
      result = { status: "error", reason: why };
    }
    counts[result.status] += 1;
    const reason = result.reason.replace(/\s+/g, " ").trim();
    lines.push(`${c.name} ${result.status}${reason ? `  # ${reason}` : ""}`);
    process.stderr.write(`${result.status.padEnd(6)} ${c.name}${reason ? `  (${reason})` : ""}\n`);
  }
  const header = [
    "# ONNX Runtime's results on the ONNX backend test data: <case> <pass|fail|error> [# reason]",
    `# Made by: node bench/ort/conformance.mjs --data ${data}`,
    `# onnxruntime-node ${version}, CPU execution provider, 1 thread; each case in its own process.`,
    "# Compared as cleave compares: floats within 1e-5 + 1e-3*|expected|, other types exact.",
    `# ${counts.pass} pass, ${counts.fail} fail, ${counts.error} error`,
  ];
  fs.writeFileSync(out, [...header, ...lines].join("\n") + "\n");
  console.log(`${lines.length} cases: ${counts.pass} pass, ${counts.fail} fail, ${counts.error} error`);
}

await main();
