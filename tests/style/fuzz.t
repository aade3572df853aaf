#!/usr/bin/env bash
# The libFuzzer targets (tests/fuzz/, docs/fuzzing.md), briefly: build them with
# clang in build-fuzz/, then run each over its seed corpus (tests/fuzz/corpus/TARGET)
# and fuzz it for $LOCKFS_FUZZ_SECONDS (10) more; one test point per target, failing
# on any crash, sanitizer report, leak or timeout (the input is shown base64).  New
# inputs go to a scratch directory, never into the tree.  Without clang, or without
# libFuzzer's runtime (Debian 12: libclang-rt-14-dev), every point is skipped, saying
# so: scripts/setup-debian installs both.  A long run: docs/fuzzing.md.
set -u
cd "$(dirname "$0")/../.."
targets=(tinystore ldap etcd config lockstate)
seconds=${LOCKFS_FUZZ_SECONDS:-10}
dir=build-fuzz

skip_all() {
	echo "1..0 # SKIP $1"
	exit 0
}
command -v clang >/dev/null || skip_all "clang is not installed (scripts/setup-debian installs clang)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' >"$tmp/probe.c"
clang -fsanitize=fuzzer,address,undefined "$tmp/probe.c" -o "$tmp/probe" 2>/dev/null ||
	skip_all "clang cannot link libFuzzer (Debian 12: install libclang-rt-14-dev; scripts/setup-debian does)"

echo "1..${#targets[@]}"
build_log=$tmp/build.log
built=1
if [ ! -f "$dir/build.ninja" ]; then
	CC=clang meson setup "$dir" --buildtype=debugoptimized >"$build_log" 2>&1 || built=0
fi
if [ "$built" = 1 ]; then
	ninja -C "$dir" "${targets[@]/#/tests/fuzz/fuzz_}" >>"$build_log" 2>&1 || built=0
fi

n=0
for t in "${targets[@]}"; do
	n=$((n + 1))
	bin=$dir/tests/fuzz/fuzz_$t
	if [ "$built" = 0 ] || [ ! -x "$bin" ]; then
		echo "not ok $n - fuzz_$t was not built ($dir must be a clang build: CC=clang meson setup $dir)"
		tail -15 "$build_log" | sed 's/^/# /'
		continue
	fi
	mkdir -p "$tmp/$t/new" "$tmp/$t/crash"
	dict=()
	[ -f "tests/fuzz/$t.dict" ] && dict=("-dict=tests/fuzz/$t.dict")
	log=$tmp/$t/log
	rc=0
	"$bin" -max_total_time="$seconds" -timeout=5 -max_len=4096 -rss_limit_mb=1024 \
		"${dict[@]}" -artifact_prefix="$tmp/$t/crash/" -print_final_stats=1 \
		"$tmp/$t/new" "tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
	seeds=$(find "tests/fuzz/corpus/$t" -type f | wc -l)
	crash=$(find "$tmp/$t/crash" -type f | head -1)
	if [ "$rc" = 0 ] && [ -z "$crash" ] && ! grep -qE '^==[0-9]+==ERROR|runtime error:' "$log"; then
		echo "ok $n - fuzz_$t: $seeds seeds and ${seconds} s of fuzzing, ${runs:-?} runs, ${cov:-cov: ?}, no crash"
	else
		echo "not ok $n - fuzz_$t failed (exit $rc): reproduce with $bin FILE"
		grep -E '^==[0-9]+==ERROR|runtime error:|^SUMMARY|^    #[0-9] |Test unit written|ALARM|deadly signal' "$log" |
			head -25 | sed 's/^/# /'
		if [ -n "$crash" ]; then
			echo "# the input, base64 (base64 -d >FILE):"
			base64 -w 76 "$crash" | head -60 | sed 's/^/# /'
		fi
	fi
done
