#!/usr/bin/python3
"""Markdown tables of context_profile_ab.sh's output: per model, before and after, auto's choice
and every family timed, measured / predicted."""
import json
import pathlib
import re
import sys


def rows(out: pathlib.Path, side: str):
    for path in sorted(out.glob(f"*.{side}.json")):
        name = path.name[: -len(f".{side}.json")]
        report = json.loads(path.read_text())
        load = (out / f"{name}.{side}.uptime").read_text().split("load average:")[-1].strip()
        log = (out / f"{name}.{side}.log").read_text()
        profiled = re.findall(r"profile: measured in ([0-9.]+) s", log)
        yield name, report, load, profiled


def main() -> None:
    out = pathlib.Path(sys.argv[1])
    print("| model | build | auto's choice | predicted ms | measured ms | meas/pred | "
          "every family: measured (lowest) / predicted ms, meas/pred | load (1, 5, 15 min) |")
    print("|---|---|---|---:|---:|---:|---|---|")
    every_row = [(name, side, report, load) for side in ("old", "new")
                 for name, report, load, _ in rows(out, side)]
    for name, side, report, load in sorted(every_row, key=lambda row: (row[0], row[1] != "old")):
        if True:
            chosen = next((f for f in report["families"] if f["chosen"]), None)
            every = "; ".join(
                f"{f['configuration']}: {f['measured_seconds'] * 1e3:.2f} "
                f"({f['lowest_seconds'] * 1e3:.2f}) / {f['predicted_seconds'] * 1e3:.2f}, "
                f"{f['ratio']:.2f}"
                for f in report["families"])
            if chosen is None:
                print(f"| {name} | {side} | (none timed) | | | | {every} | {load} |")
                continue
            print(f"| {name} | {side} | {chosen['family']}: {chosen['configuration']} | "
                  f"{chosen['predicted_seconds'] * 1e3:.2f} | "
                  f"{chosen['measured_seconds'] * 1e3:.2f} | {chosen['ratio']:.2f} | {every} | "
                  f"{load} |")
    print()
    for name, _, _, profiled in rows(out, "new"):
        if profiled:
            print(f"- {name}: in-context profile measured in {', '.join(profiled)} s")


if __name__ == "__main__":
    main()
