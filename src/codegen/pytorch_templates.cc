// The fixed texts of a generated PyTorch folder: the runners in model.py, run.py and the README.
#include "codegen/pytorch_templates.h"

namespace cleave::pytorch_templates {

const char* const kRuntime = R"gen(

class _Endpoint:
    """One worker's side of the channels: put() sends to every reader, get() waits."""

    def __init__(self, queues, worker):
        self.queues = queues
        self.worker = worker

    def put(self, name, tensor):
        for reader in CHANNELS[name]:
            self.queues[(name, reader)].put(tensor)

    def get(self, name):
        try:
            return self.queues[(name, self.worker)].get(timeout=TIMEOUT_SECONDS)
        except queue.Empty:
            raise RuntimeError(
                f"worker {self.worker} waited more than {TIMEOUT_SECONDS} s for {name!r}"
            ) from None


def _channel_queues(make_queue):
    return {(name, reader): make_queue() for name, readers in CHANNELS.items() for reader in readers}


class ThreadRunner:
    """Runs the workers as threads (torch releases the GIL inside its ops)."""

    def __init__(self, model):
        self.model = model
        torch.set_num_threads(THREADS_PER_WORKER)

    def __call__(self, inputs):
        queues = _channel_queues(queue.Queue)
        results = [None] * WORKERS
        errors = []

        def work(worker):
            # OpenMP's thread count is per thread: without this a worker ran with torch's default.
            torch.set_num_threads(THREADS_PER_WORKER)
            try:
                with torch.no_grad():
                    method = getattr(self.model, f"worker_{worker}")
                    results[worker] = method(inputs, _Endpoint(queues, worker))
            except BaseException as error:  # reported below, with the worker
                errors.append((worker, error))

        threads = [threading.Thread(target=work, args=(w,)) for w in range(1, WORKERS)]
        for thread in threads:
            thread.start()
        work(0)
        for thread in threads:
            thread.join()
        if errors:
            worker, error = errors[0]
            raise RuntimeError(f"worker {worker}: {error}") from error
        merged = {}
        for result in results:
            merged.update(result)
        return [merged[name] for name in OUTPUTS]


def _process_main(folder, worker, tasks, results, queues):
    torch.set_num_threads(THREADS_PER_WORKER)
    model = Model(folder).eval()
    endpoint = _Endpoint(queues, worker)
    method = getattr(model, f"worker_{worker}")
    while True:
        inputs = tasks.get()
        if inputs is None:
            return
        try:
            with torch.no_grad():
                results.put((worker, method(inputs, endpoint), None))
        except BaseException as error:  # sent back to the parent
            results.put((worker, None, repr(error)))


class ProcessRunner:
    """Runs the workers as processes (spawned once; tensors pass through shared memory)."""

    def __init__(self, folder=HERE):
        import torch.multiprocessing as mp

        context = mp.get_context("spawn")
        self.queues = _channel_queues(context.Queue)
        self.tasks = [context.Queue() for _ in range(WORKERS)]
        self.results = context.Queue()
        self.processes = [
            context.Process(
                target=_process_main,
                args=(folder, w, self.tasks[w], self.results, self.queues),
                daemon=True,
            )
            for w in range(WORKERS)
        ]
        for process in self.processes:
            process.start()

    def __call__(self, inputs):
        for task in self.tasks:
            task.put(inputs)
        merged = {}
        for _ in range(WORKERS):
            worker, outputs, error = self.results.get(timeout=TIMEOUT_SECONDS)
            if error is not None:
                raise RuntimeError(f"worker {worker}: {error}")
            merged.update(outputs)
        return [merged[name] for name in OUTPUTS]

    def close(self):
        for task in self.tasks:
            task.put(None)
        for process in self.processes:
            process.join(timeout=10)
)gen";

const char* const kRunScript = R"PY(#!/usr/bin/python3
"""Runs the generated model {name}.

    /usr/bin/python3 run.py --input NAME=F.npy --output-dir D [--sequential | --processes]
                            [--warmup N] [--repeat R] [--threads T] [--json]
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model as generated  # noqa: E402  (the folder must be on the path first)


def keep_freed_memory():
    """Asks glibc to keep freed activations for the next run instead of returning them to the
    system: otherwise every run page-faults them in again, and with worker threads (one malloc
    arena each) a run took twice as long in about one process of three."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_mmap_threshold, 32 << 20)  # glibc's largest
    libc.mallopt(m_trim_threshold, 1 << 30)


def file_name_for(name):
    text = "".join(c if c.isalnum() or c in "_-." else "_" for c in name)
    return "_" + text if text in ("", ".", "..") else text


def random_input(rng, shape, dtype):
    """Floats uniform in [-1, 1), integers in [0, 4) (small enough for an index or a length),
    booleans, and 8-bit data over its whole range."""
    if dtype.startswith("float"):
        return rng.uniform(-1, 1, shape).astype(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in ("uint8", "int8"):
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)
    return rng.integers(0, 4, shape).astype(dtype)


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--input", action="append", default=[], metavar="NAME=F.npy")
    parser.add_argument("--output-dir", help="write one NAME.npy per output here")
    parser.add_argument("--sequential", action="store_true", help="run Model.forward")
    parser.add_argument("--processes", action="store_true", help="workers as processes")
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads of --sequential (default: workers x threads)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the inputs not given (numpy; floats uniform in [-1, 1))")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.repeat < 1 or args.warmup < 0:
        parser.error("--repeat must be at least 1 and --warmup at least 0")
    keep_freed_memory()

    inputs = {{}}
    for spec in args.input:
        name, _, path = spec.partition("=")
        if not name or not path:
            parser.error(f"--input {{spec!r}}: expected NAME=F.npy")
        if name not in generated.INPUTS:
            parser.error(f"{{name!r}} is not an input; inputs are {{', '.join(generated.INPUTS)}}")
        array = np.load(path)
        expected, dtype = generated.INPUT_SHAPES[name], generated.INPUT_DTYPES[name]
        if list(array.shape) != expected or array.dtype != np.dtype(dtype):
            parser.error(f"input {{name!r}}: expected {{dtype}}{{expected}}, got {{array.dtype}}{{list(array.shape)}}")
        inputs[name] = torch.from_numpy(array)
    rng = np.random.default_rng(args.seed)
    for name in generated.INPUTS:
        if name not in inputs:
            inputs[name] = torch.from_numpy(random_input(rng, generated.INPUT_SHAPES[name],
                                                         generated.INPUT_DTYPES[name]))

    model = generated.Model().eval()
    runner = None
    if args.sequential:
        torch.set_num_threads(args.threads or generated.WORKERS * generated.THREADS_PER_WORKER)
        ordered = [inputs[name] for name in generated.INPUTS]

        def run():
            with torch.no_grad():
                result = model(*ordered)
            return list(result) if isinstance(result, tuple) else [result]

        mode = f"sequential, {{torch.get_num_threads()}} thread(s)"
    else:
        runner = generated.ProcessRunner() if args.processes else generated.ThreadRunner(model)
        run = lambda: runner(inputs)  # noqa: E731
        kind = "processes" if args.processes else "threads"
        mode = f"{{generated.WORKERS}} worker(s) x {{generated.THREADS_PER_WORKER}} thread(s) as {{kind}}"

    try:
        for _ in range(args.warmup):
            run()
        latencies = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            outputs = run()
            latencies.append((time.perf_counter() - start) * 1e3)
    finally:
        if args.processes and runner is not None:
            runner.close()

    entries = []
    if args.output_dir:
        os.makedirs(args.output_dir, exist_ok=True)
    for name, tensor in zip(generated.OUTPUTS, outputs):
        entry = {{"name": name, "shape": list(tensor.shape)}}
        if args.output_dir:
            path = os.path.join(args.output_dir, file_name_for(name) + ".npy")
            np.save(path, tensor.contiguous().numpy())
            entry["file"] = path
        entries.append(entry)
    report = {{
        "model": generated.MODEL_NAME,
        "mode": mode,
        "latency_ms": {{"min": min(latencies), "median": statistics.median(latencies),
                       "runs": latencies}},
        "outputs": entries,
    }}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"model      {{generated.MODEL_NAME}}")
    print(f"latency    min {{min(latencies):.3f}} ms, median {{statistics.median(latencies):.3f}} ms "
          f"over {{args.repeat}} run(s), {{mode}}")
    for entry in entries:
        target = f" -> {{entry['file']}}" if "file" in entry else ""
        print(f"output     {{entry['name']}} {{entry['shape']}}{{target}}")


if __name__ == "__main__":
    main()
)PY";

const char* const kReadme = R"gen(# Generated PyTorch model: {name}

Generated by `cleave codegen --lang pytorch` from `{name}`: plan `{strategy}` on {workers}
worker(s) x {threads} thread(s), {nodes} nodes, {channels} value(s) passed between workers.

## Run

```sh
/usr/bin/python3 run.py --input {input}=x.npy --output-dir out               # workers as threads
/usr/bin/python3 run.py --input {input}=x.npy --output-dir out --sequential  # sequential twin
/usr/bin/python3 run.py --processes --warmup 3 --repeat 20                    # workers as processes
```

Needs only `torch` and `numpy` (Debian's `python3-torch` under `/usr/bin/python3`). Inputs not
given are seeded numpy values (not cleave's); pass the same `.npy` to `cleave run --input` to
compare outputs.

## Reading `model.py`

- `Model.__init__` maps `weights.bin` (index in `weights.json`) and keeps one tensor per
  initializer, named `w_...` after it.
- `Model.forward` is the sequential version: every node in one topological order, one line
  of `torch` / `torch.nn.functional` per ONNX node, its name, op and shapes in a comment.
  cleave's runtime-only fusions appear as the ops they stand for (a Conv's fused activation
  and residual Add, a MatMul's bias and GELU).
- `Model.worker_N(inputs, ch)` runs worker N's nodes in the plan's order. `ch.put(name, t)`
  hands a value to the workers that read it (one `queue.Queue` per value and reader);
  `ch.get(name)` waits for it.
- `ThreadRunner` starts the workers as threads, `ProcessRunner` as spawned processes.
)gen";

}  // namespace cleave::pytorch_templates
