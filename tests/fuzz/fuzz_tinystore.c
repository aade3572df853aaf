/* libFuzzer target for everything lockfs decodes from a tinystore server or
 * store: frames, every answer type, the SERVE file and holder records (all
 * through ts_fuzz_one, which test_tinystore_codec also runs in CI).
 *
 * Build with clang (see meson.build here):
 *   CC=clang meson setup build-fuzz && ninja -C build-fuzz tests/fuzz/fuzz_tinystore
 *   build-fuzz/tests/fuzz/fuzz_tinystore -max_len=4096 -rss_limit_mb=512 tests/fuzz/corpus/tinystore
 * A decoder that crashes, leaks, hangs or allocates past the limit is a bug. */
#include "backends/tinystore/tinystore_codec.h"
#include "backends/tinystore/tinystore_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ts_fuzz_one(data, size);
	return 0;
}
