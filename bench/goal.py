"""Prints whether our figures meet a speed goal against the peer's from the
same run: at least RATIO times the peer's requests/s and a lower p99.
Usage: goal.py OURS_RPS OURS_P99 PEER_RPS PEER_P99 RATIO (as bench/wrk.sh's
`measure` prints them: a p99 as wrk prints it, e.g. 20.7ms or 1.2s, ">2s"
when requests timed out, "-" for a figure wrk did not give). Prints "met",
"missed: rate, p99", or "n/a: ..." when a figure is missing."""
import sys

from wrk_summary import Measurement, goal, number

ours_rps, ours_p99, peer_rps, peer_p99, ratio = (sys.argv[1:6] + [""] * 5)[:5]
faster, lower = goal(number(ratio) or 1.0, Measurement.from_line(f"{ours_rps or '-'} {ours_p99 or '-'}"),
                     Measurement.from_line(f"{peer_rps or '-'} {peer_p99 or '-'}"))
missed = [name for name, ok in (("rate", faster), ("p99", lower)) if ok is False]
unknown = [name for name, ok in (("rate", faster), ("p99", lower)) if ok is None]
if missed:
    print("missed: " + ", ".join(missed) + (f" (no {' or '.join(unknown)} figure)" if unknown else ""))
elif unknown:
    print(f"n/a: no {' or '.join(unknown)} figure")
else:
    print("met")
