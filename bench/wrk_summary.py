#!/usr/bin/env python3
"""Reads wrk's output for the bench scripts and does their arithmetic on it,
so that a peer whose requests time out, or a wrk run that printed nothing,
gives a row that says so rather than a traceback (issue 43). Every value
comes in through argv or stdin; nothing is spliced into code.

A *measurement* is one line of six space-separated tokens, what
bench/wrk.sh's `measure` prints:

    rps p99 non2xx timeouts errors answered

  rps       wrk's Requests/sec, "-" when wrk printed none (it failed)
  p99       wrk's 99th percentile as it prints it ("1.54s", "652.31ms"),
            ">2s" when requests past wrk's timeout (2 s) are 1% or more of
            all (they have no latency, so the p99 is at least the timeout),
            "-" when there is none (no request answered, none timed out)
  non2xx    "Non-2xx or 3xx responses"
  timeouts  the timeout count of "Socket errors"
  errors    connect + read + write of "Socket errors"
  answered  the N of "N requests in", "-" when wrk printed none

A bare number (pgbench's tps) is also accepted where a measurement is.

Usage:
  wrk_summary.py parse [--timeout S]  < wrk-output   one measurement
  wrk_summary.py median LINE... -- LINE...            medians of two sets of
                                                      rounds, one line each
  wrk_summary.py ratio [--digits N] [--suffix x] [--peer NAME] OURS PEER
                                                      "1.23x", or "n/a: why"
  wrk_summary.py p99ratio OURS PEER                   "0.31", "<0.25", "n/a"
  wrk_summary.py goal FACTOR OURS PEER                titiler.sh's "met" /
                                                      "NOT met" / "n/a"
  wrk_summary.py notes [--timeout S] LABEL LINE       the "(...)" lines under
                                                      a row
  wrk_summary.py --self-test                          parses the saved
                                                      samples below
"""
import argparse
import math
import re
import statistics
import sys
import traceback

UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
# wrk's format_time_us: "850.00us", "12.34ms", "1.54s", "2.00m", "1.00h";
# ">2s" is ours (timed out), ">=2.00s" what measure printed before.
LATENCY = re.compile(r"(>=?)?(\d+(?:\.\d+)?)(us|ms|s|m|h)")
FALLBACK = "- - 0 0 0 -"


def latency(token):
    """(seconds, is_lower_bound) of a p99 token; None when it has no figure."""
    match = LATENCY.fullmatch(token or "")
    if not match:
        return None
    return float(match[2]) * UNITS[match[3]], bool(match[1])


def number(token):
    try:
        value = float(token)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def count(token):
    try:
        return int(token)
    except (TypeError, ValueError):
        return 0


def seconds_text(s):
    return f"{s:g}"


class Measurement:
    def __init__(self, rps=None, p99="-", non2xx=0, timeouts=0, errors=0, answered=None):
        self.rps, self.p99, self.non2xx = rps, p99, non2xx
        self.timeouts, self.errors, self.answered = timeouts, errors, answered

    @classmethod
    def from_line(cls, line):
        tokens = (line or "").split()
        tokens += ["-"] * (6 - len(tokens))
        rps, p99, non2xx, timeouts, errors, answered = tokens[:6]
        answered = int(answered) if answered.isdigit() else None
        return cls(number(rps), p99 if latency(p99) else "-", count(non2xx), count(timeouts), count(errors),
                   answered)

    def line(self):
        rps = "-" if self.rps is None else f"{self.rps:.2f}"
        answered = "-" if self.answered is None else str(self.answered)
        return f"{rps} {self.p99} {self.non2xx} {self.timeouts} {self.errors} {answered}"


def parse(text, timeout=2.0):
    """A Measurement of wrk's --latency output (any extra lines, such as a
    Lua done() summary, are ignored)."""
    m = Measurement()
    p99 = None
    for line in text.splitlines():
        line = line.strip()
        if match := re.match(r"Requests/sec:\s*(\S+)", line):
            m.rps = number(match[1])
        elif match := re.match(r"(\d+) requests in ", line):
            m.answered = int(match[1])
        elif match := re.match(r"99(?:\.0+)?%\s+(\S+)", line):
            p99 = match[1] if latency(match[1]) else None
        elif line.startswith("Socket errors:"):
            fields = dict((k, int(v)) for k, v in re.findall(r"(connect|read|write|timeout)\s+(\d+)", line))
            m.timeouts = fields.get("timeout", 0)
            m.errors = fields.get("connect", 0) + fields.get("read", 0) + fields.get("write", 0)
        elif match := re.match(r"Non-2xx or 3xx responses:\s*(\d+)", line):
            m.non2xx = int(match[1])
    answered = m.answered or 0
    if m.answered == 0:
        # wrk prints "0.00us" for every percentile of an empty histogram.
        p99 = None
    if m.timeouts > 0 and m.timeouts * 100 >= answered + m.timeouts:
        # Requests wrk gave up on have no latency; at 1% or more of all,
        # the p99 is at least the timeout.
        p99 = ">" + seconds_text(timeout) + "s"
    m.p99 = p99 or "-"
    return m


def median(lines):
    """One Measurement of several rounds: the median requests/s and p99 of
    the rounds that have them, the counts summed."""
    runs = [Measurement.from_line(line) for line in lines]
    out = Measurement()
    rates = [r.rps for r in runs if r.rps is not None]
    if rates:
        out.rps = statistics.median(rates)
    p99s = sorted((r.p99 for r in runs if latency(r.p99)), key=lambda p: latency(p)[0] + (1e-9 if latency(p)[1] else 0))
    if p99s:
        # The upper median, as measure_pair always took.
        out.p99 = p99s[len(p99s) // 2]
    out.non2xx = sum(r.non2xx for r in runs)
    out.timeouts = sum(r.timeouts for r in runs)
    out.errors = sum(r.errors for r in runs)
    if any(r.answered is not None for r in runs):
        out.answered = sum(r.answered or 0 for r in runs)
    return out


def no_rate(m, name):
    """Why `m` gives no rate to divide by, or None when it gives one."""
    if m.rps is None:
        return f"no figure from {name}"
    if m.rps <= 0:
        why = f"{name} answered no request"
        return why + (f" (timeouts: {m.timeouts})" if m.timeouts else "")
    return None


def ratio(ours, peer, digits=2, suffix="x", peer_name="the peer", ours_name="our run"):
    if ours.rps is None:
        return f"n/a: no figure from {ours_name}"
    if why := no_rate(peer, peer_name):
        return "n/a: " + why
    return f"{ours.rps / peer.rps:.{digits}f}{suffix}"


def p99_ratio(ours, peer):
    """Our p99 over the peer's: "<" when the peer's is only a lower bound
    (it timed out), ">" when ours is, "n/a" when either has none or both
    are bounds."""
    a, b = latency(ours.p99), latency(peer.p99)
    if a is None or b is None or (a[1] and b[1]) or b[0] <= 0:
        return "n/a"
    prefix = "<" if b[1] else ">" if a[1] else ""
    return f"{prefix}{a[0] / b[0]:.2f}"


def goal(factor, ours, peer):
    """(faster, lower) against a goal of `factor` times the peer's rate and
    a lower p99; None for either when it cannot be told."""
    faster = None
    if ours.rps is not None and peer.rps is not None:
        faster = ours.rps >= factor * peer.rps
    lower = None
    a, b = latency(ours.p99), latency(peer.p99)
    if a is not None and b is not None:
        ours_at_most = math.inf if a[1] else a[0]
        if ours_at_most < b[0]:
            lower = True
        elif not b[1]:
            # The peer's p99 is a figure and ours is at least as high.
            lower = False
        # Else ours is a figure at or above the peer's lower bound, or both
        # are bounds: it cannot be told.
    return faster, lower


def notes(label, m, timeout=2.0):
    lines = []
    if m.rps is None:
        lines.append(f"  ({label}: wrk printed no figures; its error is in the log)")
    if m.non2xx:
        lines.append(f"  ({label} answered {m.non2xx} non-2xx responses)")
    if m.timeouts:
        lines.append(f"  ({label}: timeouts: {m.timeouts}, requests unanswered after wrk's {seconds_text(timeout)} s)")
    if m.errors:
        lines.append(f"  ({label}: socket errors: {m.errors}, connect/read/write)")
    return lines


# Saved wrk 4.1 outputs (`wrk -t2 -c8 -dNs --latency URL`), as the benches
# see them on a busy 2-core machine.
SAMPLES = {
    "fast": """\
Running 5s test @ http://127.0.0.1:18082/points/6/33/22
  2 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   190.31us  410.22us  14.87ms   97.91%
    Req/Sec    18.92k     1.73k   21.30k    80.00%
  Latency Distribution
     50%  112.00us
     75%  160.00us
     90%  260.00us
     99%    1.21ms
  188236 requests in 5.00s, 4.98GB read
Requests/sec:  37544.10
Transfer/sec:      0.99GB
""",
    "crowded": """\
Running 5s test @ http://127.0.0.1:18080/api/tiles/abc/3/4/2.pbf
  2 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   683.95ms  192.10ms   1.39s    79.12%
    Req/Sec     6.47      4.12    20.00     71.43%
  Latency Distribution
     50%  652.31ms
     75%  757.50ms
     90%  884.11ms
     99%    1.11s
  58 requests in 5.01s, 78.62MB read
Requests/sec:     11.58
Transfer/sec:     15.69MB
""",
    # One timeout in 600 requests: p99 stays wrk's, the timeout is counted.
    "one_timeout": """\
Running 5s test @ http://127.0.0.1:18082/points/3/4/2
  2 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   512.10ms  301.44ms   1.98s    70.02%
    Req/Sec     8.40      5.01    30.00     66.12%
  Latency Distribution
     50%  433.20ms
     75%  690.05ms
     90%    1.01s
     99%    1.87s
  600 requests in 5.02s, 808.91MB read
  Socket errors: connect 0, read 0, write 0, timeout 1
Requests/sec:    119.52
Transfer/sec:    161.14MB
""",
    # The peer on a busy machine: 37 of 79 requests past wrk's 2 s, and 404s.
    "busy": """\
Running 5s test @ http://127.0.0.1:18082/points/3/4/2
  2 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.43s   402.77ms   1.99s    62.50%
    Req/Sec     2.41      2.88    10.00     87.10%
  Latency Distribution
     50%    1.51s
     75%    1.77s
     90%    1.93s
     99%    1.99s
  42 requests in 5.03s, 56.81MB read
  Socket errors: connect 0, read 0, write 0, timeout 37
  Non-2xx or 3xx responses: 3
Requests/sec:      8.35
Transfer/sec:     11.29MB
""",
    # Zero successful requests: every connection timed out.
    "stalled": """\
Running 5s test @ http://127.0.0.1:18083/cog/tiles/WebMercatorQuad/12/2200/1343.png?url=/x.tif
  2 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     0.00us    0.00us   0.00us    -nan%
    Req/Sec     0.00      0.00     0.00      -nan%
  Latency Distribution
     50%    0.00us
     75%    0.00us
     90%    0.00us
     99%    0.00us
  0 requests in 5.01s, 0.00B read
  Socket errors: connect 0, read 0, write 0, timeout 16
Requests/sec:      0.00
Transfer/sec:       0.00B
""",
    # Connections reset under load, no timeouts, nothing answered.
    "resets": """\
Running 3s test @ http://127.0.0.1:18081/collections/data.points/items?limit=100
  2 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     0.00us    0.00us   0.00us    -nan%
    Req/Sec     0.00      0.00     0.00      -nan%
  Latency Distribution
     50%    0.00us
     75%    0.00us
     90%    0.00us
     99%    0.00us
  0 requests in 3.00s, 0.00B read
  Socket errors: connect 8, read 0, write 0, timeout 0
Requests/sec:      0.00
Transfer/sec:       0.00B
""",
    # wrk exits 1 before its run ("unable to connect to 127.0.0.1:18083
    # Connection refused", on stderr): nothing on stdout.
    "wrk_failed": "",
    # A long --timeout: minutes, and a line a Lua done() could add.
    "minutes": """\
Running 2m test @ http://127.0.0.1:18083/cog/tiles/WebMercatorQuad/10/550/335.png
  2 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    21.44s    20.01s    1.52m    80.00%
    Req/Sec     0.10      0.30     1.00     90.00%
  Latency Distribution
     50%   14.90s
     75%   30.12s
     90%   58.77s
     99%    1.47m
  44 requests in 2.00m, 3.10MB read
Requests/sec:      0.37
Transfer/sec:     26.45KB
tile_list: 412 paths
""",
}


def self_test():
    """Parses the samples, prints a martin-style and a titiler-style table
    from them, and checks the figures; exits 1 on a wrong one."""
    failures = []

    def check(what, got, want):
        if got != want:
            failures.append(f"{what}: got {got!r}, want {want!r}")

    parsed = {name: parse(text) for name, text in SAMPLES.items()}
    print(f"{'sample':<13} measurement (rps p99 non2xx timeouts errors answered)")
    for name, m in parsed.items():
        print(f"{name:<13} {m.line()}")
    check("fast", parsed["fast"].line(), "37544.10 1.21ms 0 0 0 188236")
    check("crowded", parsed["crowded"].line(), "11.58 1.11s 0 0 0 58")
    check("one_timeout", parsed["one_timeout"].line(), "119.52 1.87s 0 1 0 600")
    check("busy", parsed["busy"].line(), "8.35 >2s 3 37 0 42")
    check("stalled", parsed["stalled"].line(), "0.00 >2s 0 16 0 0")
    check("resets", parsed["resets"].line(), "0.00 - 0 0 8 0")
    check("wrk_failed", parsed["wrk_failed"].line(), FALLBACK)
    check("minutes", parsed["minutes"].line(), "0.37 1.47m 0 0 0 44")
    check("timeout 1.5", parse(SAMPLES["stalled"], 1.5).p99, ">1.5s")
    for name, m in parsed.items():
        check(f"{name} read back", Measurement.from_line(m.line()).line(), m.line())

    # measure_pair's medians of three rounds, as martin.sh reads them back.
    rounds = {
        "fast": ["fast"] * 3,
        "crowded": ["crowded", "crowded", "one_timeout"],
        "busy": ["busy", "stalled", "busy"],
        "stalled": ["stalled"] * 3,
        "wrk_failed": ["wrk_failed"] * 3,
        "mixed": ["wrk_failed", "crowded", "busy"],
    }
    pair = {name: Measurement.from_line(median([parsed[s].line() for s in runs]).line())
            for name, runs in rounds.items()}
    check("median crowded", pair["crowded"].line(), "11.58 1.11s 0 1 0 716")
    check("median busy", pair["busy"].line(), "8.35 >2s 6 90 0 84")
    check("median wrk_failed", pair["wrk_failed"].line(), FALLBACK)
    check("median mixed", pair["mixed"].line(), "9.96 >2s 3 37 0 100")
    check("median old p99 token", median(["5 >=2.00s 0 9 0 4", "6 1.2s 0 0 0 60", "7 900ms 0 0 0 70"]).p99, "1.2s")

    def rate(m):
        return m.line().split()[0]

    print()
    print("martin.sh's rows (medians of the rounds above; 'tile' names ours/martin's):")
    print(f"{'cache':<6} {'tile':<22} {'ours req/s':>12} {'ours p99':>10} {'martin req/s':>12} {'martin p99':>10} "
          f"{'ratio':>8}")
    for ours_name, peer_name in [("fast", "crowded"), ("crowded", "busy"), ("crowded", "stalled"),
                                 ("crowded", "wrk_failed"), ("wrk_failed", "crowded"), ("crowded", "mixed")]:
        ours, peer = pair[ours_name], pair[peer_name]
        print(f"{'off':<6} {ours_name + '/' + peer_name:<22} {rate(ours):>12} {ours.p99:>10} {rate(peer):>12} "
              f"{peer.p99:>10} {ratio(ours, peer, 2, 'x', 'martin'):>8}")
        for line in notes(f"our {ours_name}", ours) + notes(f"martin's {peer_name}", peer):
            print(line)
    check("ratio", ratio(parsed["fast"], parsed["crowded"], 2, "x", "martin"), "3242.15x")
    check("ratio no peer", ratio(parsed["crowded"], parsed["stalled"], 2, "x", "martin"),
          "n/a: martin answered no request (timeouts: 16)")
    check("ratio no figure", ratio(parsed["crowded"], parsed["wrk_failed"], 1, "x", "titiler"),
          "n/a: no figure from titiler")
    check("ratio ours none", ratio(parsed["wrk_failed"], parsed["crowded"]), "n/a: no figure from our run")
    check("ratio ours zero", ratio(parsed["stalled"], parsed["crowded"]), "0.00x")
    check("ratio pgbench empty", ratio(parsed["crowded"], Measurement.from_line(""), 2, "", "pgbench"),
          "n/a: no figure from pgbench")
    check("ratio pgbench", ratio(parsed["crowded"], Measurement.from_line("9.5"), 2, "", "pgbench"), "1.22")

    print()
    print("titiler.sh's rows (single runs; 'mix' names ours/titiler's):")
    print(f"{'mix':<22} {'ours t/s':>10} {'ours p99':>10} {'titiler t/s':>12} {'titiler p99':>11} {'ratio':>7} "
          f"{'p99 ours':>9} {'goal':>6}")
    for ours_name, peer_name in [("crowded", "fast"), ("crowded", "busy"), ("crowded", "stalled"),
                                 ("crowded", "wrk_failed"), ("stalled", "busy"), ("minutes", "crowded"),
                                 ("fast", "resets")]:
        ours, peer = parsed[ours_name], parsed[peer_name]
        print(f"{ours_name + '/' + peer_name:<22} {rate(ours):>10} {ours.p99:>10} {rate(peer):>12} {peer.p99:>11} "
              f"{ratio(ours, peer, 1, 'x', 'titiler'):>7} {p99_ratio(ours, peer):>9} {goal_words(3, ours, peer):>6}")
        for line in notes(f"our {ours_name}", ours) + notes(f"titiler's {peer_name}", peer):
            print(line)
    check("p99 ratio", p99_ratio(parsed["crowded"], parsed["fast"]), "917.36")
    check("p99 ratio bound", p99_ratio(parsed["crowded"], parsed["busy"]), "<0.56")
    check("p99 ratio ours bound", p99_ratio(parsed["busy"], parsed["crowded"]), ">1.80")
    check("p99 ratio both bounds", p99_ratio(parsed["stalled"], parsed["busy"]), "n/a")
    check("p99 ratio none", p99_ratio(parsed["crowded"], parsed["wrk_failed"]), "n/a")
    check("goal met", goal_words(3, parsed["fast"], parsed["crowded"]), "met")
    check("goal timed-out peer", goal_words(3, parsed["crowded"], parsed["stalled"]), "met")
    check("goal slower", goal_words(3, parsed["crowded"], parsed["fast"]), "NOT met")
    check("goal no figure", goal_words(3, parsed["crowded"], parsed["wrk_failed"]), "n/a")
    check("goal ours timed out", goal_words(3, parsed["stalled"], parsed["busy"]), "NOT met")

    print()
    if failures:
        print("self-test: FAILED")
        for f in failures:
            print("  " + f)
        return 1
    print(f"self-test: {len(SAMPLES)} samples parsed, every figure as expected, no traceback")
    return 0


def goal_words(factor, ours, peer):
    faster, lower = goal(factor, ours, peer)
    if faster is False or lower is False:
        return "NOT met"
    if faster is None or lower is None:
        return "n/a"
    return "met"


def main(argv):
    if argv[:1] == ["--self-test"]:
        return self_test()
    if argv[:1] == ["median"]:
        # By hand: argparse would drop the "--" between the two sets.
        lines = argv[1:]
        cut = lines.index("--") if "--" in lines else len(lines)
        try:
            print(median(lines[:cut]).line())
            print(median(lines[cut + 1:]).line())
        except Exception:  # see below
            traceback.print_exc(file=sys.stderr)
            print(FALLBACK + "\n" + FALLBACK)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parse")
    p.add_argument("--timeout", type=float, default=2.0)
    p = sub.add_parser("ratio")
    p.add_argument("--digits", type=int, default=2)
    p.add_argument("--suffix", default="x")
    p.add_argument("--peer", default="the peer")
    p.add_argument("--ours", default="our run")
    p.add_argument("ours_line")
    p.add_argument("peer_line")
    p = sub.add_parser("p99ratio")
    p.add_argument("ours_line")
    p.add_argument("peer_line")
    p = sub.add_parser("goal")
    p.add_argument("factor", type=float)
    p.add_argument("ours_line")
    p.add_argument("peer_line")
    p = sub.add_parser("notes")
    p.add_argument("--timeout", type=float, default=2.0)
    p.add_argument("label")
    p.add_argument("line")
    args = parser.parse_args(argv)

    fallback = {"parse": FALLBACK, "ratio": "n/a", "p99ratio": "n/a",
                "goal": "n/a", "notes": ""}[args.command]
    try:
        if args.command == "parse":
            print(parse(sys.stdin.read(), args.timeout).line())
        elif args.command == "ratio":
            print(ratio(Measurement.from_line(args.ours_line), Measurement.from_line(args.peer_line), args.digits,
                        args.suffix, args.peer, args.ours))
        elif args.command == "p99ratio":
            print(p99_ratio(Measurement.from_line(args.ours_line), Measurement.from_line(args.peer_line)))
        elif args.command == "goal":
            print(goal_words(args.factor, Measurement.from_line(args.ours_line), Measurement.from_line(args.peer_line)))
        elif args.command == "notes":
            for line in notes(args.label, Measurement.from_line(args.line), args.timeout):
                print(line)
    except Exception:  # never stop a bench over a figure: say so in the log, print a placeholder
        traceback.print_exc(file=sys.stderr)
        if fallback:
            print(fallback)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
