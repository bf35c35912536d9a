# Stream benchmarks for docs/results/stream.md: schedule time, pipelined throughput, and the
# thesis's Tables 5.1/5.2 (fission of a Linear layer). Prints markdown tables.
# Usage: /usr/bin/python3 bench/stream/run.py [BUILD_DIR] [ROUNDS] [PARTS]
# PARTS: comma-separated subset of schedule,audio,corpus,5.1,5.2 (default all).
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
# Which parts to run: schedule, audio, corpus, 5.1, 5.2 (default all).
PARTS = sys.argv[3].split(",") if len(sys.argv) > 3 else ["schedule", "audio", "corpus", "5.1",
                                                           "5.2"]
CLEAVE = os.path.join(BUILD, "cleave")


def cleave(*args):
    out = subprocess.run([CLEAVE, *args], check=True, capture_output=True, text=True).stdout
    return out


def run_json(*args):
    return json.loads(cleave("stream", "run", *args, "--json"))


def main():
    d = tempfile.mkdtemp(prefix="cleave_stream_bench_")
    subprocess.run(["/usr/bin/python3", os.path.join(HERE, "make_inputs.py"), d], check=True)

    if "schedule" in PARTS:
        schedule_times(d)
    if "audio" in PARTS:
        audio(d)
    if "corpus" in PARTS:
        corpus(d)
    tables(d)


def schedule_times(d):
    print("### Schedule computation time\n")
    print("| filters | actors | schedule ms (median of 5) |\n|---|---|---|")
    for n in (10, 100, 1000, 10000):
        prog = os.path.join(d, f"big_{n}.json")
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "big_program.py"), str(n), prog],
                       check=True)
        times, actors = [], ""
        for _ in range(5):
            out = cleave("stream", "schedule", prog)
            for line in out.splitlines():
                if line.startswith("scheduled in"):
                    times.append(float(line.split()[2]))
                if " actors, " in line:
                    actors = line.split(", ")[1].split()[0]
        filters = out.splitlines()[1].split(": ")[1].split()[0]
        print(f"| {filters} | {actors} | {statistics.median(times):.3f} |")



def audio(d):
    # 1 worker is the sequential baseline; 2 and 3 workers place the filters by the balanced
    # planner (default) and by the old greedy rule. CPU-bound speedup: the 1-worker run's CPU
    # seconds over the busiest worker's, the gain the placement allows when every worker has a
    # core of its own (what a quiet host should show as items/s).
    print(f"\n### Three-model audio pipeline (512 chunks), items/s, median of {ROUNDS} rounds; "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| workers | placement | items/s | vs 1 worker | predicted items/s | CPU-bound speedup "
          "| latency p50 ms | busy | waits | preempted |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    configs = [(1, "balanced"), (2, "balanced"), (2, "greedy"), (3, "balanced"), (3, "greedy")]
    results = {c: [] for c in configs}
    for _ in range(ROUNDS):
        for w, method in configs:
            results[(w, method)].append(
                run_json(os.path.join(d, "audio.json"), "--input", f"x={d}/chunks.npy", "--items",
                         "512", "--workers", str(w), "--placement", method))
    base = statistics.median(r["items_per_second"] for r in results[configs[0]])
    base_cpu = statistics.median(sum(r["worker_cpu_seconds"]) for r in results[configs[0]])
    for c in configs:
        rs = results[c]
        m = statistics.median(r["items_per_second"] for r in rs)
        pred = statistics.median(r["predicted_items_per_second"] for r in rs)
        top = statistics.median(max(r["worker_cpu_seconds"]) for r in rs)
        last = rs[-1]
        busy = " ".join(f"{100 * b:.0f}%" for b in last["worker_busy"])
        print(f"| {c[0]} | {c[1]} | {m:.1f} | {m / base:.2f}x | {pred:.1f} | {base_cpu / top:.2f}x "
              f"| {1e3 * last['latency_p50_seconds']:.2f} | {busy} | {sum(last['worker_waits'])} "
              f"| {' '.join(str(p) for p in last['worker_preempted'])} |")


def corpus(d):
    model = os.path.join(os.path.dirname(HERE), "..", "models", "inception_demo.onnx")
    np.save(f"{d}/images.npy", np.random.default_rng(1).standard_normal((16, 1, 3, 32, 32))
            .astype(np.float32))
    print("\n### Corpus model converted to a stream (inception_demo, one filter per node), "
          "64 images, median of rounds\n")
    seq = []
    for _ in range(ROUNDS):
        out = cleave("run", model, "--repeat", "20", "--threads", "1")
        for line in out.splitlines():
            if line.startswith("latency"):
                seq.append(float(line.split("median ")[1].split(" ms")[0]))
    per_item = statistics.median(seq)
    print(f"sequential `cleave run` (1 thread): median {per_item:.3f} ms per image, "
          f"{1e3 / per_item:.1f} images/s\n")
    print("| workers | items/s | vs sequential run | busy |\n|---|---|---|---|")
    for w in (1, 2):
        vals, last = [], None
        for _ in range(ROUNDS):
            last = run_json(model, "--input", f"input={d}/images.npy", "--items", "64",
                            "--workers", str(w), "--output-dir", f"{d}/out_{w}")
            vals.append(last["items_per_second"])
        m = statistics.median(vals)
        busy = " ".join(f"{100 * b:.0f}%" for b in last["worker_busy"])
        print(f"| {w} | {m:.1f} | {m * per_item / 1e3:.2f}x | {busy} |")
    images = np.load(f"{d}/images.npy")
    streamed = np.load(f"{d}/out_2/output.npy")
    worst = 0.0
    for i in range(4):
        np.save(f"{d}/img.npy", images[i])
        cleave("run", model, "--input", f"input={d}/img.npy", "--output-dir", f"{d}/ref")
        ref = np.load(os.path.join(f"{d}/ref", sorted(os.listdir(f"{d}/ref"))[0]))
        worst = max(worst, float(np.abs(streamed[i] - ref).max()))
    print(f"\nstreamed outputs of images 0..3 against `cleave run`: max abs difference {worst:.2e}")



def tables(d):
    # Each round runs every configuration once, in an order rotated by round, so that a change
    # in the host's load hits all of them alike; ratios are per round (paired), then the median.
    # Wall: microseconds per 1024 rows from the run's items/s. CPU: the worker threads' CPU
    # seconds per 1024 rows, which time-slicing by other processes does not inflate.
    for k, n, table in ((512, 256, "5.1"), (4096, 1024, "5.2")):
        if table not in PARTS:
            continue
        configs = [("unsplit", []), ("split in 2", ["--fission", "lin=2:512"]),
                   ("granularity 64", ["--fission", "lin=2:64"]),
                   ("granularity 128", ["--fission", "lin=2:128"])]
        iterations = 64 if k == 512 else 8
        wall = {(c, w): [] for c, _ in configs for w in (1, 2)}
        cpu = {(c, w): [] for c, _ in configs for w in (1, 2)}
        loads = []
        for r in range(ROUNDS):
            loads.append(os.getloadavg()[0])
            for w in (1, 2):
                order = configs[r % len(configs):] + configs[:r % len(configs)]
                for name, extra in order:
                    j = run_json(os.path.join(d, f"linear_{k}_{n}.json"), "--input",
                                 f"x={d}/rows_{k}.npy", "--items", str(1024 * iterations),
                                 "--workers", str(w), "--costs", "flops", *extra)
                    wall[(name, w)].append(1e6 * 1024 / j["items_per_second"])
                    cpu[(name, w)].append(1e6 * sum(j["worker_cpu_seconds"]) / iterations)
        print(f"\n### Table {table}: Linear 1024x{k} -> 1024x{n}, microseconds per 1024 rows "
              f"({ROUNDS} rounds, {iterations} x 1024 rows per run; load average "
              f"{min(loads):.1f}-{max(loads):.1f})\n")
        print("| workers | measure | " + " | ".join(c for c, _ in configs) + " |")
        print("|---|---|" + "---|" * len(configs))
        for w in (1, 2):
            for label, times in (("wall", wall), ("CPU", cpu)):
                cells = []
                for name, _ in configs:
                    m = statistics.median(times[(name, w)])
                    if name == "unsplit":
                        cells.append(f"{m:.0f}")
                        continue
                    ratios = [a / b for a, b in zip(times[(name, w)], times[("unsplit", w)])]
                    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
                    cells.append(f"{m:.0f} ({statistics.median(ratios):.3f}x, "
                                 f"IQR {q[0]:.3f}-{q[-1]:.3f})")
                print(f"| {w} | {label} | " + " | ".join(cells) + " |")


main()
