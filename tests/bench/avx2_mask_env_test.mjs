// Tests of bench/ort/common.mjs's AVX2 mask helpers (speed.mjs --avx2-mask): the children's
// environment, and the check that stops a run whose cleave does not take its AVX2 paths.
// Usage: node avx2_mask_env_test.mjs CLEAVE_BINARY (the binary runs `info` only).
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { avx2MaskEnv, checkAvx2Mask } from "../../bench/ort/common.mjs";

const cleave = process.argv[2];
const lib = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "avx2-mask-env-")), "mask.so");
fs.writeFileSync(lib, "");  // avx2MaskEnv only needs the file to exist.

assert.throws(() => avx2MaskEnv("/nonexistent/mask.so", {}), /--avx2-mask \/nonexistent\/mask.so: no such file/);

const plain = avx2MaskEnv(lib, { PATH: "/bin" });
assert.equal(plain.LD_PRELOAD, lib);
assert.equal(plain.ONEDNN_MAX_CPU_ISA, "AVX2");
assert.equal(plain.PATH, "/bin");
assert.equal(avx2MaskEnv(lib, { AVX2_CPUID_AVX_VNNI: "1" }).ONEDNN_MAX_CPU_ISA, "AVX2_VNNI");
assert.equal(avx2MaskEnv(lib, { ONEDNN_MAX_CPU_ISA: "SSE41" }).ONEDNN_MAX_CPU_ISA, "SSE41");
assert.equal(avx2MaskEnv(lib, { LD_PRELOAD: "/other.so" }).LD_PRELOAD, `${lib}:/other.so`);

// A cleave on another ISA than AVX2 (here capped at SSE4.1, without the empty "mask") stops the
// run, naming what its `info` said.
assert.throws(
  () => checkAvx2Mask(cleave, { ...process.env, ONEDNN_MAX_CPU_ISA: "SSE41" }),
  /info says ISA 'SSE41'.*expected AVX2, avx2/,
);
// cleave capped at AVX2, but no working mask (the empty file is not a library): the ONNX Runtime
// side is what stops the run.
assert.throws(() => checkAvx2Mask(cleave, avx2MaskEnv(lib)), /ONNX Runtime's process did not run under the mask/);
fs.rmSync(path.dirname(lib), { recursive: true });
console.log("ok");
