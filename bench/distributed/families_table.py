#!/usr/bin/python3
"""The tables of bench/distributed/families.sh: which candidates to run, and what they measured.

    families_table.py pick PLAN.json
        one line per family of the candidate table (`cleave plan --explain --json`): its fastest
        prediction that fits, tab-separated: family, strategy, configuration, predicted ms, and
        the row's rejection (the reason a family is not run, or empty); then a line "auto" with
        auto's pick: the chosen row, or the spatial row where it is predicted faster (a split is
        no plan file: `cleave run --plan auto --machine` runs it instead).
    families_table.py report RESULTS.tsv
        the markdown tables of every shape measured: per family, configuration, predicted ms,
        measured median ms, measured / predicted and auto's pick; per shape, auto's predicted
        pick measured against the best measured family, and `cleave run --plan auto` with its
        timed check on the ranks against the same best; then how many shapes each is within
        5% of the best.

RESULTS.tsv lines (families.sh writes them): shape, family, configuration, predicted ms,
measured ms (one round; empty when not measured), auto (1: auto's predicted pick, 2: the run
of `--plan auto` timed on the ranks, 0: neither), note (why a row did not run; for auto timed
on the ranks, which candidate it kept).
"""
import math
import statistics
import sys

# Within this much of the best measured counts as auto choosing well (issue 46).
WITHIN = 1.05

# A row rejected for one of these cannot run: its family has no runnable candidate.
CANNOT_RUN = ("over memory", "no split", "no stages")


def finite(row):
    value = row.get("predicted_ms")
    return isinstance(value, (int, float)) and math.isfinite(value)


def pick(path):
    import json
    plan = json.load(open(path))
    rows = plan.get("candidates", [])
    if not rows:
        sys.exit(f"{path}: no candidates (expected `cleave plan --explain --json` output)")
    best = {}
    for row in rows:
        if not finite(row) or row.get("rejected", "").startswith(CANNOT_RUN):
            continue
        family = row["family"]
        if family not in best or row["predicted_ms"] < best[family]["predicted_ms"]:
            best[family] = row
    for family, row in best.items():
        print("\t".join([family, row["strategy"], row["configuration"],
                         f"{row['predicted_ms']:.4f}", row.get("rejected", "")]))
    chosen = next((row for row in rows if row.get("chosen")), None)
    if chosen is None:
        sys.exit(f"{path}: no row is marked chosen")
    split = best.get("spatial")
    if split and split.get("rejected", "").startswith("a split is not a plan file") and \
            split["predicted_ms"] < chosen["predicted_ms"]:
        chosen = split
    print("\t".join(["auto", chosen["family"], chosen["configuration"],
                     f"{chosen['predicted_ms']:.4f}", ""]))


def report(path):
    shapes = {}  # shape -> configuration -> entry, in first-seen order
    for line in open(path):
        fields = line.rstrip("\n").split("\t")
        if len(fields) != 7:
            continue
        shape, family, configuration, predicted, measured, auto, note = fields
        entry = shapes.setdefault(shape, {}).setdefault(
            configuration, {"family": family, "predicted": [], "ms": [], "auto": False,
                            "timed": False, "note": "", "kept": []})
        if predicted:
            entry["predicted"].append(float(predicted))
        if measured:
            entry["ms"].append(float(measured))
        entry["auto"] |= auto == "1"
        entry["timed"] |= auto == "2"
        if auto == "2" and measured:
            entry["kept"].append(note)
        else:
            entry["note"] = entry["note"] or note
    print("| shape | family | configuration | predicted ms | measured median ms | "
          "measured / predicted | auto | rounds apart |")
    print("|---|---|---|---|---|---|---|---|")
    spreads = []
    summary = []
    for shape, entries in shapes.items():
        measured = {c: statistics.median(e["ms"]) for c, e in entries.items() if e["ms"]}
        for configuration, e in entries.items():
            predicted = statistics.median(e["predicted"]) if e["predicted"] else None
            ms = measured.get(configuration)
            ratio = f"{ms / predicted:.2f}" if ms and predicted else ""
            shown = configuration
            if e["kept"]:
                shown += ": " + "; ".join(e["kept"])
            # How far the rounds' medians of one row lie apart: what the bench repeats within.
            apart = ""
            if len(e["ms"]) > 1 and min(e["ms"]) > 0:
                spread = max(e["ms"]) / min(e["ms"]) - 1
                apart = f"{100 * spread:.1f}%"
                spreads.append(spread)
            print(f"| {shape} | {e['family']} | {shown} | "
                  f"{'%.2f' % predicted if predicted else ''} | "
                  f"{'%.2f' % ms if ms else 'not run: ' + e['note']} | {ratio} | "
                  f"{'**auto**' if e['auto'] else ''} | {apart} |")
        auto = next((c for c, e in entries.items() if e["auto"]), None)
        timed = next((c for c, e in entries.items() if e["timed"]), None)
        # The best of the families: the timed auto runs one of them, it is no family itself.
        families = {c: ms for c, ms in measured.items() if not entries[c]["timed"]}
        if families and auto in families:
            fastest = min(families, key=families.get)
            summary.append((shape, entries[auto]["family"], auto, measured[auto],
                            entries[fastest]["family"], fastest, measured[fastest],
                            measured.get(timed)))
    if spreads:
        print()
        print(f"Rounds' medians of one row apart: median {100 * statistics.median(spreads):.1f}%, "
              f"largest {100 * max(spreads):.1f}%, over 5% on {sum(x > 0.05 for x in spreads)} "
              f"of {len(spreads)} rows.")
    print()
    print("| shape | auto's pick | auto ms | best measured | best ms | auto / best | "
          "auto timed on ranks ms | timed / best |")
    print("|---|---|---|---|---|---|---|---|")
    for shape, family, auto, auto_ms, best_family, best, best_ms, timed_ms in summary:
        timed_cells = (f"{timed_ms:.2f} | {timed_ms / best_ms:.3f}" if timed_ms
                       else "not run | ")
        print(f"| {shape} | {family}: {auto} | {auto_ms:.2f} | {best_family}: {best} | "
              f"{best_ms:.2f} | {auto_ms / best_ms:.3f} | {timed_cells} |")
    if summary:
        picked = sum(s[3] <= WITHIN * s[6] for s in summary)
        timed_runs = [s for s in summary if s[7]]
        timed_within = sum(s[7] <= WITHIN * s[6] for s in timed_runs)
        print()
        print(f"Within {round((WITHIN - 1) * 100)}% of the best measured family: auto's "
              f"predicted pick on {picked} of {len(summary)} shapes; auto timed on the ranks on "
              f"{timed_within} of {len(timed_runs)} shapes.")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("pick", "report"):
        sys.exit(f"usage: {sys.argv[0]} pick PLAN.json | report RESULTS.tsv")
    (pick if sys.argv[1] == "pick" else report)(sys.argv[2])


if __name__ == "__main__":
    main()
