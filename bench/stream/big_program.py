# Writes a stream program of about N filters (for `cleave stream schedule` timing): a pipeline
# of stages that alternate peeking filters with 3-branch split-joins of different rates.
# Usage: /usr/bin/python3 bench/stream/big_program.py N OUT.json
import json
import sys


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    streams, count, i = [], 0, 0
    while count < n:
        if i % 2 == 0:
            streams.append({"filter": {"name": f"f{i}", "pop": 2, "peek": 3, "push": 2,
                                       "op": "slice"}})
            count += 1
        else:
            streams.append({"splitjoin": {
                "name": f"s{i}", "split": {"roundrobin": [1, 2, 1]},
                "streams": [
                    {"filter": {"name": f"s{i}a", "pop": 1, "push": 1, "op": "identity"}},
                    {"filter": {"name": f"s{i}b", "pop": 2, "push": 2, "op": "identity"}},
                    {"pipeline": {"name": f"s{i}c", "streams": [
                        {"filter": {"name": f"s{i}c0", "pop": 1, "peek": 2, "push": 2,
                                    "op": "slice"}},
                        {"filter": {"name": f"s{i}c1", "pop": 2, "push": 1, "op": "slice"}}]}}],
                "join": {"roundrobin": [1, 2, 1]}}})
            count += 4
        i += 1
    with open(out, "w") as f:
        json.dump({"pipeline": {"name": "big", "streams": streams}}, f)


main()
