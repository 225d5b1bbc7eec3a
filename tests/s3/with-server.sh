#!/usr/bin/env bash
# Runs a command against a local S3 server started for it alone:
#
#   tests/s3/with-server.sh moto|s3s -- CMD [ARG...]
#
# moto (moto's server mode taking one request at a time, moto_serial.py;
# its Python from S3_PYTHON, default python3) or s3s-fs (the binary
# S3S_FS, default s3s-fs on PATH; its buckets are folders under a fresh
# root) listens on 127.0.0.1 at a free port, with
# dummy credentials (s3s-fs checks the signatures, moto does not). Once it
# answers and the bucket bale-test exists, CMD runs with
#   BALE_S3_SERVER    moto or s3s
#   BALE_S3_ENDPOINT  http://127.0.0.1:<port>
#   BALE_S3_BUCKET    bale-test
#   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION=us-east-1
#   BALE_S3_LOG       the server's output (with RUST_LOG=s3s=debug, s3s-fs
#                     logs each request's operation: bench/remote.sh counts them)
#   BALE_S3_ROOT      (s3s only) the folder holding the bucket's folder
# and no other AWS_* settings. The server is stopped whatever happens;
# the exit status is CMD's (or 2 when the server would not start).
set -euo pipefail

usage() { echo "usage: $0 moto|s3s -- CMD [ARG...]" >&2; exit 2; }
[ $# -ge 3 ] && [ "$2" = "--" ] || usage
server=$1
shift 2
case "$server" in moto|s3s) ;; *) usage ;; esac

here=$(cd "$(dirname "$0")" && pwd)
bucket=bale-test
key_id=bale-test-key-id
secret=bale-test-secret-key
work=$(mktemp -d "${TMPDIR:-/tmp}/bale-s3-$server.XXXXXX")
pid=

stop() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Starts the server on a free port (sets port and pid); another port if
# that one was taken between the check and the bind.
start() {
	for _ in 1 2 3; do
		port=$(free_port)
		case "$server" in
			moto)
				"${S3_PYTHON:-python3}" "$here/moto_serial.py" 127.0.0.1 "$port" >"$work/server.log" 2>&1 &
				;;
			s3s)
				mkdir -p "$work/root/$bucket"
				"${S3S_FS:-s3s-fs}" --host 127.0.0.1 --port "$port" \
					--access-key "$key_id" --secret-key "$secret" "$work/root" >"$work/server.log" 2>&1 &
				;;
		esac
		pid=$!
		for _ in $(seq 300); do
			answers "$port" && return 0
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		pid=
	done
	echo "the $server server did not start; its last output:" >&2
	tail -n 20 "$work/server.log" >&2 || true
	return 1
}

start || exit 2
endpoint="http://127.0.0.1:$port"

# Only these AWS settings reach CMD (a developer's own profile, token or
# endpoint would break the signatures or point elsewhere).
for v in $(compgen -e | grep '^AWS_' || true); do unset "$v"; done
export BALE_S3_SERVER=$server BALE_S3_ENDPOINT=$endpoint BALE_S3_BUCKET=$bucket
export BALE_S3_LOG=$work/server.log
if [ "$server" = s3s ]; then export BALE_S3_ROOT=$work/root; fi
export AWS_ACCESS_KEY_ID=$key_id AWS_SECRET_ACCESS_KEY=$secret AWS_REGION=us-east-1
export AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_CONFIG_FILE=/dev/null
# Nor may a proxy of the environment stand between.
export NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}" no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}"

if [ "$server" = moto ]; then
	"${S3_PYTHON:-python3}" - "$endpoint" "$bucket" <<'PY' || exit 2
import sys, boto3
endpoint, bucket = sys.argv[1:]
boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=bucket)
PY
fi
echo "$server S3 server at $endpoint, bucket $bucket" >&2

status=0
"$@" || status=$?
exit "$status"
