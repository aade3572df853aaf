# shell-worker.sh — sourced by the lock-library tests (85, 42): the legacy
# dot-lock tools' contention loop, alongside the libraries' drivers.

# shell_worker ID HOST MOUNT KIND KEY N LOG DEADLINE [ERRFILE]: a legacy tool's
# loop (KIND ln, noclobber, mkdir or dotlockfile) of N critical sections on
# MOUNT/KEY before the epoch second DEADLINE, each logged to LOG as S and E
# lines (check-sections.py); the tool's refusals go to ERRFILE (default
# $OUT/KEY.ID.held), and any but "held" count as errors.  Prints
# "done DONE N ERRORS".
shell_worker() {
    local id=$1 host=$2 m=$3 kind=$4 key=$5 n=$6 log=$7 deadline=$8
    local lk=$m/$key tmp=$m/.sw.${key%.lock}.$id done=0 errs=0 t errf=${9:-$OUT/$key.$id.held}
    [[ $kind == ln ]] && echo $$ >"$tmp"
    local rc
    while ((done < n && ${EPOCHREALTIME%.*} < deadline)); do
        # Every refusal must be the tool's "held"; anything else is an error.
        case $kind in
        ln) ln -T -- "$tmp" "$lk" 2>>"$errf" ;;
        noclobber) (set -C; echo $$ >"$lk") 2>>"$errf" ;;
        mkdir) mkdir -- "$lk" 2>>"$errf" ;;
        dotlockfile) timeout 20 dotlockfile -l -r 0 "$lk" 2>>"$errf" ;;
        esac
        rc=$?
        if ((rc != 0)); then
            # liblockfile's own race with a directory lock (90-contention.t
            # says why; tmpfs does the same): exit 8 is a refusal where the
            # group has mkdir lockers, and only there.
            if [[ $kind == dotlockfile && $rc == 8 && ${SW_DIR_LOCKERS:-0} == 1 ]]; then
                rc=4
                echo "$id: liblockfile exit 8 (its race with a directory lock)" >>"$OUT/$key.rmstale"
            fi
            [[ $kind == dotlockfile && $rc != 4 ]] && { errs=$((errs + 1)); echo "dotlockfile exit $rc" >&2; }
            sleep "0.0$((RANDOM % 5 + 1))"
            continue
        fi
        done=$((done + 1))
        t=$EPOCHREALTIME
        echo "S $host $id $done ${t/./}000" >>"$log"
        sleep 0.00$((RANDOM % 4 + 1))
        t=$EPOCHREALTIME
        echo "E $host $id $done ${t/./}000" >>"$log"
        case $kind in
        mkdir) rmdir -- "$lk" || errs=$((errs + 1)) ;;
        dotlockfile) timeout 20 dotlockfile -u "$lk" || errs=$((errs + 1)) ;;
        *) rm -f -- "$lk" || errs=$((errs + 1)) ;;
        esac
        sleep 0.00$((RANDOM % 8 + 1))
    done
    [[ $kind == ln ]] && rm -f -- "$tmp"
    # The tools' refusals: only "File exists" / "cannot overwrite existing file".
    local odd
    odd=$(grep -v -e 'File exists' -e 'cannot overwrite existing file' "$errf" 2>/dev/null | sort | uniq -c)
    [[ -n $odd ]] && { errs=$((errs + 1)); printf 'refusals other than held: %s\n' "$odd" >&2; }
    echo "done $done $n $errs"
}
