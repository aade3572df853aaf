#!/usr/bin/env bash
# shellcheck shell=bash
# tests/lib/tinystore.sh — a tinystore 0.5.1 server for tests, on a temp store.
#
# As a command:
#   tinystore.sh start DIR [tcp|tls]   serve DIR/store; with tcp or tls, also listen on
#                                      127.0.0.1 (a free port) with a tokens file.  Prints
#                                      KEY=VALUE lines (below) for the caller to read.
#   tinystore.sh restart DIR           stop and start again, same store, same port
#   tinystore.sh stop DIR              stop it (a no-op when it is not running)
# Sourced from a bash test: tinystore_start, tinystore_restart and tinystore_stop do the
# same and export the variables instead of printing them.
#
# Variables:
#   TINYSTORE_BIN         the tinystore binary used
#   TINYSTORE_STORE       the store directory (lockfs: tinystore_dir)
#   TINYSTORE_PID         the server's pid
#   TINYSTORE_ENDPOINT    tcp://127.0.0.1:PORT or tls://127.0.0.1:PORT (tcp/tls only)
#   TINYSTORE_TOKEN_FILE  a file (0600) holding a 'data' token (tcp/tls only)
#   TINYSTORE_READ_TOKEN_FILE   the same with a 'read' token
#   TINYSTORE_CA_FILE     the CA that signed the server's certificate (tls only)
#
# The binary is $LOCKFS_TINYSTORE_BIN when set, else the pinned build
# /var/cache/lockfs/tinystore-0.5.1/bin/tinystore (scripts/install-tinystore), else
# tinystore on PATH.  When there is none, or it is not 0.5.1, start fails with exit 77 and
# says why on stderr: tests skip on that.

_ts_pinned=/var/cache/lockfs/tinystore-0.5.1/bin/tinystore

_ts_bin() {
	local b
	if [ -n "${LOCKFS_TINYSTORE_BIN:-}" ]; then
		if [ -x "$LOCKFS_TINYSTORE_BIN" ]; then
			printf '%s\n' "$LOCKFS_TINYSTORE_BIN"
			return 0
		fi
		echo "LOCKFS_TINYSTORE_BIN=$LOCKFS_TINYSTORE_BIN is not an executable" >&2
		return 77
	fi
	for b in "$_ts_pinned" "$(command -v tinystore 2>/dev/null)"; do
		[ -n "$b" ] && [ -x "$b" ] && { printf '%s\n' "$b"; return 0; }
	done
	echo "tinystore 0.5.1 is not installed (run scripts/install-tinystore, or set" \
		"LOCKFS_TINYSTORE_BIN)" >&2
	return 77
}

# Print KEY=VALUE lines describing the server of DIR.
_ts_describe() {
	local dir=$1 mode port
	mode=$(cat "$dir/mode")
	echo "TINYSTORE_BIN=$(cat "$dir/bin")"
	echo "TINYSTORE_STORE=$dir/store"
	echo "TINYSTORE_PID=$(cat "$dir/pid")"
	if [ "$mode" != unix ]; then
		port=$(cat "$dir/port")
		echo "TINYSTORE_ENDPOINT=$mode://127.0.0.1:$port"
		echo "TINYSTORE_TOKEN_FILE=$dir/token"
		echo "TINYSTORE_READ_TOKEN_FILE=$dir/read-token"
	fi
	[ "$mode" != tls ] || echo "TINYSTORE_CA_FILE=$dir/ca.pem"
}

# A CA and a certificate for 127.0.0.1 and localhost signed by it.
_ts_certs() {
	local dir=$1
	(
		cd "$dir" || exit 1
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-days 2 -subj /CN=lockfs-test-ca -keyout ca-key.pem -out ca.pem
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-subj /CN=localhost -keyout key.pem -out cert.csr
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n' >ext
		openssl x509 -req -in cert.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
			-days 2 -extfile ext -out cert.pem
	) >"$dir/openssl.log" 2>&1 || { echo "openssl failed: see $dir/openssl.log" >&2; return 1; }
}

# Start the server of DIR as recorded in DIR/mode (and DIR/port, on a restart).
_ts_serve() {
	local dir=$1 bin mode args=() i
	bin=$(cat "$dir/bin")
	mode=$(cat "$dir/mode")
	if [ "$mode" != unix ]; then
		args+=(--listen "$mode://127.0.0.1:$(cat "$dir/port" 2>/dev/null || echo 0)"
			--tokens "$dir/tokens")
		[ "$mode" = tcp ] || args+=(--tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem")
	fi
	rm -f "$dir/store/server/SERVE"
	"$bin" serve "$dir/store" "${args[@]}" </dev/null >>"$dir/serve.log" 2>&1 &
	echo $! >"$dir/pid"
	for ((i = 0; i < 200; i++)); do
		if [ -s "$dir/store/server/SERVE" ]; then
			if [ "$mode" != unix ] && [ ! -s "$dir/port" ]; then
				grep -o '127\.0\.0\.1:[0-9]*' "$dir/store/server/SERVE" |
					head -n 1 | cut -d: -f2 >"$dir/port"
			fi
			return 0
		fi
		kill -0 "$(cat "$dir/pid")" 2>/dev/null || break
		sleep 0.05
	done
	echo "tinystore serve $dir/store did not start: $(tail -n 3 "$dir/serve.log")" >&2
	return 1
}

_ts_start() {
	local dir=$1 mode=${2:-unix} bin
	case $mode in unix | tcp | tls) ;; *) echo "tinystore.sh: mode $mode?" >&2; return 2 ;; esac
	bin=$(_ts_bin) || return
	"$bin" version 2>/dev/null | grep -qx 'tinystore 0\.5\.1' || {
		echo "$bin is not tinystore 0.5.1" >&2
		return 77
	}
	mkdir -p "$dir" || return 1
	echo "$bin" >"$dir/bin"
	echo "$mode" >"$dir/mode"
	rm -f "$dir/port"
	if [ "$mode" != unix ]; then
		(
			umask 077
			"$bin" token new data >"$dir/tokens" &&
				"$bin" token new read >>"$dir/tokens" &&
				awk '$1 == "data" { print $2 }' "$dir/tokens" >"$dir/token" &&
				awk '$1 == "read" { print $2 }' "$dir/tokens" >"$dir/read-token"
		) || return 1
	fi
	if [ "$mode" = tls ]; then
		command -v openssl >/dev/null || { echo "tls needs openssl" >&2; return 77; }
		_ts_certs "$dir" || return 1
	fi
	_ts_serve "$dir"
}

_ts_stop() {
	local dir=$1 pid i
	[ -s "$dir/pid" ] || return 0
	pid=$(cat "$dir/pid")
	if kill -0 "$pid" 2>/dev/null; then
		"$(cat "$dir/bin")" stop "$dir/store" >/dev/null 2>&1 ||
			kill -TERM "$pid" 2>/dev/null
		for ((i = 0; i < 300; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
		kill -KILL "$pid" 2>/dev/null
	fi
	rm -f "$dir/pid"
	return 0
}

tinystore_start() {
	_ts_start "$@" || return
	local line
	while IFS= read -r line; do export "${line?}"; done < <(_ts_describe "$1")
}

tinystore_restart() {
	_ts_stop "$1" && _ts_serve "$1" || return
	local line
	while IFS= read -r line; do export "${line?}"; done < <(_ts_describe "$1")
}

tinystore_stop() {
	_ts_stop "$@"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -u
	case ${1:-} in
	start) [ $# -ge 2 ] && _ts_start "$2" "${3:-unix}" && _ts_describe "$2" ;;
	restart) [ $# -eq 2 ] && _ts_stop "$2" && _ts_serve "$2" && _ts_describe "$2" ;;
	stop) [ $# -eq 2 ] && _ts_stop "$2" ;;
	*)
		sed -n '/^# As a command:/,/^# Sourced/p' "$0" >&2
		exit 2
		;;
	esac
fi
