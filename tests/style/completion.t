#!/usr/bin/env bash
# lockfsctl's bash completion (src/ctl/lockfsctl.bash-completion), driven as bash
# drives it: COMP_WORDS/COMP_CWORD set, the function called, COMPREPLY read.  Runs
# without bash-completion's helpers (as on a system without the package) and with
# them when /usr/share/bash-completion/bash_completion exists.
set -u
here=$(cd "$(dirname "$0")" && pwd)
comp=$here/../../src/ctl/lockfsctl.bash-completion
echo "1..8"
n=0
# complete LINE...: the words of a command line, the last one the word being typed
complete_words() {
	bash -c '
		[ "$1" = with ] && [ -r /usr/share/bash-completion/bash_completion ] &&
			. /usr/share/bash-completion/bash_completion
		. "$2"; shift 2
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_lockfsctl lockfsctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		[ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "
	' _ "$1" "$comp" "${@:2}"
}
check() { # check MODE WANT DESCRIPTION WORD...
	local mode=$1 want=$2 what=$3 got
	shift 3
	n=$((n + 1))
	got=$(complete_words "$mode" "$@")
	if [ "$got" = "$want" ]; then
		echo "ok $n - $what ($mode bash-completion)"
	else
		echo "not ok $n - $what ($mode bash-completion): got '$got', want '$want'"
	fi
}
for mode in without with; do
	check $mode "check " "commands by prefix" lockfsctl c
	check $mode "--all " "release's options" lockfsctl release --a
	check $mode "--max-hold " "hold's long options" lockfsctl hold --m
	check $mode "" "no options after a value-taking option" lockfsctl hold --ttl ""
done
