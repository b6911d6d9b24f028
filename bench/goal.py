"""Prints whether our figures meet a speed goal against the peer's from the
same run: at least RATIO times the peer's requests/s and a lower p99.
Usage: goal.py OURS_RPS OURS_P99 PEER_RPS PEER_P99 RATIO (p99 as wrk prints
it, e.g. 20.7ms or 1.2s)."""
import re
import sys


def seconds(latency: str) -> float:
    # ">=2.00s": requests that timed out (bench/common.sh's `measure`).
    match = re.fullmatch(r"(?:>=)?([\d.]+)(us|ms|s|m)", latency)
    if not match:
        return float("nan")
    value, unit = float(match[1]), match[2]
    return value * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[unit]


ours_rps, ours_p99, peer_rps, peer_p99, ratio = sys.argv[1:6]
faster = float(ours_rps) >= float(ratio) * max(float(peer_rps), 1e-9)
lower = seconds(ours_p99) < seconds(peer_p99)
missed = [name for name, ok in (("rate", faster), ("p99", lower)) if not ok]
print("met" if not missed else "missed: " + ", ".join(missed))
