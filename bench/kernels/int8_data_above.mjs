// The share of u8 values above 127 in every exposed output of the models a job file names
// (bench/kernels/int8_excess_density.py writes it), ONNX Runtime on each model's input.
// Usage: node bench/kernels/int8_data_above.mjs JOBS.json  (writes JOBS.json.out)
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../ort/package.json"));
const ort = require("onnxruntime-node");
const { readNpy } = await import(path.join(here, "../ort/common.mjs"));

const jobs = JSON.parse(fs.readFileSync(process.argv[2]));
const shares = {};
for (const [name, job] of Object.entries(jobs)) {
  const session = await ort.InferenceSession.create(job.model);
  const x = readNpy(job.input);
  const out = await session.run({ [job.input_name]: new ort.Tensor(x.ortType, x.data, x.shape) });
  shares[name] = {};
  for (const c of job.convs) {
    const values = out[c.data].data;
    let above = 0;
    for (const v of values) above += v > 127;
    shares[name][c.data] = above / values.length;
  }
}
fs.writeFileSync(process.argv[2] + ".out", JSON.stringify(shares));
