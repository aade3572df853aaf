#!/usr/bin/env bash
# shellcheck shell=bash
# tests/lib/etcd.sh — an etcd cluster for tests (3 members, or 1), on loopback, on free
# ports, with its data under a temp directory.
#
# As a command:
#   etcd.sh start DIR [--members 1|3] [--tls] [--watch PID]
#                              start members 0, 1 and 2 (data in DIR/m0 … DIR/m2; with
#                              --members 1, member 0 alone) and wait until the cluster has
#                              a leader; prints KEY=VALUE lines.  --tls: clients speak https
#                              to a certificate for 127.0.0.1 signed by a CA made here, and
#                              must show a client certificate (--client-cert-auth).
#                              --watch: every member (also when started again later) is
#                              killed once PID has exited, so a test killed by its
#                              watchdog leaves no etcd behind
#   etcd.sh stop DIR           stop every member (a no-op for members not running)
#   etcd.sh restart DIR        stop every member and start them again on their data
#   etcd.sh kill DIR N         kill -9 member N
#   etcd.sh stop-member DIR N  stop member N (SIGTERM, then SIGKILL)
#   etcd.sh start-member DIR N start member N again on its data (same ports)
#   etcd.sh pause DIR N        SIGSTOP member N (it keeps its sockets, answers nothing)
#   etcd.sh resume DIR N       SIGCONT member N
#   etcd.sh leader DIR         print the index of the leader, waiting for one
#   etcd.sh wait DIR           wait until the running members agree on a leader
#   etcd.sh env DIR            print the KEY=VALUE lines again
#   etcd.sh check              exit 0 when there is an etcd binary, else 77 saying why
# Sourced from a bash test: etcd_start DIR, etcd_stop DIR, … (the same names with '_'
# for '-') do the same, and etcd_start exports the variables instead of printing them.
#
# Variables:
#   ETCD_BIN          the etcd binary used
#   ETCD_ENDPOINTS    http://127.0.0.1:P0,http://127.0.0.1:P1,http://127.0.0.1:P2
#   ETCD_ENDPOINT_N   member N's client URL (N = 0, 1, 2)
#   ETCD_PID_N        member N's pid
#   ETCD_CA_FILE, ETCD_CERT_FILE, ETCD_KEY_FILE
#                     (--tls) the CA, a client certificate (CN lockfs) and its key
#   ETCD_NOCN_CERT_FILE, ETCD_NOCN_KEY_FILE
#                     (--tls) a client certificate without a CommonName, and its key
#
# The binary is $LOCKFS_ETCD_BIN when set, else etcd on PATH or /usr/bin/etcd (Debian's
# etcd-server, 3.4).  When there is none, start fails with exit 77 and says why on stderr:
# tests skip on that.  Every wait is bounded (20 s for a leader, 15 s for a stop).

_etcd_bin() {
	local b
	if [ -n "${LOCKFS_ETCD_BIN:-}" ]; then
		[ -x "$LOCKFS_ETCD_BIN" ] && { printf '%s\n' "$LOCKFS_ETCD_BIN"; return 0; }
		echo "LOCKFS_ETCD_BIN=$LOCKFS_ETCD_BIN is not an executable" >&2
		return 77
	fi
	for b in "$(command -v etcd 2>/dev/null)" /usr/bin/etcd /usr/sbin/etcd; do
		[ -n "$b" ] && [ -x "$b" ] && { printf '%s\n' "$b"; return 0; }
	done
	echo "etcd is not installed (apt-get install etcd-server, or run scripts/setup-debian;" \
		"or set LOCKFS_ETCD_BIN)" >&2
	return 77
}

_etcd_free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# _etcd_ids DIR: the members' indices.
_etcd_ids() {
	if [ "$(cat "$1/members" 2>/dev/null)" = 1 ]; then echo 0; else echo 0 1 2; fi
}

# _etcd_url DIR N: member N's client URL.
_etcd_url() {
	echo "$(cat "$1/scheme" 2>/dev/null || echo http)://127.0.0.1:$(cat "$1/m$2/client-port")"
}

# _etcd_http DIR URL [BODY]: the reply's body (POST when BODY is given), 1 s at most,
# with DIR's CA and client certificate when it has them.
_etcd_http() {
	python3 - "$@" <<'PY'
import os, ssl, sys, urllib.request
d, url = sys.argv[1], sys.argv[2]
data = sys.argv[3].encode() if len(sys.argv) > 3 else None
ctx = None
if os.path.exists(os.path.join(d, "ca.pem")):
    ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.pem"))
    ctx.load_cert_chain(os.path.join(d, "client.pem"), os.path.join(d, "client-key.pem"))
try:
    with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=1,
                                context=ctx) as r:
        sys.stdout.write(r.read().decode())
except Exception as e:
    sys.stderr.write("%s: %s\n" % (url, e))
    sys.exit(1)
PY
}

_etcd_describe() {
	local dir=$1 n eps=()
	echo "ETCD_BIN=$(cat "$dir/bin")"
	for n in $(_etcd_ids "$dir"); do
		eps+=("$(_etcd_url "$dir" "$n")")
	done
	(
		IFS=,
		echo "ETCD_ENDPOINTS=${eps[*]}"
	)
	for n in $(_etcd_ids "$dir"); do
		echo "ETCD_ENDPOINT_$n=${eps[$n]}"
		echo "ETCD_PID_$n=$(cat "$dir/m$n/pid" 2>/dev/null)"
	done
	if [ -s "$dir/ca.pem" ]; then
		echo "ETCD_CA_FILE=$dir/ca.pem"
		echo "ETCD_CERT_FILE=$dir/client.pem"
		echo "ETCD_KEY_FILE=$dir/client-key.pem"
		echo "ETCD_NOCN_CERT_FILE=$dir/client-nocn.pem"
		echo "ETCD_NOCN_KEY_FILE=$dir/client-nocn-key.pem"
	fi
}

# A CA, a server certificate for 127.0.0.1 and a client certificate (CN lockfs).
_etcd_certs() {
	local dir=$1
	(
		cd "$dir" || exit 1
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-days 2 -subj /CN=lockfs-test-ca -keyout ca-key.pem -out ca.pem
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-subj /CN=localhost -keyout server-key.pem -out server.csr
		printf '%s\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost' 'basicConstraints=CA:FALSE' \
			'extendedKeyUsage=serverAuth,clientAuth' >server.ext
		openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
			-days 2 -extfile server.ext -out server.pem
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-subj /CN=lockfs -keyout client-key.pem -out client.csr
		printf '%s\n' 'basicConstraints=CA:FALSE' 'extendedKeyUsage=clientAuth' >client.ext
		openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
			-days 2 -extfile client.ext -out client.pem
		# etcd refuses gateway requests whose certificate has a CommonName once
		# authentication is on (the CN would otherwise name the user): one without.
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-subj /O=lockfs-test -keyout client-nocn-key.pem -out client-nocn.csr
		openssl x509 -req -in client-nocn.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
			-days 2 -extfile client.ext -out client-nocn.pem
		chmod 600 ./*-key.pem
	) >"$dir/openssl.log" 2>&1 || { echo "openssl failed: see $dir/openssl.log" >&2; return 1; }
}

# Start member N of DIR (ports and cluster as recorded); STATE new or existing.
_etcd_run_member() {
	local dir=$1 n=$2 state=$3 m cluster="" i tls=()
	m=$dir/m$n
	for i in $(_etcd_ids "$dir"); do
		cluster+="${cluster:+,}m$i=http://127.0.0.1:$(cat "$dir/m$i/peer-port")"
	done
	[ ! -s "$dir/ca.pem" ] || tls=(--cert-file "$dir/server.pem" --key-file "$dir/server-key.pem"
		--client-cert-auth --trusted-ca-file "$dir/ca.pem")
	# --pre-vote (etcd 3.5's default): a member cut off and back does not
	# depose the leader with the terms it ran up alone, which on 3.4 can
	# leave the cluster without one for longer than a lease's lost margin.
	"$(cat "$dir/bin")" --name "m$n" --data-dir "$m/data" \
		--listen-client-urls "$(_etcd_url "$dir" "$n")" \
		--advertise-client-urls "$(_etcd_url "$dir" "$n")" "${tls[@]}" \
		--listen-peer-urls "http://127.0.0.1:$(cat "$m/peer-port")" \
		--initial-advertise-peer-urls "http://127.0.0.1:$(cat "$m/peer-port")" \
		--initial-cluster "$cluster" --initial-cluster-state "$state" \
		--initial-cluster-token "$(cat "$dir/token")" \
		--heartbeat-interval 100 --election-timeout 1000 --pre-vote \
		</dev/null >>"$m/log" 2>&1 &
	local member=$!
	echo "$member" >"$m/pid"
	if [ -s "$dir/watch" ]; then
		local watch
		watch=$(cat "$dir/watch")
		# Bounded by the two processes' lives: a check a second.
		(
			while kill -0 "$watch" 2>/dev/null && kill -0 "$member" 2>/dev/null; do
				sleep 1
			done
			kill -KILL "$member" 2>/dev/null
		) </dev/null >/dev/null 2>&1 &
	fi
}

# _etcd_alive PID: PID runs and is not a zombie.  A member is not our child when
# a command of this script started it (its parent has exited), and the reaper
# that adopted it may leave it a zombie for seconds after it died.
_etcd_alive() {
	local st
	kill -0 "$1" 2>/dev/null || return 1
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

_etcd_running() {
	[ -s "$1/m$2/pid" ] && _etcd_alive "$(cat "$1/m$2/pid")"
}

# The index of the member the running members call leader, or fail.
_etcd_leader_once() {
	local dir=$1 n out id l leader="" ids=()
	for n in $(_etcd_ids "$dir"); do
		ids[n]=
		_etcd_running "$dir" "$n" || continue
		out=$(_etcd_http "$dir" "$(_etcd_url "$dir" "$n")/v3/maintenance/status" '{}' 2>/dev/null) ||
			continue
		id=$(sed -n 's/.*"member_id":"\([0-9]*\)".*/\1/p' <<<"$out")
		ids[n]=$id
		l=$(sed -n 's/.*"leader":"\([0-9]*\)".*/\1/p' <<<"$out")
		[ -n "$l" ] && [ "$l" != 0 ] && leader=$l
	done
	[ -n "$leader" ] || return 1
	for n in $(_etcd_ids "$dir"); do
		[ "${ids[n]:-}" = "$leader" ] && { echo "$n"; return 0; }
	done
	return 1
}

_etcd_wait() {
	local dir=$1 i n ok
	for ((i = 0; i < 200; i++)); do
		ok=1
		for n in $(_etcd_ids "$dir"); do
			_etcd_running "$dir" "$n" || continue
			_etcd_http "$dir" "$(_etcd_url "$dir" "$n")/health" 2>/dev/null |
				grep -q '"health":"true"' || { ok=; break; }
		done
		[ -n "$ok" ] && _etcd_leader_once "$dir" >/dev/null && return 0
		sleep 0.1
	done
	echo "etcd cluster in $dir has no leader after 20 s: $(tail -n 2 "$dir/m0/log" | tr '\n' ' ')" >&2
	return 1
}

_etcd_leader() {
	_etcd_wait "$1" >/dev/null || return
	_etcd_leader_once "$1"
}

_etcd_start() {
	local dir=$1 bin n try
	shift
	bin=$(_etcd_bin) || return
	mkdir -p "$dir" || return 1
	echo "$bin" >"$dir/bin"
	rm -f "$dir/watch" "$dir/ca.pem"
	echo 3 >"$dir/members"
	echo http >"$dir/scheme"
	while [ $# -gt 0 ]; do
		case $1 in
		--watch)
			[ -n "${2:-}" ] || { echo "etcd.sh start: --watch PID" >&2; return 2; }
			echo "$2" >"$dir/watch"
			shift 2
			;;
		--members)
			case ${2:-} in
			1 | 3) echo "$2" >"$dir/members" ;;
			*) echo "etcd.sh start: --members 1 or 3" >&2; return 2 ;;
			esac
			shift 2
			;;
		--tls)
			command -v openssl >/dev/null || { echo "--tls needs openssl" >&2; return 77; }
			_etcd_certs "$dir" || return 1
			echo https >"$dir/scheme"
			shift
			;;
		*) echo "etcd.sh start: unknown option $1" >&2; return 2 ;;
		esac
	done
	echo "lockfs-test-$$-$RANDOM" >"$dir/token"
	# Free ports may be taken between the probe and etcd's bind: try again.
	for ((try = 0; try < 3; try++)); do
		for n in $(_etcd_ids "$dir"); do
			mkdir -p "$dir/m$n" && chmod 700 "$dir/m$n"
			rm -rf "$dir/m$n/data"
			_etcd_free_port >"$dir/m$n/client-port" || return 1
			_etcd_free_port >"$dir/m$n/peer-port" || return 1
		done
		for n in $(_etcd_ids "$dir"); do
			_etcd_run_member "$dir" "$n" new
		done
		_etcd_wait "$dir" 2>/dev/null && return 0
		_etcd_stop "$dir"
	done
	echo "etcd did not start in $dir: $(tail -n 3 "$dir/m0/log" | tr '\n' ' ')" >&2
	return 1
}

_etcd_stop_member() {
	local dir=$1 n=$2 pid i
	[ -s "$dir/m$n/pid" ] || return 0
	pid=$(cat "$dir/m$n/pid")
	if _etcd_alive "$pid"; then
		kill -CONT "$pid" 2>/dev/null
		kill -TERM "$pid" 2>/dev/null
		for ((i = 0; i < 300; i++)); do
			_etcd_alive "$pid" || break
			sleep 0.05
		done
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	rm -f "$dir/m$n/pid"
	return 0
}

_etcd_stop() {
	local n
	# All at once: a member left without quorum may take long over a SIGTERM.
	for n in $(_etcd_ids "$1"); do
		[ -s "$1/m$n/pid" ] && kill -CONT "$(cat "$1/m$n/pid")" 2>/dev/null &&
			kill -TERM "$(cat "$1/m$n/pid")" 2>/dev/null
	done
	for n in $(_etcd_ids "$1"); do _etcd_stop_member "$1" "$n"; done
	return 0
}

_etcd_kill() {
	local pid i
	[ -s "$1/m$2/pid" ] || return 0
	pid=$(cat "$1/m$2/pid")
	kill -KILL "$pid" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		_etcd_alive "$pid" || break
		sleep 0.05
	done
	rm -f "$1/m$2/pid"
}

_etcd_start_member() {
	_etcd_running "$1" "$2" && return 0
	_etcd_run_member "$1" "$2" existing
}

_etcd_restart() {
	local n
	_etcd_stop "$1"
	for n in $(_etcd_ids "$1"); do _etcd_run_member "$1" "$n" existing; done
	_etcd_wait "$1"
}

_etcd_signal() {
	[ -s "$1/m$2/pid" ] && kill "-$3" "$(cat "$1/m$2/pid")"
}

etcd_start() {
	_etcd_start "$@" || return
	local line
	while IFS= read -r line; do export "${line?}"; done < <(_etcd_describe "$1")
}
etcd_stop() { _etcd_stop "$@"; }
etcd_restart() {
	_etcd_restart "$@" || return
	local line
	while IFS= read -r line; do export "${line?}"; done < <(_etcd_describe "$1")
}
etcd_kill() { _etcd_kill "$@"; }
etcd_stop_member() { _etcd_stop_member "$@"; }
etcd_start_member() { _etcd_start_member "$@"; }
etcd_pause() { _etcd_signal "$1" "$2" STOP; }
etcd_resume() { _etcd_signal "$1" "$2" CONT; }
etcd_leader() { _etcd_leader "$@"; }
etcd_wait() { _etcd_wait "$@"; }

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -u
	case ${1:-} in
	start) [ $# -ge 2 ] && shift && _etcd_start "$@" && _etcd_describe "$1" ;;
	stop) [ $# -eq 2 ] && _etcd_stop "$2" ;;
	restart) [ $# -eq 2 ] && _etcd_restart "$2" && _etcd_describe "$2" ;;
	kill) [ $# -eq 3 ] && _etcd_kill "$2" "$3" ;;
	stop-member) [ $# -eq 3 ] && _etcd_stop_member "$2" "$3" ;;
	start-member) [ $# -eq 3 ] && _etcd_start_member "$2" "$3" && _etcd_describe "$2" ;;
	pause) [ $# -eq 3 ] && _etcd_signal "$2" "$3" STOP ;;
	resume) [ $# -eq 3 ] && _etcd_signal "$2" "$3" CONT ;;
	leader) [ $# -eq 2 ] && _etcd_leader "$2" ;;
	wait) [ $# -eq 2 ] && _etcd_wait "$2" ;;
	env) [ $# -eq 2 ] && _etcd_describe "$2" ;;
	check) [ $# -eq 1 ] && _etcd_bin >/dev/null ;;
	*)
		sed -n '/^# As a command:/,/^# Sourced/p' "$0" >&2
		exit 2
		;;
	esac
fi
