#!/usr/bin/env bash
# Runs each make target given after the make command, one after the other,
# and ends with a table of the seconds each took (also when one fails: the
# table then stops at it), so that a change in time shows where it happens.
# Beside the wall-clock seconds, the CPU seconds of the stage's processes
# (user and system, of those it waited for): their ratio says how much of
# the machine's cores a stage kept busy.
#
#   scripts/stages.sh make lint test-rust ...
set -uo pipefail
make_cmd=$1
shift

# CPU time (in hundredths of a second) used so far by the finished
# children of this shell, into $cpu_now. `times` must run in this shell
# itself (a subshell would count its own children), so its second line
# ("1m2.345s 0m6.789s") goes through a file.
times_file=$(mktemp)
trap 'rm -f "$times_file"' EXIT
child_cpu() {
	times >"$times_file"
	cpu_now=$(sed -n 2p "$times_file" | awk '{
		t = 0
		for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); t += p[1] * 60 + p[2] }
		printf "%d\n", t * 100
	}')
}

names=()
secs=()
cpus=()
status=0
start_all=$SECONDS
child_cpu
cpu_all=$cpu_now
for target in "$@"; do
	start=$SECONDS
	child_cpu
	cpu=$cpu_now
	$make_cmd --no-print-directory "$target"
	status=$?
	names+=("$target")
	secs+=($((SECONDS - start)))
	child_cpu
	cpus+=($(((cpu_now - cpu + 50) / 100)))
	[ $status -eq 0 ] || break
done
echo
echo "stage                  seconds  cpu-seconds"
echo "---------------------  -------  -----------"
for i in "${!names[@]}"; do
	mark=""
	if [ $status -ne 0 ] && [ "$i" -eq $((${#names[@]} - 1)) ]; then mark="  failed"; fi
	printf "%-21s  %7d  %11d%s\n" "${names[$i]}" "${secs[$i]}" "${cpus[$i]}" "$mark"
done
child_cpu
printf "%-21s  %7d  %11d\n" "total" $((SECONDS - start_all)) $(((cpu_now - cpu_all + 50) / 100))
exit $status
