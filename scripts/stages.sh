#!/usr/bin/env bash
# Runs each make target given after the make command, one after the other,
# and ends with a table of the seconds each took (also when one fails: the
# table then stops at it), so that a change in time shows where it happens.
#
#   scripts/stages.sh make lint test-rust ...
set -uo pipefail
make_cmd=$1
shift
names=()
secs=()
status=0
start_all=$SECONDS
for target in "$@"; do
	start=$SECONDS
	$make_cmd --no-print-directory "$target"
	status=$?
	names+=("$target")
	secs+=($((SECONDS - start)))
	[ $status -eq 0 ] || break
done
echo
echo "stage                  seconds"
echo "---------------------  -------"
for i in "${!names[@]}"; do
	mark=""
	if [ $status -ne 0 ] && [ "$i" -eq $((${#names[@]} - 1)) ]; then mark="  failed"; fi
	printf "%-21s  %7d%s\n" "${names[$i]}" "${secs[$i]}" "$mark"
done
printf "%-21s  %7d\n" "total" $((SECONDS - start_all))
exit $status
