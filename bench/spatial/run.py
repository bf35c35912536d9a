# Spatial split figures for docs/results/spatial.md: per model, machine count and direction,
# `cleave split --json`'s bytes naive vs optimised, sync points, redundant work, peak memory and
# predicted latency (equal and unequal speeds; 1 and 10 Gbit/s links), and the fixed-depth
# fused-tile baseline (DeepThings: the first layers as 2x2 / 3x3 grids, no cost model).
# Usage: [NODES=2,3,4] [DIMS=h,w,c,hw,auto] [JOBS=2] /usr/bin/python3 bench/spatial/run.py
#            CLEAVE MODEL.onnx... > table.md
#        DEEPTHINGS=1 ... (fixed-depth fused tiles beside the cost model's)
#        OBJECTIVES=m1.json,m2.json ... (--search, terms against seconds, per machine file)
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time


def split(cleave, model, nodes, dim, extra=()):
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([cleave, "split", model, "--nodes", str(nodes), "--dim", dim,
                              "--json", "-o", os.path.join(tmp, "s"), *extra],
                             capture_output=True, text=True)
        if out.returncode:
            return {"error": out.stderr.strip().splitlines()[-1]}
        return json.loads(out.stdout)


def mib(b):
    return f"{b / 2**20:.1f}"


NODES = [int(n) for n in os.environ.get("NODES", "2,3,4").split(",")]
DIMS = os.environ.get("DIMS", "h,w,c,hw,auto").split(",")


def deepthings(cleave, model):
    # Fixed-depth fused tiles (DeepThings) beside cleave's cost-model fusion, on 2x2 and 3x3 grids.
    name = os.path.basename(model).removesuffix(".onnx")
    print(f"\n| {name} grid | fusion | bytes | redundant MFLOP | predicted ms |\n|---|---|---|---|---|")
    for nodes, grid in ((4, "2x2"), (9, "3x3")):
        for label, extra in (("cost model", []), ("fixed depth 8", ["--fuse-depth", "8"]),
                             ("fixed depth 16", ["--fuse-depth", "16"])):
            r = split(cleave, model, nodes, "hw", extra)
            if "error" in r:
                print(f"| {grid} | {label} | error: {r['error']} |")
                continue
            o = r["optimized"]
            print(f"| {grid} | {label} | {o['transfer_bytes']} | {o['redundant_flops'] / 1e6:.1f} | "
                  f"{o['predicted_seconds'] * 1e3:.2f} |")
            sys.stdout.flush()


def objectives(cleave, model, machine_files):
    # --search under the terms objective (per layer) and the seconds objective (chains of
    # layers; the terms choice kept when the split predicts it faster), with and without fusion.
    print("| machine file | objective | fusion | bytes optimised | transfers | predicted ms "
          "| seconds search: chain ms / terms ms, kept |\n|---|---|---|---|---|---|---|")
    for machine in machine_files:
        nodes = len(json.load(open(machine))["devices"])
        for fusion, extra in (("cost model", []), ("--no-fuse", ["--no-fuse"])):
            for objective in ("terms", "seconds"):
                r = split(cleave, model, nodes, "h", ["--machine", machine, "--search",
                                                      "--objective", objective, "--costs",
                                                      "flops", *extra])
                if "error" in r:
                    print(f"| {machine} | {objective} | {fusion} | error: {r['error']} |")
                    continue
                o = r["optimized"]
                kept = "-"
                for c in r.get("seconds_search", []):
                    kept = (f"{c['chain_predicted_seconds'] * 1e3:.2f} / "
                            f"{c['terms_predicted_seconds'] * 1e3:.2f}, {c['kept']}")
                print(f"| {os.path.basename(machine)} | {objective} | {fusion} | "
                      f"{o['transfer_bytes']} | {o['transfers']} | "
                      f"{o['predicted_seconds'] * 1e3:.2f} | {kept} |")
                sys.stdout.flush()


VARIANTS = (("1G equal", []), ("10G equal", ["--link-gbits", "10"]),
            ("1G speeds", "speeds"), ("10G speeds", "speeds10"))


def run_variants(cleave, model, nodes, dim):
    speeds = ",".join(str(1 + i) for i in range(nodes))
    out = []
    for _, extra in VARIANTS:
        if extra == "speeds":
            extra = ["--speeds", speeds]
        elif extra == "speeds10":
            extra = ["--speeds", speeds, "--link-gbits", "10"]
        t0 = time.time()
        r = split(cleave, model, nodes, dim, extra)
        r["split_seconds"] = time.time() - t0
        out.append(r)
    return out


def row(name, nodes, label, results):
    r = results[0]
    if "error" in r:
        return f"| {name} | {nodes} | {label} | error: {r['error']} |"
    n, o = r["naive"], r["optimized"]
    red = n["transfer_bytes"] / o["transfer_bytes"] if o["transfer_bytes"] else 0
    peaks = "/".join(mib(p) for p in o["peak_memory_bytes"])
    ms = [f"{x['optimized']['predicted_seconds'] * 1e3:.2f}" if "error" not in x else "error"
          for x in results]
    return (f"| {name} | {nodes} | {label} | {n['transfer_bytes']} | {o['transfer_bytes']} | "
            f"{red:.2f}x | {n['transfers']}/{o['transfers']} | "
            f"{n['sync_points']}/{o['sync_points']} | {o['redundant_flops'] / 1e6:.1f} | "
            f"{r['fused_tensors']} | {len(r['gathers'])} | {peaks} "
            f"({mib(r['whole_model_peak_bytes'])}) | {ms[0]} (whole "
            f"{r['whole_model_seconds'] * 1e3:.2f}) | {ms[1]} | {ms[2]} | {ms[3]} | "
            f"{r['split_seconds']:.1f} |")


def main():
    cleave, models = sys.argv[1], sys.argv[2:]
    if os.environ.get("DEEPTHINGS"):
        for model in models:
            deepthings(cleave, model)
        return
    if os.environ.get("OBJECTIVES"):
        for model in models:
            objectives(cleave, model, os.environ["OBJECTIVES"].split(","))
        return
    jobs = int(os.environ.get("JOBS", "1"))
    print("| model | machines | dim | bytes naive | bytes optimised | reduction | transfers naive/opt "
          "| sync points naive/opt | redundant MFLOP | fused | gathered | peak MiB per machine (whole) "
          "| predicted ms 1G equal | 10G equal | 1G speeds 1,2.. | 10G speeds 1,2.. | split time s |")
    print("|" + "---|" * 17)
    # `auto` is not run: it is, by construction, the one of h, w, c and hw with the lowest
    # predicted latency for each setting (ties to the first), so its row is taken from theirs.
    dims = [d for d in DIMS if d != "auto"]
    tasks = [(m, n, d) for m in models for n in NODES for d in dims]
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        done = dict(zip(tasks, pool.map(lambda t: run_variants(cleave, *t), tasks)))
    for model in models:
        name = os.path.basename(model).removesuffix(".onnx")
        for nodes in NODES:
            for dim in dims:
                print(row(name, nodes, dim, done[(model, nodes, dim)]))
            if "auto" in DIMS:
                picked = []
                for k in range(len(VARIANTS)):
                    best = None
                    for dim in dims:
                        r = done[(model, nodes, dim)][k]
                        if "error" in r:
                            continue
                        if best is None or r["optimized"]["predicted_seconds"] < \
                                best[1]["optimized"]["predicted_seconds"]:
                            best = (dim, r)
                    picked.append(best)
                if picked[0] is None:
                    continue
                label = "auto (" + "/".join(p[0] if p else "-" for p in picked) + ")"
                results = [p[1] if p else {"error": "none"} for p in picked]
                print(row(name, nodes, label, results).rsplit("|", 2)[0] + "| - |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
