#!/usr/bin/env bash
# Runs make targets as stages and ends with a table of the seconds each
# took, so that a change in time shows where it happens.
#
#   scripts/stages.sh MAKE STAGE... [-- STAGE... [-- STAGE...]]
#
# The stages before the first `--` run one after the other. Each group
# after a `--` is a lane: the lanes then run side by side, each its stages
# one after the other. Stages in different lanes must not need each
# other's results. While lanes run, each line a stage prints is shown with
# the stage's name before it, and the stage's whole output is kept in
# $STAGES_LOG_DIR/<stage>.log (default target/stages).
#
# When a stage fails, its lane stops and the other lanes stop after the
# stage they are running; the table marks the stage, and the end of its
# log is printed again above the table.
#
# Beside the wall-clock seconds of each stage, its CPU seconds (user and
# system, of the processes the stage waited for): their ratio says how much
# of the machine's cores the stage kept busy.
set -uo pipefail
make_cmd=$1
shift
log_dir=${STAGES_LOG_DIR:-${CARGO_TARGET_DIR:-target}/stages}
mkdir -p "$log_dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start_all=$SECONDS

# CPU time (in hundredths of a second) used so far by the finished
# children of the calling shell, into $cpu_now. `times` must run in that
# shell itself (a subshell would count its own children), so its second
# line ("1m2.345s 0m6.789s") goes through a file.
child_cpu() {
	local file=$work/times.$BASHPID
	times >"$file"
	cpu_now=$(sed -n 2p "$file" | awk '{
		t = 0
		for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); t += p[1] * 60 + p[2] }
		printf "%d\n", t * 100
	}')
}

# run_lane LANE PREFIX STAGE...: runs the stages in order, appending
# "stage lane start seconds cpu status" to $work/results. PREFIX=1 shows
# each output line with the stage's name before it.
run_lane() {
	local lane=$1 prefix=$2 target start cpu status label
	shift 2
	for target in "$@"; do
		[ -e "$work/stop" ] && break
		start=$SECONDS
		child_cpu
		cpu=$cpu_now
		label=""
		[ "$prefix" = 1 ] && label="[$target] "
		$make_cmd --no-print-directory "$target" 2>&1 | tee "$log_dir/$target.log" | sed -u "s/^/$label/"
		status=${PIPESTATUS[0]}
		child_cpu
		echo "$target $lane $((start - start_all)) $((SECONDS - start)) $(((cpu_now - cpu + 50) / 100)) $status" >>"$work/results"
		if [ "$status" -ne 0 ]; then
			touch "$work/stop"
			break
		fi
	done
}

# The stages before the first `--`, then the lanes.
all_stages=()
for a in "$@"; do [ "$a" != "--" ] && all_stages+=("$a"); done
serial=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	serial+=("$1")
	shift
done
touch "$work/results"
child_cpu
cpu_all=$cpu_now
[ ${#serial[@]} -gt 0 ] && run_lane - 0 "${serial[@]}"
lane=0
while [ $# -gt 0 ] && [ ! -e "$work/stop" ]; do
	shift
	group=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do
		group+=("$1")
		shift
	done
	lane=$((lane + 1))
	[ ${#group[@]} -gt 0 ] && run_lane "$lane" 1 "${group[@]}" &
done
wait

status=0
echo
while read -r name _ _ _ _ st; do
	if [ "$st" -ne 0 ]; then
		status=1
		echo "== $name failed (exit status $st); the end of its log, $log_dir/$name.log:"
		tail -n 60 "$log_dir/$name.log"
		echo
	fi
done <"$work/results"
echo "stage                  lane  start  seconds  cpu-seconds"
echo "---------------------  ----  -----  -------  -----------"
while read -r name ln st secs cpu s; do
	mark=""
	[ "$s" -ne 0 ] && mark="  failed"
	printf "%-21s  %4s  %5d  %7d  %11d%s\n" "$name" "$ln" "$st" "$secs" "$cpu" "$mark"
done < <(sort -s -n -k3,3 "$work/results")
for name in "${all_stages[@]}"; do
	grep -q "^$name " "$work/results" || printf "%-21s  not run\n" "$name"
done
child_cpu
printf "%-21s  %4s  %5s  %7d  %11d\n" "total" "" "" $((SECONDS - start_all)) $(((cpu_now - cpu_all + 50) / 100))
exit $status
