/* The tinystore decoders' fuzz body (tinystore_fuzz.c), for tests only. */
#ifndef LOCKFS_TINYSTORE_FUZZ_H
#define LOCKFS_TINYSTORE_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Everything a server could hand the decoders, for the fuzzer and the unit
 * test: frames, every answer type, SERVE, records and restart markers.
 * Never fails. */
void ts_fuzz_one(const uint8_t *data, size_t len);

#endif
