# Spatial split figures for docs/results/spatial.md: per model, machine count and direction,
# `cleave split --json`'s bytes naive vs optimised, sync points, redundant work, peak memory and
# predicted latency (equal and unequal speeds; 1 and 10 Gbit/s links), and the fixed-depth
# fused-tile baseline (DeepThings: the first layers as 2x2 / 3x3 grids, no cost model).
# Usage: /usr/bin/python3 bench/spatial/run.py CLEAVE MODEL.onnx... > table.md
import json
import os
import subprocess
import sys
import tempfile


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


def main():
    cleave, models = sys.argv[1], sys.argv[2:]
    if os.environ.get("DEEPTHINGS"):
        for model in models:
            deepthings(cleave, model)
        return
    print("| model | machines | dim | bytes naive | bytes optimised | reduction | transfers naive/opt "
          "| sync points naive/opt | redundant MFLOP | fused | gathered | peak MiB per machine (whole) "
          "| predicted ms 1G equal | 10G equal | 1G speeds 1,2.. | split time s |")
    print("|" + "---|" * 16)
    for model in models:
        name = os.path.basename(model).removesuffix(".onnx")
        for nodes in NODES:
            for dim in DIMS:
                import time
                t0 = time.time()
                r = split(cleave, model, nodes, dim)
                seconds = time.time() - t0
                if "error" in r:
                    print(f"| {name} | {nodes} | {dim} | error: {r['error']} |")
                    continue
                fast = split(cleave, model, nodes, dim, ["--link-gbits", "10"])
                speeds = ",".join(str(1 + i) for i in range(nodes))
                hetero = split(cleave, model, nodes, dim, ["--speeds", speeds])
                n, o = r["naive"], r["optimized"]
                red = n["transfer_bytes"] / o["transfer_bytes"] if o["transfer_bytes"] else 0
                peaks = "/".join(mib(p) for p in o["peak_memory_bytes"])
                chosen = f" ({r['dim']})" if dim == "auto" else ""
                print(f"| {name} | {nodes} | {dim}{chosen} | {n['transfer_bytes']} | "
                      f"{o['transfer_bytes']} | {red:.2f}x | {n['transfers']}/{o['transfers']} | "
                      f"{n['sync_points']}/{o['sync_points']} | {o['redundant_flops'] / 1e6:.1f} | "
                      f"{r['fused_tensors']} | {len(r['gathers'])} | {peaks} "
                      f"({mib(r['whole_model_peak_bytes'])}) | "
                      f"{o['predicted_seconds'] * 1e3:.2f} (whole {r['whole_model_seconds'] * 1e3:.2f}) | "
                      f"{fast['optimized']['predicted_seconds'] * 1e3:.2f} | "
                      f"{hetero['optimized']['predicted_seconds'] * 1e3:.2f} | {seconds:.1f} |")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
