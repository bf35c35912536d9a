"""A script written for ONNX Runtime's Python API; its one change is the import line.

Usage: ort_script.py MODEL. Loads the model, lists its inputs and outputs, feeds random inputs
of its shapes (symbolic dims as 2), runs it twice through ONNX Runtime's calls and prints one
line per output: name, shape and the sum of its values."""

import sys

import numpy as np

import cleave as onnxruntime  # was: import onnxruntime

TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(int64)": np.int64,
         "tensor(int32)": np.int32, "tensor(bool)": np.bool_}


def main(path):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(path, sess_options=options,
                                           providers=["CPUExecutionProvider"])
    assert "CPUExecutionProvider" in onnxruntime.get_available_providers()
    assert onnxruntime.get_device() == "CPU"
    assert session.get_providers() == ["CPUExecutionProvider"]
    meta = session.get_modelmeta()
    print(f"model {meta.graph_name} by {meta.producer_name}")
    rng = np.random.default_rng(0)
    feed = {}
    for arg in session.get_inputs():
        shape = [d if isinstance(d, int) else 2 for d in arg.shape]
        print(f"input {arg.name} {arg.type} {arg.shape}")
        feed[arg.name] = rng.standard_normal(shape).astype(TYPES[arg.type])
    names = [arg.name for arg in session.get_outputs()]
    first = session.run(names, feed)
    second = session.run(None, feed)
    for name, a, b in zip(names, first, second):
        assert isinstance(a, np.ndarray) and np.array_equal(a, b)
        print(f"output {name} {list(a.shape)} {float(np.sum(a, dtype=np.float64)):.6g}")


if __name__ == "__main__":
    main(sys.argv[1])
