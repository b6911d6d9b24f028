# wrk for the bench scripts (sourced by bench/common.sh, and alone by
# bench/parse_check.sh): `measure` and `measure_pair` print *measurement*
# lines, which bench/wrk_summary.py reads (see its docstring):
#
#   rps p99 non2xx timeouts errors answered
#
# "-" stands for a figure wrk did not give, and a p99 of ">2s" for requests
# past wrk's timeout (WRK_TIMEOUT seconds, 2) being 1% or more of all. Both
# always print their lines and return 0: a peer that times out, or a wrk
# that fails, gives a row saying so, not a stopped bench. Run from the
# repository's root (the scripts cd there). Expects CONNECTIONS and DURATION.
# shellcheck shell=bash

WRK_TIMEOUT=${WRK_TIMEOUT:-2}

# measure URL [WRK_ARG ...]: one wrk run, as a measurement line.
measure() {
  local url=$1 out status=0
  shift
  out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --timeout "${WRK_TIMEOUT}s" --latency "$@" "$url") || status=$?
  if ((status)); then
    echo "wrk exited with status $status for $url (its message is above)" >&2
  fi
  python3 bench/wrk_summary.py parse --timeout "$WRK_TIMEOUT" <<<"$out"
}

# measure_pair URL_OURS URL_PEER: `measure` of both servers over ROUNDS
# rounds (default 3) of DURATION/ROUNDS seconds each, alternating which
# goes first, so a drift of this shared machine's speed falls on both.
# Prints two measurement lines, ours then the peer's: each the median
# requests/s and median p99 of the rounds that gave one, and the counts
# summed over the rounds.
measure_pair() {
  local rounds=${ROUNDS:-3} round first second
  local -a ours=() peer=()
  local seconds=$(((DURATION + rounds - 1) / rounds))
  for ((round = 0; round < rounds; round++)); do
    if ((round % 2 == 0)); then first=$1 second=$2; else first=$2 second=$1; fi
    local a b
    a=$(DURATION=$seconds measure "$first")
    b=$(DURATION=$seconds measure "$second")
    if [[ $first == "$1" ]]; then ours+=("$a") peer+=("$b"); else ours+=("$b") peer+=("$a"); fi
  done
  python3 bench/wrk_summary.py median "${ours[@]}" -- "${peer[@]}"
}

# wrk_notes LABEL MEASUREMENT: the "(...)" lines printed under a row: its
# non-2xx responses, timeouts, socket errors, or that wrk gave no figures.
wrk_notes() {
  python3 bench/wrk_summary.py notes --timeout "$WRK_TIMEOUT" "$1" "$2"
}
