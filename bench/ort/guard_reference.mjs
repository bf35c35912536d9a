// Writes ONNX Runtime's outputs for the guard models: DIR/NAME.ort_output_K.npy per output,
// from DIR/NAME.input_K.npy (inputs in the model's order). Floats only.
//
// Usage: node bench/ort/guard_reference.mjs DIR
import fs from "node:fs";
import path from "node:path";
import ort from "onnxruntime-node";

import { readNpy, writeNpyFloat32 } from "./common.mjs";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node bench/ort/guard_reference.mjs DIR");
  process.exit(2);
}
for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".onnx")).sort()) {
  const name = file.slice(0, -".onnx".length);
  const session = await ort.InferenceSession.create(path.join(dir, file), {
    intraOpNumThreads: 1,
    graphOptimizationLevel: "all",
  });
  const feeds = {};
  session.inputNames.forEach((input, k) => {
    const npy = readNpy(path.join(dir, `${name}.input_${k}.npy`));
    feeds[input] = new ort.Tensor(npy.ortType, npy.data, npy.shape);
  });
  const results = await session.run(feeds);
  session.outputNames.forEach((output, k) => {
    const tensor = results[output];
    writeNpyFloat32(path.join(dir, `${name}.ort_output_${k}.npy`), tensor.dims, tensor.data);
    console.log(`${name}: ${output} [${tensor.dims.join(",")}]`);
  });
}
