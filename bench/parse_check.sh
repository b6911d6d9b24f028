#!/usr/bin/env bash
# Checks, without the service or wrk, that the benches read wrk's output
# and print their rows whatever a peer does (issue 43): the parser's own
# self-test on saved wrk outputs (bench/wrk_summary.py, SAMPLES), then
# bench/wrk.sh's `measure` and `measure_pair` with `wrk` replaced by a
# function printing those samples, and martin.sh's, titiler.sh's and
# items.sh's row code on what they print (a row's first column names the
# samples standing for our run and the peer's), under `set -euo pipefail`
# as in the benches. Samples: fast, crowded, one_timeout, busy (37
# timeouts and 404s), stalled (every request timed out, 0 answered),
# resets (connect errors, 0 answered), wrk_failed (wrk exits 1, prints
# nothing), minutes.
#
#   bench/parse_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

python3 bench/wrk_summary.py --self-test

source bench/wrk.sh
CONNECTIONS=8 DURATION=15 ROUNDS=3

# wrk ... URL: the saved sample named by URL's last part; "wrk_failed" as
# wrk does when it cannot connect (a message on stderr, exit status 1).
wrk() {
  local name=${!#}
  name=${name##*/}
  if [[ $name == wrk_failed ]]; then
    echo "unable to connect to 127.0.0.1:18083 Connection refused" >&2
    return 1
  fi
  python3 -c 'import sys; sys.path.insert(0, "bench"); from wrk_summary import SAMPLES; sys.stdout.write(SAMPLES[sys.argv[1]])' "$name"
}

echo
echo "measure, one line per sample (wrk replaced by the samples; its stderr shown):"
for name in fast crowded one_timeout busy stalled resets wrk_failed minutes; do
  # As titiler.sh and items.sh read it.
  line=$(measure "http://sample/$name")
  read -r rps p99 _ <<<"$line"
  printf '  %-12s %-32s rps=%s p99=%s\n' "$name" "$line" "$rps" "$p99"
done

echo
echo "martin.sh's table (measure_pair, $ROUNDS rounds each; the tile column names our sample/martin's):"
printf '\n%-6s %-12s %9s %12s %10s %12s %10s %8s\n' cache tile features "ours req/s" "ours p99" "martin req/s" "martin p99" ratio
for pairing in "fast crowded" "crowded busy" "crowded stalled" "crowded wrk_failed" "wrk_failed crowded" "stalled stalled"; do
  read -r ours_sample martin_sample <<<"$pairing"
  tile=$ours_sample/$martin_sample ours=344
  # From here as in bench/martin.sh.
  mapfile -t pair < <(measure_pair "http://sample/$ours_sample" "http://sample/$martin_sample" 2>/dev/null)
  ours_m=${pair[0]:-} martin_m=${pair[1]:-}
  read -r ours_rps ours_p99 _ <<<"$ours_m"
  read -r martin_rps martin_p99 _ <<<"$martin_m"
  ratio=$(python3 bench/wrk_summary.py ratio --digits 2 --peer martin "$ours_m" "$martin_m")
  printf '%-6s %-12s %9s %12s %10s %12s %10s %8s\n' off "$tile" "$ours" "$ours_rps" "$ours_p99" "$martin_rps" "$martin_p99" "$ratio"
  wrk_notes "our $tile" "$ours_m"
  wrk_notes "martin's $tile" "$martin_m"
done

echo
echo "titiler.sh's table (the mix column names our sample/titiler's):"
printf '\n%-13s %9s %10s %10s %12s %11s %7s %9s %6s\n' mix diff/mask "ours t/s" "ours p99" "titiler t/s" "titiler p99" ratio "p99 ours" goal
for pairing in "crowded fast" "crowded busy" "crowded stalled" "crowded wrk_failed" "stalled busy"; do
  read -r ours_sample theirs_sample <<<"$pairing"
  mix=$ours_sample/$theirs_sample agree=0.1/1.00
  # From here as in bench/titiler.sh.
  ours_m=$(TILE_PATHS=/dev/null measure "http://sample/$ours_sample" -s bench/tile_list.lua 2>/dev/null)
  theirs_m=$(TILE_PATHS=/dev/null measure "http://sample/$theirs_sample" -s bench/tile_list.lua 2>/dev/null)
  read -r ours_rps ours_p99 _ <<<"$ours_m"
  read -r theirs_rps theirs_p99 _ <<<"$theirs_m"
  ratio=$(python3 bench/wrk_summary.py ratio --digits 1 --peer titiler "$ours_m" "$theirs_m")
  p99_ratio=$(python3 bench/wrk_summary.py p99ratio "$ours_m" "$theirs_m")
  goal=$(python3 bench/wrk_summary.py goal 3 "$ours_m" "$theirs_m")
  printf '%-13s %9s %10s %10s %12s %11s %7s %9s %6s\n' "$mix" "$agree" "$ours_rps" "$ours_p99" "$theirs_rps" "$theirs_p99" "$ratio" "$p99_ratio" "$goal"
  wrk_notes "our $mix" "$ours_m"
  wrk_notes "titiler's $mix" "$theirs_m"
done

echo
echo "items.sh's and tiles.sh's cells (our sample/tipg's, pgbench's tps, goal.py):"
for pairing in "fast busy 2500.10" "crowded stalled -" "crowded resets 9.5" "wrk_failed fast 3000"; do
  read -r ours_sample tipg_sample db_tps <<<"$pairing"
  [[ $db_tps != - ]] || db_tps=""
  ours_m=$(measure "http://sample/$ours_sample" 2>/dev/null)
  tipg_m=$(measure "http://sample/$tipg_sample" 2>/dev/null)
  read -r ours_rps ours_p99 _ <<<"$ours_m"
  read -r tipg_rps tipg_p99 _ <<<"$tipg_m"
  ratio=$(python3 bench/wrk_summary.py ratio --digits 1 --peer tipg "$ours_m" "$tipg_m")
  vs_db=$(python3 bench/wrk_summary.py ratio --digits 2 --suffix '' --peer pgbench "$ours_m" "$db_tps")
  goal=$(python3 bench/goal.py "$ours_rps" "$ours_p99" "$tipg_rps" "$tipg_p99" 5)
  printf '  %-10s %12s %10s %12s %10s %8s %12s %10s %s\n' "$ours_sample/$tipg_sample" "$ours_rps" "$ours_p99" "$tipg_rps" "$tipg_p99" "$ratio" "${db_tps:--}" "$vs_db" "$goal"
  wrk_notes "tipg's $tipg_sample" "$tipg_m"
done

echo
echo "parse check: every table printed to its end"
