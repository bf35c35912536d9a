# Stream benchmarks for docs/results/stream.md: schedule time, pipelined throughput, and the
# thesis's Tables 5.1/5.2 (fission of a Linear layer). Prints markdown tables.
# Usage: /usr/bin/python3 bench/stream/run.py [BUILD_DIR] [ROUNDS]
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
CLEAVE = os.path.join(BUILD, "cleave")


def cleave(*args):
    out = subprocess.run([CLEAVE, *args], check=True, capture_output=True, text=True).stdout
    return out


def run_json(*args):
    return json.loads(cleave("stream", "run", *args, "--json"))


def main():
    d = tempfile.mkdtemp(prefix="cleave_stream_bench_")
    subprocess.run(["/usr/bin/python3", os.path.join(HERE, "make_inputs.py"), d], check=True)

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

    print("\n### Three-model audio pipeline (512 chunks), items/s, median of rounds\n")
    print("| workers | items/s | vs 1 worker | placement predicts | latency p50 ms | busy |")
    print("|---|---|---|---|---|---|")
    results = {w: [] for w in (1, 2, 3)}
    last = {}
    for _ in range(ROUNDS):
        for w in (1, 2, 3):
            r = run_json(os.path.join(d, "audio.json"), "--input", f"x={d}/chunks.npy",
                         "--items", "512", "--workers", str(w))
            results[w].append(r["items_per_second"])
            last[w] = r
    base = statistics.median(results[1])
    for w in (1, 2, 3):
        m = statistics.median(results[w])
        busy = " ".join(f"{100 * b:.0f}%" for b in last[w]["worker_busy"])
        print(f"| {w} | {m:.1f} | {m / base:.2f}x | {last[w]['predicted_items_per_second']:.1f} | "
              f"{1e3 * last[w]['latency_p50_seconds']:.2f} | {busy} |")

    for k, n, table in ((512, 256, "5.1"), (4096, 1024, "5.2")):
        print(f"\n### Table {table}: Linear 1024x{k} -> 1024x{n}, microseconds per 1024 rows "
              f"(median of {ROUNDS} rounds)\n")
        configs = [("unsplit", []), ("split in 2", ["--fission", "lin=2:512"]),
                   ("granularity 64", ["--fission", "lin=2:64"]),
                   ("granularity 128", ["--fission", "lin=2:128"])]
        iterations = 64 if k == 512 else 8
        times = {(c, w): [] for c, _ in configs for w in (1, 2)}
        for _ in range(ROUNDS):
            for w in (1, 2):
                for name, extra in configs:
                    r = run_json(os.path.join(d, f"linear_{k}_{n}.json"), "--input",
                                 f"x={d}/rows_{k}.npy", "--items", str(1024 * iterations),
                                 "--workers", str(w), *extra)
                    times[(name, w)].append(1e6 * 1024 / r["items_per_second"])
        print("| workers | " + " | ".join(c for c, _ in configs) + " |")
        print("|---|" + "---|" * len(configs))
        for w in (1, 2):
            base = statistics.median(times[("unsplit", w)])
            cells = []
            for name, _ in configs:
                m = statistics.median(times[(name, w)])
                cells.append(f"{m:.0f}" + ("" if name == "unsplit" else f" ({m / base:.3f}x)"))
            print(f"| {w} | " + " | ".join(cells) + " |")


main()
