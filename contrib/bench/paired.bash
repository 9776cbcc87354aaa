# SPDX-License-Identifier: Apache-2.0
# Differences of whole lives, for contrib/bench/start.sh and shim.sh
# (sourced; not a benchmark of its own).  A whole life through runc swings
# by several ms from run to run here (runc's own CPU time, 27-31 ms p25-p75
# on the 2-core VM), so a difference is taken round by round (the two runs
# of a round side by side) and summed up by the median of the rounds'
# differences; its spread and its precision are printed beside it.
# Files hold one figure (µs) a line, the rounds in the same order.

# paired A B: the median of A[i] - B[i], in ms.
paired () { paste "$1" "$2" | awk '{print $1 - $2}' | sort -n |
  awk '{v[NR]=$1} END {if (NR == 0) print "n/a"; else printf "%+.2f", v[int((NR+1)/2)]/1000}'; }
# paired_q A B: "p25..p75" of those differences (a whole life's noise).
paired_q () { paste "$1" "$2" | awk '{print $1 - $2}' | sort -n |
  awk '{v[NR]=$1} END {if (NR == 0) print "n/a"; else printf "%+.1f..%+.1f", v[int((NR+3)/4)]/1000, v[int((3*NR+3)/4)]/1000}'; }
# paired_ci A B: "lo..hi", the 95% confidence interval of that median, from
# the order statistics of the differences (no assumption on their
# distribution: ranks n/2 -+ 0.98 sqrt(n)); it narrows as the rounds grow.
paired_ci () { paste "$1" "$2" | awk '{print $1 - $2}' | sort -n |
  awk '{v[NR]=$1} END {
    if (NR < 6) { print "n/a"; exit }
    h = 0.98 * sqrt(NR); lo = int(NR / 2 - h); hi = int(NR / 2 + 1 + h + 0.999)
    if (lo < 1) lo = 1; if (hi > NR) hi = NR
    printf "%+.1f..%+.1f", v[lo]/1000, v[hi]/1000 }'; }

# ratio_ci A B S: the rounds' ratios (A[i] - S) / (B[i] - S), S a spawn to
# subtract (µs, 0 for none), as "median (lo..hi)": the median and its 95%
# confidence interval from the ratios' order statistics, as paired_ci.
ratio_ci () { paste "$1" "$2" | awk -v s="$3" '{a = $1 - s; b = $2 - s; if (b > 0) print a / b}' | sort -g |
  awk '{v[NR]=$1} END {
    if (NR < 6) { print "n/a"; exit }
    h = 0.98 * sqrt(NR); lo = int(NR / 2 - h); hi = int(NR / 2 + 1 + h + 0.999)
    if (lo < 1) lo = 1; if (hi > NR) hi = NR
    printf "%.2fx (%.2f..%.2f)", v[int((NR+1)/2)], v[lo], v[hi] }'; }
# median_ci A S: the median of A[i] - S in ms and its 95% interval.
median_ci () { awk -v s="$2" '{print $1 - s}' "$1" | sort -g |
  awk '{v[NR]=$1} END {
    if (NR < 6) { print "n/a"; exit }
    h = 0.98 * sqrt(NR); lo = int(NR / 2 - h); hi = int(NR / 2 + 1 + h + 0.999)
    if (lo < 1) lo = 1; if (hi > NR) hi = NR
    printf "%.2f (%.2f..%.2f)", v[int((NR+1)/2)]/1000, v[lo]/1000, v[hi]/1000 }'; }
