# Writes a stack of wide Gemm+Relu layers whose weights live in one external data file.
#
#   /usr/bin/python3 bench/distributed/make_mlp.py OUT.onnx --layers 8 --width 4096 [--seed 1]
#                                                   [--embedded]
#
# Each layer holds width*width + width float32 weights (--width 4096: 64 MiB a layer), written
# layer by layer into OUT.onnx.weights so the generator never holds the whole model (with
# --embedded, as raw_data inside OUT.onnx instead, as the corpus models keep them). The model
# is written already in the form cleave's passes leave it (Gemm with bias, then Relu), so ranks
# can load it as is (`--no-optimize`) and read only their own layers' weights.
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("output")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--embedded", action="store_true",
                        help="weights as raw_data inside the model file, not external data")
    args = parser.parse_args()
    if args.layers < 1 or args.width < 1 or args.batch < 1:
        parser.error("--layers, --width and --batch must be positive")

    weights_name = os.path.basename(args.output) + ".weights"
    weights_path = os.path.join(os.path.dirname(os.path.abspath(args.output)), weights_name)
    rng = np.random.default_rng(args.seed)
    nodes, initializers = [], []
    offset = 0
    previous = "input"
    with open(weights_path + ".tmp", "wb") as weights:
        for layer in range(args.layers):
            for suffix, dims in (("weight", [args.width, args.width]), ("bias", [args.width])):
                # LeCun-normal weights keep activations O(1) through the stack.
                scale = np.sqrt(1.0 / args.width) if suffix == "weight" else 0.01
                data = (rng.standard_normal(dims, dtype=np.float32) * scale).astype(np.float32)
                raw = data.tobytes()
                proto = TensorProto()
                proto.name = f"fc{layer}.{suffix}"
                proto.data_type = TensorProto.FLOAT
                proto.dims.extend(dims)
                if args.embedded:
                    proto.raw_data = raw
                else:
                    weights.write(raw)
                    proto.data_location = TensorProto.EXTERNAL
                    for key, value in (("location", weights_name), ("offset", str(offset)),
                                       ("length", str(len(raw)))):
                        entry = proto.external_data.add()
                        entry.key, entry.value = key, value
                offset += len(raw)
                initializers.append(proto)
                del data, raw
            gemm = f"fc{layer}"
            nodes.append(helper.make_node("Gemm", [previous, f"{gemm}.weight", f"{gemm}.bias"],
                                          [gemm], name=gemm, transB=1))
            nodes.append(helper.make_node("Relu", [gemm], [f"{gemm}.relu"], name=f"{gemm}.relu"))
            previous = f"{gemm}.relu"
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [args.batch, args.width])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [args.batch, args.width])],
        initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, args.output + ".tmp")
    if args.embedded:
        os.remove(weights_path + ".tmp")
    else:
        os.replace(weights_path + ".tmp", weights_path)
    os.replace(args.output + ".tmp", args.output)
    print(f"wrote {args.output}: {args.layers} layers of width {args.width}, "
          f"{offset / 2**20:.1f} MiB of weights in "
          f"{args.output if args.embedded else weights_path}")


if __name__ == "__main__":
    main()
