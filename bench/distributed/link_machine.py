#!/usr/bin/python3
"""The link model of the emulated cluster, fitted from pingpong.c runs, as a machine file.

    link_machine.py PINGPONG.txt OUT.json --speeds 1,1,0.5 [--shaping NAME]
        [--endpoint-from UNSHAPED.txt] [--shared-link [--link-burst-bytes B]]

Writes a machine file of one device per speed ("rank0", ...), every pair linked by the fitted
latency and bandwidth, and prints one markdown row: shaping, 8 B / 1 MiB / 4 MiB round trips,
a waiting receiver's 8 B round trip, latency and bandwidth. Latency is what one 8-byte message
costs a rank that waits for it as cleave's ranks do (pingpong.c's "waiting_receiver" round trip
less the spinning one way): the TCP stack, and the wake-up of a rank that slept between its
polls, which a spinning ping-pong never pays and a loaded host makes long; half the spinning
round trip where the file has no such line. Bandwidth is a two-point fit over the 1 and 4 MiB
messages, which the small messages' scheduling noise does not move. PINGPONG.txt may hold
several runs one after another: each figure is then the median over the runs, so that one
slow run (a waiting round trip of 2.2 ms once, 0.09-0.15 ms in the three runs after it) does
not set the link model of a whole table.
The machine's endpoint_bandwidth (what each end of a message spends copying it: a sender after
its task, a reader that comes to a message after it arrived; docs/formats.md) is the same
two-point fit over an unshaped ping-pong, --endpoint-from (default PINGPONG.txt itself): a
shaped link slows the wire, not the ranks' copies. Its wake_seconds (the CPU of one poll of a
wait that sleeps at once, as a rank under a quota waits) is the median of that file's
"wake_cpu_us" lines, where it has any. Its send_seconds (cleave's own CPU per message a rank
sends beyond copying its bytes: header, datatype, posting, MPI's part) is the median of that
file's "send_us" lines, `cleave info --send-cost` run on two unshaped ranks and appended to it,
where it has any (the probe's own bytes, about 1 KB with the header, are left in it: 0.2 us
at the copy's rate).
--shared-link writes "shared_link": true: every message of every pair and direction crosses one
medium in turn, as emulated_cluster.sh --rate shapes one loopback with one tbf bucket (the
simulator then queues them; docs/formats.md); --link-burst-bytes B the bucket's depth (tbf's
burst), which the ping-pong cannot fit: its round trips keep the bucket empty.
"""
import argparse
import json
import statistics
import sys


def read_pingpong(path):
    """Per message size the median one-way seconds, and the waiting receiver's round trip."""
    samples = {}
    waiting_samples = []
    wake_samples = []
    send_samples = []
    try:
        lines = open(path).read().splitlines()
    except OSError as error:
        sys.exit(f"{path}: cannot read the ping-pong output ({error.strerror})")
    for line in lines:
        parts = line.split()
        if parts and parts[0] == "bytes":
            samples.setdefault(int(parts[1]), []).append(float(parts[3]) / 2e6)  # one way, s
        elif parts and parts[0] == "waiting_receiver":
            waiting_samples.append(float(parts[4]) / 1e6)
        elif parts and parts[0] == "wake_cpu_us":
            wake_samples.append(max(float(parts[1]), 0.0) / 1e6)
        elif parts and parts[0] == "send_us":
            send_samples.append(max(float(parts[1]), 0.0) / 1e6)
    rows = {size: statistics.median(values) for size, values in samples.items()}
    for size in (8, 1048576, 4194304):
        if size not in rows:
            sys.exit(f"{path}: no {size}-byte line (expected pingpong.c's output)")
    return (rows, statistics.median(waiting_samples) if waiting_samples else None,
            statistics.median(wake_samples) if wake_samples else None,
            statistics.median(send_samples) if send_samples else None)


def two_point_bandwidth(rows):
    return (4194304 - 1048576) / max(rows[4194304] - rows[1048576], 1e-9)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pingpong")
    parser.add_argument("output")
    parser.add_argument("--speeds", required=True)
    parser.add_argument("--shaping", default="")
    parser.add_argument("--endpoint-from", default=None)
    parser.add_argument("--shared-link", action="store_true")
    parser.add_argument("--link-burst-bytes", type=float, default=0)
    args = parser.parse_args()
    rows, waiting_round_trip, wake_seconds, send_seconds = read_pingpong(args.pingpong)
    if args.endpoint_from is not None:
        endpoint_rows, _, wake_seconds, send_seconds = read_pingpong(args.endpoint_from)
    else:
        endpoint_rows = rows
    try:
        speeds = [float(s) for s in args.speeds.split(",")]
    except ValueError:
        sys.exit(f"--speeds: expected numbers separated by commas, got {args.speeds!r}")
    if len(speeds) < 2 or min(speeds) <= 0:
        sys.exit(f"--speeds: expected two or more positive speeds, got {args.speeds!r}")
    latency = rows[8]
    if waiting_round_trip is not None:
        latency = max(latency, waiting_round_trip - rows[8])
    bandwidth = two_point_bandwidth(rows)
    n = len(speeds)
    link = lambda value: [[0 if u == v else value for v in range(n)] for u in range(n)]
    machine = {"devices": [{"name": f"rank{r}", "speed": s} for r, s in enumerate(speeds)],
               "bandwidth": link(bandwidth), "latency": link(latency),
               "endpoint_bandwidth": two_point_bandwidth(endpoint_rows)}
    if wake_seconds is not None:
        machine["wake_seconds"] = wake_seconds
    if send_seconds is not None:
        machine["send_seconds"] = send_seconds
    if args.link_burst_bytes < 0 or (args.link_burst_bytes > 0 and not args.shared_link):
        sys.exit(f"--link-burst-bytes: expected a non-negative number of bytes with --shared-link, "
                 f"got {args.link_burst_bytes:g}")
    if args.shared_link:
        machine["shared_link"] = True
        if args.link_burst_bytes > 0:
            machine["link_burst_bytes"] = args.link_burst_bytes
    with open(args.output, "w") as out:
        json.dump(machine, out)
    waiting = f"{waiting_round_trip * 1e6:.1f}" if waiting_round_trip is not None else "-"
    print(f"| {args.shaping} | {rows[8] * 2e6:.1f} | {rows[1048576] * 2e6:.1f} | "
          f"{rows[4194304] * 2e6:.1f} | {waiting} | {latency * 1e6:.1f}, {bandwidth / 1e9:.3f} |")


if __name__ == "__main__":
    main()
