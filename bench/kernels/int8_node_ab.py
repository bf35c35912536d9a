#!/usr/bin/python3
"""Per-node A/B of two cleave wrappers (a build, or a script setting e.g. CLEAVE_INT8_F32 and
exec'ing one) on one model: `profile --no-cache` in interleaved rounds, each node's minimum over
rounds (a loaded host's spells of contention inflate medians), printing the int8 products whose
minima differ by more than 5%.
usage: int8_node_ab.py MODEL --a WRAPPER --b WRAPPER [--isa AVX2|native] [--rounds 5]
       [--threads 1] [--repeat 20]"""
import argparse, json, os, statistics, subprocess, tempfile
ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("--isa", default="AVX2"); ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--a", required=True); ap.add_argument("--b", required=True)
ap.add_argument("--threads", type=int, default=1); ap.add_argument("--repeat", type=int, default=20)
args = ap.parse_args()
times = {args.a: {}, args.b: {}}
ops = {}
for r in range(args.rounds):
    for pol in (args.a, args.b) if r % 2 == 0 else (args.b, args.a):
        env = dict(os.environ, CLEAVE_CACHE_DIR=tempfile.mkdtemp())
        env.pop("ONEDNN_MAX_CPU_ISA", None)
        if args.isa != "native": env["ONEDNN_MAX_CPU_ISA"] = args.isa
        out = subprocess.run(["nice", pol, "profile", args.model, "--max-threads", str(args.threads),
                              "--repeat", str(args.repeat), "--no-cache", "--json"], env=env,
                             capture_output=True, text=True, check=True).stdout
        for n in json.loads(out)["nodes"]:
            times[pol].setdefault(n["node"], []).append(n["seconds"][-1])
            ops[n["node"]] = n["op"]
med = {p: {k: min(v) for k, v in t.items()} for p, t in times.items()}
tot = {p: sum(m.values()) for p, m in med.items()}
rows = []
for k in med[args.a]:
    a, b = med[args.a][k], med[args.b].get(k, 0)
    if abs(a - b) > 0.05 * a and ops[k] in ("QLinearConv", "ConvInteger", "QGemm", "MatMulInteger", "QLinearMatMul"):
        rows.append((a - b, k, a, b))
rows.sort(reverse=True)
print(f"{os.path.basename(args.model)} {args.isa} {args.threads}T rounds={args.rounds}: sum of node minima {args.a} {tot[args.a]*1e3:.3f} ms, {args.b} {tot[args.b]*1e3:.3f} ms, ratio {tot[args.b]/tot[args.a]:.3f}")
for d, k, a, b in rows:
    print(f"  {k[-45:]:45s} {ops[k]:12s} {a*1e6:8.1f} {b*1e6:8.1f} us  x{b/a:.2f}")
