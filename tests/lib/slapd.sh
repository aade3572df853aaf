#!/usr/bin/env bash
# tests/lib/slapd.sh — a throw-away slapd on loopback for the LDAP backend's tests.
#
# Usage:
#   slapd.sh start DIR [--no-dds] [--dds-default-ttl S] [--watch PID]
#                                   make DIR (a fresh or empty directory) into a slapd
#                                   instance and start it; prints its facts as
#                                   KEY=VALUE lines (also kept in DIR/env).  With
#                                   --watch, slapd is stopped once PID (the test) is
#                                   gone, even if it crashed.  --dds-default-ttl: the
#                                   life of a new dynamic entry before any refresh
#                                   (default 3600; lockfs skips its refresh at
#                                   acquisition when this is ttl + 1 s)
#   slapd.sh start DIR --size-limit=N  the bind user's search size limit (default
#                                   unlimited; slapd's own default is 500)
#   slapd.sh restart DIR            start the instance in DIR again (same port, same
#                                   database), stopping it first if it runs; prints the facts
#   slapd.sh stop DIR               stop it (SIGTERM, SIGKILL after 10 s); the
#                                   database and config stay for a restart
#   slapd.sh check                  exit 0 when slapd, its modules and openssl are
#                                   here, else print why not and exit 1 (tests skip)
#
# The instance: slapd.conf (-f, which Debian 12's slapd 2.5 still reads), an mdb
# database with suffix dc=lockfs,dc=test holding only the suffix entry and a bind user,
# modules back_mdb and (unless --no-dds) dds with a 1 s expiry check, listening on
# ldap://127.0.0.1:PORT (StartTLS), ldaps://127.0.0.1:LDAPS_PORT (two free ports) and
# ldapi:// on a socket in DIR.  TLS with a CA and a server certificate for
# localhost/127.0.0.1 made here with openssl, plus an unrelated CA for refusal tests.
# SASL EXTERNAL over ldapi maps every local user to the bind user.
#
# Facts printed:
#   SLAPD_URI SLAPD_LDAPS_URI SLAPD_LDAPI SLAPD_PORT SLAPD_LDAPS_PORT SLAPD_PID SLAPD_DIR
#   SLAPD_SUFFIX SLAPD_DDS (1|0)
#   SLAPD_ROOTDN SLAPD_ROOTPW SLAPD_USERDN SLAPD_USERPW_FILE (mode 0600)
#   SLAPD_CA SLAPD_WRONG_CA
set -euo pipefail

SLAPD=${SLAPD:-/usr/sbin/slapd}
MODULES=${SLAPD_MODULES:-/usr/lib/ldap}
SCHEMA=${SLAPD_SCHEMA:-/etc/ldap/schema}
SUFFIX='dc=lockfs,dc=test'
ROOTDN="cn=admin,$SUFFIX"
USERDN="cn=lockfs,$SUFFIX"

die() {
	echo "slapd.sh: $*" >&2
	exit 1
}

check() {
	[ -x "$SLAPD" ] || { echo "slapd is not installed ($SLAPD; apt-get install slapd)"; return 1; }
	local m
	for m in back_mdb dds; do
		[ -e "$MODULES/$m.so" ] || [ -e "$MODULES/$m.la" ] ||
			{ echo "slapd module $m missing in $MODULES"; return 1; }
	done
	[ -r "$SCHEMA/core.schema" ] || { echo "slapd schema missing in $SCHEMA"; return 1; }
	command -v openssl >/dev/null || { echo "openssl is not installed (apt-get install openssl)"; return 1; }
	command -v ldapadd >/dev/null || { echo "ldap-utils are not installed (apt-get install ldap-utils)"; return 1; }
	return 0
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
		echo $((20000 + RANDOM % 20000))
}

# ldapi:// takes the socket path %-encoded.
ldapi_uri() {
	local p=$1 out='' c i
	for ((i = 0; i < ${#p}; i++)); do
		c=${p:i:1}
		case $c in
		[A-Za-z0-9._~-]) out+=$c ;;
		*) out+=$(printf '%%%02X' "'$c") ;;
		esac
	done
	echo "ldapi://$out"
}

make_certs() {
	local d=$1/tls
	mkdir -p "$d"
	(
		cd "$d"
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 \
			-subj '/CN=lockfs test CA' >/dev/null 2>&1
		openssl req -x509 -newkey rsa:2048 -nodes -keyout wrong-ca.key -out wrong-ca.crt \
			-days 2 -subj '/CN=lockfs unrelated CA' >/dev/null 2>&1
		openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr \
			-subj '/CN=localhost' >/dev/null 2>&1
		printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >ext.cnf
		openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-out server.crt -days 2 -extfile ext.cnf >/dev/null 2>&1
		chmod 0600 ./*.key
	) || die "openssl could not make the test certificates in $d"
}

write_config() {
	local dir=$1 dds=$2 dds_default=${3:-3600} size_limit=${4:-unlimited}
	local rootpw
	rootpw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
	{
		echo "include $SCHEMA/core.schema"
		echo "include $SCHEMA/cosine.schema"
		echo "include $SCHEMA/nis.schema"
		echo "include $SCHEMA/inetorgperson.schema"
		echo "modulepath $MODULES"
		echo "moduleload back_mdb"
		[ "$dds" = 1 ] && echo "moduleload dds"
		echo "pidfile $dir/slapd.pid"
		echo "argsfile $dir/slapd.args"
		echo "TLSCACertificateFile $dir/tls/ca.crt"
		echo "TLSCertificateFile $dir/tls/server.crt"
		echo "TLSCertificateKeyFile $dir/tls/server.key"
		# Every local user over ldapi (SASL EXTERNAL) is the bind user.
		echo 'authz-regexp "^gidNumber=[0-9]+[+]uidNumber=[0-9]+,cn=peercred,cn=external,cn=auth$"'
		echo "	\"$USERDN\""
		echo "database mdb"
		echo "suffix \"$SUFFIX\""
		echo "rootdn \"$ROOTDN\""
		echo "rootpw $rootpw"
		echo "directory $dir/db"
		echo "maxsize 268435456"
		# The lockfs user lists every lock, and each mount every lock of
		# its session, once a round: no size limit (slapd's default is 500).
		echo "limits dn.exact=\"$USERDN\" size=$size_limit"
		echo "index objectClass eq"
		echo "index cn eq,sub"
		# Each mount searches for the locks naming its session once a round.
		echo "index description eq"
		if [ "$dds" = 1 ]; then
			echo "overlay dds"
			echo "dds-max-ttl 1d"
			echo "dds-default-ttl $dds_default"
			echo "dds-interval 1s"
		fi
		# The lockfs user writes and refreshes (manage on entryTtl) under the suffix.
		echo "access to attrs=entryTtl by dn.exact=\"$USERDN\" manage by * read"
		echo "access to attrs=userPassword by self read by anonymous auth by * none"
		echo "access to * by dn.exact=\"$USERDN\" write by * read"
		# cn=Monitor, for the root DN only: bench/holdmany counts the
		# operations slapd completed while locks were held.
		echo "database monitor"
		echo "access to * by dn.exact=\"$ROOTDN\" read by * none"
	} >"$dir/slapd.conf"
	echo "$rootpw" >"$dir/rootpw"
	chmod 0600 "$dir/rootpw"
}

load_base() {
	local dir=$1 userpw
	userpw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
	(umask 077 && printf '%s\n' "$userpw" >"$dir/user.pw")
	mkdir -p "$dir/db"
	cat >"$dir/base.ldif" <<-EOF
		dn: $SUFFIX
		objectClass: domain
		dc: lockfs

		dn: $USERDN
		objectClass: organizationalRole
		objectClass: simpleSecurityObject
		cn: lockfs
		userPassword: $userpw
	EOF
	"$SLAPD" -T add -f "$dir/slapd.conf" -l "$dir/base.ldif" >"$dir/slapadd.log" 2>&1 ||
		die "slapadd failed: $(tail -n 3 "$dir/slapadd.log" | tr '\n' ' ')"
}

print_env() {
	local dir=$1
	cat "$dir/env"
	echo "SLAPD_PID=$(cat "$dir/slapd.pid")"
}

run_slapd() {
	local dir=$1 port=$2 ldaps_port=$3 ldapi tries=0
	ldapi=$(ldapi_uri "$dir/ldapi")
	rm -f "$dir/ldapi"
	"$SLAPD" -f "$dir/slapd.conf" -h "ldap://127.0.0.1:$port/ ldaps://127.0.0.1:$ldaps_port/ $ldapi" -d 0 \
		>>"$dir/slapd.log" 2>&1 &
	# slapd -d stays in the foreground, in the background of this script: its pid
	# is $!.  Wait until it answers.
	while ! ldapsearch -x -H "ldap://127.0.0.1:$port" -b '' -s base -o nettimeout=1 \
		namingContexts >/dev/null 2>&1; do
		tries=$((tries + 1))
		if [ $tries -gt 100 ] || ! kill -0 $! 2>/dev/null; then
			kill $! 2>/dev/null || true
			return 1
		fi
		sleep 0.1
	done
	echo $! >"$dir/slapd.pid"
}

# Stop the instance in DIR once process PID is gone (or DIR is).  Detached from
# our output, so whoever reads it sees its end.
watch() {
	local dir=$1 pid=$2
	(
		while kill -0 "$pid" 2>/dev/null && [ -d "$dir" ]; do
			sleep 1
		done
		stop "$dir"
	) </dev/null >/dev/null 2>&1 &
}

start() {
	local dir=$1 dds=1 dds_default=3600 port ldaps_port watch_pid= size_limit=unlimited
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		--no-dds) dds=0 ;;
		--dds-default-ttl) dds_default=${2:?--dds-default-ttl needs seconds}; shift ;;
		--watch) watch_pid=${2:?--watch needs a pid}; shift ;;
		--size-limit=*) size_limit=${1#--size-limit=} ;;
		*) die "start: unknown option $1" ;;
		esac
		shift
	done
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	[ -z "$(ls -A "$dir")" ] || die "$dir is not empty"
	local why
	why=$(check) || die "$why"
	make_certs "$dir"
	write_config "$dir" "$dds" "$dds_default" "$size_limit"
	load_base "$dir"
	local i
	for i in 1 2 3 4 5; do
		port=$(free_port)
		ldaps_port=$(free_port)
		[ "$port" != "$ldaps_port" ] && run_slapd "$dir" "$port" "$ldaps_port" && break
		port=
	done
	[ -n "$port" ] || die "slapd did not start: $(tail -n 5 "$dir/slapd.log" | tr '\n' ' ')"
	cat >"$dir/env" <<-EOF
		SLAPD_DIR=$dir
		SLAPD_PORT=$port
		SLAPD_URI=ldap://127.0.0.1:$port
		SLAPD_LDAPS_PORT=$ldaps_port
		SLAPD_LDAPS_URI=ldaps://127.0.0.1:$ldaps_port
		SLAPD_LDAPI=$(ldapi_uri "$dir/ldapi")
		SLAPD_SUFFIX=$SUFFIX
		SLAPD_DDS=$dds
		SLAPD_ROOTDN=$ROOTDN
		SLAPD_ROOTPW=$(cat "$dir/rootpw")
		SLAPD_USERDN=$USERDN
		SLAPD_USERPW_FILE=$dir/user.pw
		SLAPD_CA=$dir/tls/ca.crt
		SLAPD_WRONG_CA=$dir/tls/wrong-ca.crt
	EOF
	[ -z "$watch_pid" ] || watch "$dir" "$watch_pid"
	print_env "$dir"
}

restart() {
	local dir=$1 port ldaps_port
	[ -r "$dir/env" ] || die "$dir holds no slapd instance (run start first)"
	port=$(sed -n 's/^SLAPD_PORT=//p' "$dir/env")
	ldaps_port=$(sed -n 's/^SLAPD_LDAPS_PORT=//p' "$dir/env")
	# A running instance is stopped first: a second slapd on its port would
	# leave the first one serving, its pid no longer known to stop.  Only if
	# the pid is still this instance's slapd (after a kill -9 it may be reused).
	local old
	old=$(cat "$dir/slapd.pid" 2>/dev/null) || old=
	if [ -n "$old" ] && tr '\0' ' ' <"/proc/$old/cmdline" 2>/dev/null | grep -qF -- "$dir/slapd.conf"; then
		stop "$dir"
	fi
	run_slapd "$dir" "$port" "$ldaps_port" || die "slapd did not restart on port $port: $(tail -n 5 "$dir/slapd.log" | tr '\n' ' ')"
	print_env "$dir"
}

stop() {
	local dir=$1 pid i
	[ -r "$dir/slapd.pid" ] || return 0
	pid=$(cat "$dir/slapd.pid")
	rm -f "$dir/slapd.pid"
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

case ${1:-} in
start) [ $# -ge 2 ] || die "usage: slapd.sh start DIR [--no-dds] [--watch PID]"; shift; start "$@" ;;
restart) [ $# -eq 2 ] || die "usage: slapd.sh restart DIR"; restart "$2" ;;
stop) [ $# -eq 2 ] || die "usage: slapd.sh stop DIR"; stop "$2" ;;
check) check ;;
*) die "usage: slapd.sh start|restart|stop DIR, or slapd.sh check" ;;
esac
