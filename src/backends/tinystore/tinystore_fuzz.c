/* The tinystore decoders' fuzz body: every decoder over whatever came in.
 * Test code: built into tests/fuzz/ and the unit tests' core library
 * (src/meson.build, backend_test_sources), never into lockfs or lockfsctl. */
#include "tinystore_fuzz.h"

#include "tinystore_codec.h"

static void fuzz_body(const ts_header *h, const uint8_t *body, size_t len)
{
	if (h->kind == TS_CREDIT) {
		uint32_t credit;
		ts_credit_decode(body, len, &credit, NULL);
		return;
	}
	if (h->kind == TS_PING || h->kind == TS_PONG)
		return;
	ts_msg m;
	if (!ts_msg_decode(&m, g_memdup2(body, len), len, NULL)) {
		ts_msg_clear(&m);
		return;
	}
	ts_welcome w;
	if (ts_welcome_decode(&m, &w, NULL))
		ts_welcome_clear(&w);
	ts_failure f;
	if (ts_failure_decode(&m, &f, NULL))
		ts_failure_clear(&f);
	ts_held held;
	ts_held_decode(&m, true, &held, NULL);
	uint64_t handle;
	ts_handle_decode(&m, &handle, NULL);
	bool found;
	ts_found_decode(&m, &found, NULL);
	ts_written wr;
	ts_written_decode(&m, &wr, NULL);
	ts_empty_decode(&m, NULL);
	ts_entry e;
	if (ts_entry_decode(&m, &e, NULL)) {
		ts_record r;
		if (e.value && ts_record_decode(e.value, e.value_len, &r, NULL))
			ts_record_clear(&r);
		g_free(e.value);
		g_free(e.key);
	}
	ts_page p;
	if (ts_page_decode(&m, &p, NULL))
		ts_page_clear(&p);
	ts_msg_clear(&m);
}

void ts_fuzz_one(const uint8_t *data, size_t len)
{
	/* As a stream of frames, the way a connection reads them. */
	size_t off = 0;
	while (len - off >= TS_HEADER_SIZE) {
		ts_header h;
		ts_header_read(data + off, &h);
		off += TS_HEADER_SIZE;
		if (!ts_header_check(&h, TS_MAX_BODY, NULL) || h.len > len - off)
			break;
		fuzz_body(&h, data + off, h.len);
		off += h.len;
	}
	/* As a bare body, a SERVE file, a record and a restart marker. */
	ts_header any = { .kind = TS_RESPONSE };
	fuzz_body(&any, data, len);
	ts_serve s;
	if (ts_serve_parse((const char *)data, len, &s, NULL))
		ts_serve_clear(&s);
	ts_record r;
	if (ts_record_decode(data, len, &r, NULL))
		ts_record_clear(&r);
	ts_marker mk;
	ts_marker_decode(data, len, &mk, NULL);
}
