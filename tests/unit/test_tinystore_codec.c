/* Unit tests for the tinystore codec (src/backends/tinystore/tinystore_codec.c and
 * tinystore_json.c): the vectors of docs/tinystore-protocol.md §8, checked
 * byte for byte; every check the decoders make on what a server sends; and
 * the fuzz target (tests/fuzz/) run over the vectors, random input and
 * mutated vectors, so CI runs it without libFuzzer. */
#include "backends/tinystore/tinystore_codec.h"
#include "backends/tinystore/tinystore_fuzz.h"

#include <string.h>

/* ---- helpers ---- */

static GByteArray *unhex(const char *hex)
{
	GByteArray *b = g_byte_array_new();
	for (const char *p = hex; *p; p++) {
		if (*p == ' ')
			continue;
		g_assert_true(g_ascii_isxdigit(p[0]) && g_ascii_isxdigit(p[1]));
		guint8 v = (guint8)(g_ascii_xdigit_value(p[0]) << 4 | g_ascii_xdigit_value(p[1]));
		g_byte_array_append(b, &v, 1);
		p++;
	}
	return b;
}

/* Body of the frame ENC built, with the header KIND/FLAGS/METHOD/STREAM,
 * must equal HEX. */
static void assert_frame(const char *hex, ts_enc *enc, uint8_t kind, uint8_t flags, uint16_t method,
                         uint32_t stream)
{
	GByteArray *want = unhex(hex);
	GByteArray *got = g_byte_array_new();
	ts_frame_append(got, kind, flags, method, stream, enc->buf.data, enc->buf.size);
	if (got->len != want->len || memcmp(got->data, want->data, got->len) != 0) {
		GString *s = g_string_new(NULL);
		for (guint i = 0; i < got->len; i++)
			g_string_append_printf(s, "%02x", got->data[i]);
		g_test_message("got  %s\nwant %s", s->str, hex);
		g_string_free(s, TRUE);
	}
	g_assert_cmpmem(got->data, got->len, want->data, want->len);
	g_byte_array_free(got, TRUE);
	g_byte_array_free(want, TRUE);
	ts_enc_clear(enc);
	ts_enc_init(enc);
}

/* Split a frame in HEX into its checked header and decoded body. */
static bool frame_msg(const char *hex, ts_header *h, ts_msg *m, GError **error)
{
	GByteArray *b = unhex(hex);
	g_assert_cmpuint(b->len, >=, TS_HEADER_SIZE);
	ts_header_read(b->data, h);
	g_assert_true(ts_header_check(h, TS_MAX_BODY, NULL));
	g_assert_cmpuint(h->len, ==, b->len - TS_HEADER_SIZE);
	bool ok = ts_msg_decode(m, g_memdup2(b->data + TS_HEADER_SIZE, h->len), h->len, error);
	g_byte_array_free(b, TRUE);
	return ok;
}

static void body_msg(const char *hex, ts_msg *m)
{
	GByteArray *b = unhex(hex);
	GError *e = NULL;
	guint len = b->len;
	g_assert_true(ts_msg_decode(m, g_byte_array_free(b, FALSE), len, &e));
	g_assert_no_error(e);
}

/* E names WHY (and is freed); WHAT says which input, for the failure. */
static void says(GError *e, const char *what, const char *why)
{
	g_assert_nonnull(e);
	if (!strstr(e->message, why))
		g_error("%s: '%s' does not say '%s'", what, e->message, why);
	g_error_free(e);
}

static void assert_body_refused(const char *hex, const char *why)
{
	GByteArray *b = unhex(hex);
	GError *e = NULL;
	ts_msg m;
	guint len = b->len;
	g_assert_false(ts_msg_decode(&m, g_byte_array_free(b, FALSE), len, &e));
	g_assert_error(e, TS_ERROR, TS_ERROR_PROTOCOL);
	says(e, hex, why);
	ts_msg_clear(&m);
}

static const uint8_t L[TS_ID_SIZE] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

/* ---- encoders against the vectors ---- */

static void test_encode_vectors(void)
{
	uint8_t R[TS_ID_SIZE];
	memset(R, 0xaa, sizeof(R));
	ts_enc e;
	ts_enc_init(&e);

	ts_enc_hello(&e, "lockfs/0.1", NULL, L, 0);
	assert_frame("22000000010000000000000083010102aa6c6f636b66732f302e3106c410000102030405"
	             "060708090a0b0c0d0e0f",
	             &e, TS_HELLO, 0, 0, 0);
	ts_enc_hello(&e, "lockfs/0.1", "YuzQz5yhH_R3eSg3lymqkuUmqcIrJEPG_X4ojhaY80U", NULL, 0);
	assert_frame("3d000000010000000000000083010102aa6c6f636b66732f302e3103d92b59757a517a3579"
	             "68485f5233655367336c796d716b75556d716349724a4550475f58346f6a686159383055",
	             &e, TS_HELLO, 0, 0, 0);
	ts_enc_hold(&e, "lockfs", "/srv/a", 0, 30000, 0, R);
	assert_frame("3000000003010109010000008601a46c6f636b02a66c6f636b667303a62f7372762f610401"
	             "05cd753008c410aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	             &e, TS_REQUEST, TS_END, TS_LOCKS_HOLD, 1);
	/* A semaphore's ask (a share): its own limit, and a wait when asked. */
	ts_enc_hold(&e, "lockfs", "/srv/a", 1000, 30000, 20, R);
	assert_frame("3900000003010109070000008701a973656d6170686f726502a66c6f636b667303a62f7372"
	             "762f6104cd03e805cd7530071408c410aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	             &e, TS_REQUEST, TS_END, TS_LOCKS_HOLD, 7);
	ts_enc_renew(&e, L, 30000);
	assert_frame("1800000003010209040000008201c410000102030405060708090a0b0c0d0e0f02cd7530", &e,
	             TS_REQUEST, TS_END, TS_LOCKS_RENEW, 4);
	ts_enc_lease(&e, L);
	assert_frame("1400000003010309050000008101c410000102030405060708090a0b0c0d0e0f", &e,
	             TS_REQUEST, TS_END, TS_LOCKS_RELEASE, 5);
	ts_enc_bucket_open(&e, "lockfs-holders");
	assert_frame("1100000003010101060000008101ae6c6f636b66732d686f6c64657273", &e, TS_REQUEST,
	             TS_END, TS_KV_OPEN, 6);
	const char *rec = "\x03{\"host\":\"h1\",\"pid\":42}";
	ts_enc_kv_call(&e, 1, "lockfs", "/srv/a", rec, strlen(rec), 30000, NULL);
	assert_frame("3200000003010401070000008501010291a66c6f636b667303a62f7372762f6104c417037b22"
	             "686f7374223a226831222c22706964223a34327d05cd7530",
	             &e, TS_REQUEST, TS_END, TS_KV_SET, 7);
	ts_enc_kv_call(&e, 1, "lockfs", "/srv/a", NULL, 0, 0, NULL);
	assert_frame("1400000003010201080000008301010291a66c6f636b667303a62f7372762f61", &e,
	             TS_REQUEST, TS_END, TS_KV_GET, 8);
	ts_enc_kv_list(&e, 1, "lockfs", NULL, 1000);
	assert_frame("1000000003010a01090000008301010291a66c6f636b667304cd03e8", &e, TS_REQUEST,
	             TS_END, TS_KV_LIST, 9);
	ts_enc_kv_call(&e, 1, "lockfs", "/srv/a", NULL, 0, 0, NULL);
	assert_frame("14000000030107010a0000008301010291a66c6f636b667303a62f7372762f61", &e,
	             TS_REQUEST, TS_END, TS_KV_DELETE, 10);
	ts_enc_kv_call(&e, 1, "lockfs", "/srv/a", NULL, 0, 30000, NULL);
	assert_frame("18000000030108010b0000008401010291a66c6f636b667303a62f7372762f6105cd7530", &e,
	             TS_REQUEST, TS_END, TS_KV_EXPIRE, 11);
	/* ifVersion is a bin of the version's decimal text. */
	ts_enc_kv_call(&e, 1, "lockfs", "k", NULL, 0, 0, "16");
	assert_frame("14000000030107010c0000008401010291a66c6f636b667303a16b07c4023136", &e,
	             TS_REQUEST, TS_END, TS_KV_DELETE, 12);
	/* No owner: a key at the bucket's root (the restart marker). */
	ts_enc_kv_call(&e, 1, NULL, "epochs:lockfs", NULL, 0, 0, NULL);
	assert_frame("14000000030102010d000000830101029003ad65706f6368733a6c6f636b6673", &e,
	             TS_REQUEST, TS_END, TS_KV_GET, 13);
	ts_enc_clear(&e);

	GByteArray *f = g_byte_array_new();
	ts_frame_append(f, TS_PONG, 0, 0, 0, "12345678", 8);
	GByteArray *want = unhex("0800000009000000000000003132333435363738");
	g_assert_cmpmem(f->data, f->len, want->data, want->len);
	g_byte_array_free(want, TRUE);
	g_byte_array_set_size(f, 0);
	ts_frame_append(f, TS_GOAWAY, 0, 0, 0, "\x80", 1);
	want = unhex("010000000a0000000000000080");
	g_assert_cmpmem(f->data, f->len, want->data, want->len);
	g_byte_array_free(want, TRUE);
	g_byte_array_free(f, TRUE);
}

/* ---- decoders against the vectors ---- */

/* V9 and a semaphore's grants: a lock's has a fence, a semaphore's none. */
static void decode_grants(void)
{
	ts_header h;
	ts_msg m;
	ts_held held;
	GError *e = NULL;

	/* V9: granted. */
	g_assert_true(frame_msg("3900000004010000010000008301c302c410000102030405060708090a0b0c0d0e"
	                        "0f03d9203333313330373333303035323431343633363034313132393438393835"
	                        "383537",
	                        &h, &m, &e));
	g_assert_cmpuint(h.kind, ==, TS_RESPONSE);
	g_assert_cmpuint(h.flags, ==, TS_END);
	g_assert_cmpuint(h.stream, ==, 1);
	g_assert_true(ts_held_decode(&m, true, &held, &e));
	g_assert_true(held.acquired);
	g_assert_cmpmem(held.lease, TS_ID_SIZE, L, TS_ID_SIZE);
	g_assert_cmpstr(held.fence, ==, "33130733005241463604112948985857");
	ts_msg_clear(&m);

	/* A semaphore's grant: no fence (empty or absent); a lock's needs one,
	 * and a semaphore's with one is refused. */
	g_assert_true(frame_msg("1800000004010000010000008301c302c410000102030405060708090a0b0c0d0e"
	                        "0f03a0",
	                        &h, &m, &e));
	g_assert_true(ts_held_decode(&m, false, &held, &e));
	g_assert_true(held.acquired);
	g_assert_cmpmem(held.lease, TS_ID_SIZE, L, TS_ID_SIZE);
	g_assert_cmpstr(held.fence, ==, "");
	g_assert_false(ts_held_decode(&m, true, &held, NULL));
	ts_msg_clear(&m);
	g_assert_true(frame_msg("1600000004010000010000008201c302c410000102030405060708090a0b0c0d0e"
	                        "0f",
	                        &h, &m, &e));
	g_assert_true(ts_held_decode(&m, false, &held, &e));
	g_assert_true(held.acquired);
	ts_msg_clear(&m);
	g_assert_true(frame_msg("3900000004010000010000008301c302c410000102030405060708090a0b0c0d0e"
	                        "0f03d9203333313330373333303035323431343633363034313132393438393835"
	                        "383537",
	                        &h, &m, &e));
	g_assert_false(ts_held_decode(&m, false, &held, NULL));
	ts_msg_clear(&m);
	g_assert_no_error(e);
}

/* V12-V15, V25, V26: failures, never a grant. */
static void decode_failures(void)
{
	ts_header h;
	ts_msg m;
	ts_held held;
	GError *e = NULL;

	/* V12-V15: failures. */
	static const struct {
		const char *hex, *code, *msg_start;
	} fails[] = {
		{ "2b00000004030000040000008201a46c6f737402d9"
		  "216e6f206c65617365206f662074686973206964"
		  "2069732068656c643a206c6f7374",
		  "lost", "no lease of this id is held" },
		{ "4800000004030000020000008201a6696e5f757365"
		  "02d93c6c6f636b206c6f636b66733a206b657920"
		  "222f7372762f61223a2068656c6420706173742074"
		  "686520686f6c64277320776169743a20696e2075"
		  "7365",
		  "in_use", "lock lockfs: key \"/srv/a\"" },
		{ "2b00000004030000020000008201a963616e63656c"
		  "6c656402bd74686520636c69656e742063616e63"
		  "656c6c65642069747320686f6c64",
		  "cancelled", "the client cancelled" },
		{ "5e00000004030000010000008301ad756e696d706c"
		  "656d656e74656402d92d6669656c642039206f66"
		  "206c6f636b732e486f6c643a206e6f7420696e2074"
		  "696e7973746f726520302e352e310381a5666965"
		  "6c64b56669656c642039206f66206c6f636b732e486f6c64",
		  "unimplemented", "field 9 of locks.Hold" },
		/* V25, V26: GOAWAY bodies are Failures too. */
		{ "250000000a000000000000008201ab756e61766169"
		  "6c61626c6502b574686520736572766572206973"
		  "20636c6f73696e67",
		  "unavailable", "the server is closing" },
		{ "2e0000000a000000000000008201af756e61757468"
		  "656e7469636174656402ba6e6f20746f6b656e20"
		  "7468697320736572766572206b6e6f7773",
		  "unauthenticated", "no token" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(fails); i++) {
		g_assert_true(frame_msg(fails[i].hex, &h, &m, &e));
		g_assert_true(h.kind == TS_GOAWAY || h.flags == (TS_END | TS_ERR));
		ts_failure f;
		g_assert_true(ts_failure_decode(&m, &f, &e));
		g_assert_cmpstr(f.code, ==, fails[i].code);
		g_assert_true(g_str_has_prefix(f.message, fails[i].msg_start));
		ts_failure_clear(&f);
		/* A failure is never a grant. */
		g_assert_true(!ts_held_decode(&m, true, &held, NULL) || !held.acquired);
		ts_msg_clear(&m);
	}
	g_assert_no_error(e);
}

static void test_decode_lock_answers(void)
{
	ts_header h;
	ts_msg m;
	ts_held held;
	GError *e = NULL;

	decode_grants();

	/* V10: busy, and V11: Empty. */
	g_assert_true(frame_msg("01000000040100000100000080", &h, &m, &e));
	g_assert_true(ts_held_decode(&m, true, &held, &e));
	g_assert_false(held.acquired);
	g_assert_true(ts_empty_decode(&m, &e));
	ts_msg_clear(&m);

	decode_failures();

	/* A real grant (E10), random lease. */
	g_assert_true(frame_msg("3900000004010000010000008301c302c41012586f0cd73d7026132d09c47f0969"
	                        "1303d9203333313330373336313131343333333537393433383433323136393439"
	                        "323633",
	                        &h, &m, &e));
	g_assert_true(ts_held_decode(&m, true, &held, &e));
	g_assert_true(held.acquired);
	g_assert_cmpstr(held.fence, ==, "33130736111433357943843216949263");
	ts_msg_clear(&m);
	g_assert_no_error(e);
}

static void test_decode_kv_answers(void)
{
	ts_header h;
	ts_msg m;
	GError *e = NULL;

	/* V17: a handle. */
	g_assert_true(frame_msg("030000000401000006000000810101", &h, &m, &e));
	uint64_t handle;
	g_assert_true(ts_handle_decode(&m, &handle, &e));
	g_assert_cmpuint(handle, ==, 1);
	ts_msg_clear(&m);

	/* kv.set: Written. */
	g_assert_true(frame_msg("1200000004010000070000008301c302c402313603cf000001a22b300075", &h,
	                        &m, &e));
	ts_written w;
	g_assert_true(ts_written_decode(&m, &w, &e));
	g_assert_true(w.written);
	g_assert_cmpstr(w.version, ==, "16");
	ts_msg_clear(&m);

	/* kv.get: Entry. */
	g_assert_true(frame_msg("2c00000004010000080000008401c302c417037b22686f7374223a226831222c22"
	                        "706964223a34327d03c402313604cf000001a22b300075",
	                        &h, &m, &e));
	ts_entry en;
	g_assert_true(ts_entry_decode(&m, &en, &e));
	g_assert_true(en.found);
	g_assert_cmpmem(en.value, en.value_len, "\x03{\"host\":\"h1\",\"pid\":42}", 23);
	g_assert_cmpstr(en.version, ==, "16");
	g_assert_true(en.has_expires);
	g_assert_cmpint(en.expires_ms, ==, 0x1a22b300075);
	g_free(en.value);
	g_free(en.key);
	ts_msg_clear(&m);

	/* kv.list: a page of two. */
	g_assert_true(frame_msg("4b00000004010000090000008101928501c302c417037b22686f7374223a226831"
	                        "222c22706964223a34327d03c402313604cf000001a22b30007505a62f7372762f"
	                        "618401c302c4060168656c6c6f03c4013305a26b33",
	                        &h, &m, &e));
	ts_page p;
	g_assert_true(ts_page_decode(&m, &p, &e));
	g_assert_cmpuint(p.entries->len, ==, 2);
	g_assert_cmpstr(((ts_entry *)p.entries->pdata[0])->key, ==, "/srv/a");
	g_assert_cmpstr(((ts_entry *)p.entries->pdata[1])->key, ==, "k3");
	g_assert_false(((ts_entry *)p.entries->pdata[1])->has_expires);
	g_assert_null(p.next);
	ts_page_clear(&p);
	ts_msg_clear(&m);

	/* A missing key is {}; Found. */
	body_msg("80", &m);
	g_assert_true(ts_entry_decode(&m, &en, &e));
	g_assert_false(en.found);
	ts_msg_clear(&m);
	body_msg("8101c3", &m);
	bool found;
	g_assert_true(ts_found_decode(&m, &found, &e));
	g_assert_true(found);
	ts_msg_clear(&m);

	/* V24: credit. */
	GByteArray *b = unhex("0400000007000000000000008c4b4c00");
	ts_header_read(b->data, &h);
	g_assert_true(ts_header_check(&h, TS_MAX_BODY, &e));
	uint32_t credit;
	g_assert_true(ts_credit_decode(b->data + TS_HEADER_SIZE, h.len, &credit, &e));
	g_assert_cmpuint(credit, ==, 5000076);
	g_byte_array_free(b, TRUE);
	g_assert_no_error(e);
}

static void test_decode_welcome(void)
{
	static const char hex[] =
	        "af000000020000000000000"
	        "08b010102a5302e352e3103c410e520c29dc3f8fa4dad5ae858ae988d7a04a561646d696e"
	        "05ce0020000006cd040007ce0080000008ce00200000"
	        "099ba26b76a6636f6e666967a56c6f636b73a86368"
	        "616e6e656c73a46a6f6273a373716ca5626c6f6273"
	        "a77265636f726473a76d657472696373a6736561726368a66261636b7570"
	        "0acf000001a22b2f8b440bc420d7304037bef1b38706"
	        "bf5a03313c02333ea9f32f9dd883fc4fae13b5ed67"
	        "6369";
	ts_header h;
	ts_msg m;
	GError *e = NULL;
	g_assert_true(frame_msg(hex, &h, &m, &e));
	g_assert_cmpuint(h.kind, ==, TS_WELCOME);
	ts_welcome w;
	g_assert_true(ts_welcome_decode(&m, &w, &e));
	g_assert_cmpstr(w.server, ==, "0.5.1");
	g_assert_cmpstr(w.capability, ==, "admin");
	g_assert_cmpuint(w.max_body, ==, 2097152);
	g_assert_cmpuint(w.in_flight, ==, 1024);
	g_assert_cmpuint(w.conn_credit, ==, 8388608);
	g_assert_cmpint(w.now_ms, ==, 0x1a22b2f8b44);
	g_assert_true(w.has_proof);
	g_assert_cmpuint(w.proof[0], ==, 0xd7);
	ts_welcome_clear(&w);
	ts_msg_clear(&m);

	/* Protocol 2, a short proof, an engine list without locks. */
	static const struct {
		const char *hex, *why;
	} bad[] = {
		{ "810102", "protocol 2" },
		{ "810101", "allows no stream" },
		{ "83010106010bc4020102", "a proof of 2 bytes" },
		{ "8301010601099101", "not a str" },
		{ "830101060109a16b", "not an array" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		body_msg(bad[i].hex, &m);
		g_assert_false(ts_welcome_decode(&m, &w, &e));
		says(e, bad[i].hex, bad[i].why);
		e = NULL;
		ts_msg_clear(&m);
	}
	body_msg("83010106010991a26b76", &m);
	g_assert_false(ts_welcome_decode(&m, &w, &e));
	g_assert_error(e, TS_ERROR, TS_ERROR_REFUSED);
	g_clear_error(&e);
	ts_msg_clear(&m);
}

/* ---- what the decoders refuse ---- */

static void test_header_checks(void)
{
	static const struct {
		const char *hex, *why;
	} bad[] = {
		{ "000000000b0000000000000000", "kind 11" },
		{ "00000000030100000100000000", "kind 3" }, /* a server sends no REQUEST */
		{ "00000000010000000000000000", "kind 1" }, /* nor HELLO */
		{ "00000000040200000100000000", "ERROR without END" },
		{ "00000000040400000100000000", "flags 0x04" },
		{ "00000000020100000000000000", "flags 0x01" }, /* END on WELCOME */
		{ "00000000040100010100000000", "a method" },
		{ "00000000040100000000000000", "stream 0" },
		{ "000000000a0000000100000000", "stream 1" },
		{ "03000000070000000000000000", "a body of 3" },
		{ "07000000080000000000000000", "a body of 7" },
		{ "f0ffffff040100000100000000", "past the" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		GByteArray *b = unhex(bad[i].hex);
		ts_header h;
		ts_header_read(b->data, &h);
		GError *e = NULL;
		g_assert_false(ts_header_check(&h, TS_MAX_BODY, &e));
		g_assert_error(e, TS_ERROR, TS_ERROR_PROTOCOL);
		says(e, bad[i].hex, bad[i].why);
		g_byte_array_free(b, TRUE);
	}
	/* CREDIT may name any stream; it is only counted on stream 0. */
	GByteArray *b = unhex("04000000070000000500000000");
	ts_header h;
	ts_header_read(b->data, &h);
	g_assert_true(ts_header_check(&h, TS_MAX_BODY, NULL));
	g_byte_array_free(b, TRUE);
}

static void test_profile(void)
{
	assert_body_refused("", "an empty body");
	assert_body_refused("81", "past the 0 bytes left");
	assert_body_refused("8001", "bytes after");
	assert_body_refused("91c3", "not a map");
	assert_body_refused("8101ca00000000", "marker 0xca"); /* float32 */
	assert_body_refused("8101d40100", "marker 0xd4");     /* fixext */
	assert_body_refused("8101c70101ff", "marker 0xc7");   /* ext 8 */
	assert_body_refused("8101c1", "marker 0xc1");
	assert_body_refused("81a16101", "not a number below 128"); /* a named field */
	assert_body_refused("81cc8001", "not a number below 128"); /* field 128 */
	assert_body_refused("820101 0102", "field 1 twice");
	assert_body_refused("8101a2c328", "not UTF-8");
	assert_body_refused("8101a20061", "not UTF-8");                 /* NUL */
	assert_body_refused("8101dbffffffff61", "past the");            /* str 4 GiB */
	assert_body_refused("8101c6ffffffff61", "past the");            /* bin 4 GiB */
	assert_body_refused("8101ddffffffff", "a count of 4294967295"); /* array 4 G */
	assert_body_refused("8101dfffffffff", "a count of 4294967295"); /* map 4 G */
	assert_body_refused("8101dc0003c0c0", "a count of 3");
	assert_body_refused("8101cd01", "cut short");
	/* Nesting past 16 levels. */
	GString *deep = g_string_new("8101");
	for (int i = 0; i < 40; i++)
		g_string_append(deep, "91");
	g_string_append(deep, "c0");
	assert_body_refused(deep->str, "nested deeper");
	g_string_free(deep, TRUE);

	/* Float64, negative ints, nil and bool are in the profile; unknown
	 * fields are skipped. */
	ts_msg m;
	body_msg("85 01c3 10cb3ff0000000000000 11d0ff 12c0 13e0", &m);
	bool b;
	GError *e = NULL;
	g_assert_true(ts_msg_bool(&m, 1, "x", &b, &e) && b);
	int64_t i;
	bool present;
	g_assert_true(ts_msg_int(&m, 17, "x", &present, &i, &e));
	g_assert_true(present);
	g_assert_cmpint(i, ==, -1);
	g_assert_false(ts_msg_int(&m, 16, "x", &present, &i, &e)); /* a float is no int */
	g_clear_error(&e);
	uint64_t u;
	g_assert_false(ts_msg_uint(&m, 17, "x", &u, &e)); /* -1 is no uint */
	g_clear_error(&e);
	g_assert_false(ts_msg_uint(&m, 18, "x", &u, &e)); /* nil is no uint */
	g_clear_error(&e);
	ts_msg_clear(&m);
	/* A non-negative d0 is a uint. */
	body_msg("8101d005", &m);
	g_assert_true(ts_msg_uint(&m, 1, "x", &u, &e));
	g_assert_cmpuint(u, ==, 5);
	ts_msg_clear(&m);
}

static void test_held_strict(void)
{
	static const struct {
		const char *hex, *why;
	} bad[] = {
		/* acquired, a lease of 15 bytes */
		{ "8301c302c40f000102030405060708090a0b0c0d0e03a131", "15 bytes" },
		/* acquired, no lease */
		{ "8201c303a131", "0 bytes" },
		/* acquired, no fence; a fence with a letter; 40 digits */
		{ "8201c302c410000102030405060708090a0b0c0d0e0f", "fence" },
		{ "8301c302c410000102030405060708090a0b0c0d0e0f03a3313261", "fence" },
		{ "8301c302c410000102030405060708090a0b0c0d0e0f03d928"
		  "3131313131313131313131313131313131313131"
		  "3131313131313131313131313131313131313131",
		  "fence" },
		/* busy with a lease: not a grant, not believed either */
		{ "8102c410000102030405060708090a0b0c0d0e0f", "busy answer with a lease" },
		/* acquired as a number, a lease as a str */
		{ "8101 01", "not a bool" },
		{ "8301c302b030313233343536373839616263646566 03a131", "not a bin" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		GByteArray *b = unhex(bad[i].hex);
		guint len = b->len;
		ts_msg m;
		GError *e = NULL;
		ts_held h;
		bool decoded = ts_msg_decode(&m, g_byte_array_free(b, FALSE), len, &e);
		g_assert_true(!decoded || !ts_held_decode(&m, true, &h, &e));
		g_assert_nonnull(e);
		says(e, bad[i].hex, bad[i].why);
		ts_msg_clear(&m);
	}
}

static void test_entries_strict(void)
{
	static const struct {
		const char *hex, *why;
	} bad[] = {
		{ "8101c3", "without a version" },                      /* found, no version */
		{ "8201c303a23136", "not a bin" },                      /* version as str */
		{ "8201c303c4023161", "not decimal" },                  /* version 1a */
		{ "8301c302a17803c40131", "nil, an integer or a bin" }, /* value as str */
		{ "8301c303c4013104cb0000000000000000", "not an int" }, /* expiresAt float */
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		GByteArray *b = unhex(bad[i].hex);
		guint len = b->len;
		ts_msg m;
		GError *e = NULL;
		ts_entry en;
		g_assert_true(ts_msg_decode(&m, g_byte_array_free(b, FALSE), len, &e));
		g_assert_false(ts_entry_decode(&m, &en, &e));
		says(e, bad[i].hex, bad[i].why);
		ts_msg_clear(&m);
	}
	/* A page entry without its key; a next that is a bool. */
	ts_msg m;
	ts_page p;
	GError *e = NULL;
	body_msg("8101918201c303c40131", &m);
	g_assert_false(ts_page_decode(&m, &p, &e));
	says(e, "a page entry", "without its key");
	e = NULL;
	ts_msg_clear(&m);
	body_msg("820190 02c3", &m);
	g_assert_false(ts_page_decode(&m, &p, &e));
	g_clear_error(&e);
	ts_msg_clear(&m);
	body_msg("820190 02a26b39", &m);
	g_assert_true(ts_page_decode(&m, &p, &e));
	g_assert_cmpstr(p.next, ==, "k9");
	ts_page_clear(&p);
	ts_msg_clear(&m);
}

/* ---- SERVE, the proof, records ---- */

static void test_proof_vectors(void)
{
	uint8_t key[32] = { 0 }, msg[16];
	for (int i = 0; i < 16; i++)
		msg[i] = (uint8_t)i;
	GByteArray *p = unhex("d926952ca8b7ec4a95941d1ada3a5203ceff8cceee34f574d23909eb314c40c0");
	g_assert_true(ts_proof_ok(key, msg, p->data));
	p->data[31] ^= 1;
	g_assert_false(ts_proof_ok(key, msg, p->data));
	g_byte_array_free(p, TRUE);
	memset(key, 7, sizeof(key));
	memcpy(msg, "0123456789abcdef", 16);
	p = unhex("0f6d97c798d01f90e99ba4f560c4a577057f88bd261130276fcd4e54c12dd371");
	g_assert_true(ts_proof_ok(key, msg, p->data));
	g_byte_array_free(p, TRUE);
}

static void test_serve(void)
{
	static const char serve[] =
	        "{\"endpoints\":[\"unix:///tmp/tsr/data/server/tinystore.sock\"],\"instance\":"
	        "\"N46RN8QmgPPKUC5uFVfcoQ\",\"pid\":13043,\"protocol\":1,\"secret\":"
	        "\"2hTw_Kpa8yBC4HMDzs26togbvb1hUQUTfYBSafecf5g\",\"server\":\"0.5.1\"}";
	ts_serve s;
	GError *e = NULL;
	g_assert_true(ts_serve_parse(serve, strlen(serve), &s, &e));
	g_assert_no_error(e);
	g_assert_cmpstr(s.endpoint, ==, "unix:///tmp/tsr/data/server/tinystore.sock");
	g_assert_cmpuint(s.secret[0], ==, 0xda); /* "2hT" */
	ts_serve_clear(&s);

	static const char *const bad[] = {
		"",
		"[]",
		"{\"endpoints\":[\"unix:///s\"],\"protocol\":2,\"secret\":"
		"\"2hTw_Kpa8yBC4HMDzs26togbvb1hUQUTfYBSafecf5g\"}",
		"{\"endpoints\":[\"tcp://h:1\"],\"protocol\":1,\"secret\":"
		"\"2hTw_Kpa8yBC4HMDzs26togbvb1hUQUTfYBSafecf5g\"}",
		"{\"endpoints\":[],\"protocol\":1,\"secret\":"
		"\"2hTw_Kpa8yBC4HMDzs26togbvb1hUQUTfYBSafecf5g\"}",
		"{\"endpoints\":[\"unix:///s\"],\"protocol\":1,\"secret\":\"2hTw\"}",
		"{\"endpoints\":[\"unix:///s\"],\"protocol\":1,\"secret\":"
		"\"2hTw+Kpa8yBC4HMDzs26togbvb1hUQUTfYBSafecf5g\"}",
		"{\"endpoints\":[\"unix:///s\"],\"protocol\":1,\"protocol\":1}",
		"{\"endpoints\":[\"unix:///s\"] \"protocol\":1}",
		"{\"a\":[[[[[[[[[[[[1]]]]]]]]]]]]}",
		"{\"a\":\"\\u0000\"}",
		"{\"a\":\"\\ud800\"}",
		"{\"a\":01}",
		"{\"a\":tru}",
		"{\"a\":\"x\"} x",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_assert_false(ts_serve_parse(bad[i], strlen(bad[i]), &s, &e));
		g_assert_nonnull(e);
		g_clear_error(&e);
	}
}

static void test_record_roundtrip(void)
{
	ts_record r = { 0 };
	r.holder.host = g_strdup("mail\"hub\\1");
	r.holder.pid = 4242;
	r.holder.uid = 8;
	r.holder.gid = 12;
	r.holder.user = g_strdup("mail");
	r.holder.command = g_strdup("dotlockfile -l /var/mail/jo.lock\n\x01 é");
	r.holder.acquired_us = 1796020635016000;
	r.holder.heartbeat_us = 1796020636016000;
	r.holder.mode = 0100644;
	r.mount = g_strdup("/var/mail");
	strcpy(r.fence, "33130733005241463604112948985857");
	memcpy(r.lease, L, sizeof(L));
	r.ttl_ms = 30000;
	r.server_ms = 1796020635999;
	r.content = g_memdup2("4242\n\0x", 7);
	r.content_len = 7;
	GByteArray *v = ts_record_encode(&r);
	g_assert_cmpuint(v->data[0], ==, 3);
	ts_record back;
	GError *e = NULL;
	g_assert_true(ts_record_decode(v->data, v->len, &back, &e));
	g_assert_no_error(e);
	g_assert_cmpstr(back.holder.host, ==, r.holder.host);
	g_assert_cmpint(back.holder.pid, ==, 4242);
	g_assert_cmpuint(back.holder.uid, ==, 8);
	g_assert_cmpuint(back.holder.gid, ==, 12);
	g_assert_cmpstr(back.holder.user, ==, "mail");
	g_assert_cmpstr(back.holder.command, ==, r.holder.command);
	g_assert_cmpint(back.holder.acquired_us, ==, r.holder.acquired_us);
	g_assert_cmpint(back.holder.heartbeat_us, ==, r.holder.heartbeat_us);
	g_assert_cmpuint(back.holder.mode, ==, 0100644);
	g_assert_cmpstr(back.mount, ==, "/var/mail");
	g_assert_cmpstr(back.fence, ==, r.fence);
	g_assert_cmpmem(back.lease, TS_ID_SIZE, L, TS_ID_SIZE);
	g_assert_cmpint(back.ttl_ms, ==, 30000);
	g_assert_cmpint(back.server_ms, ==, 1796020635999);
	g_assert_cmpmem(back.content, back.content_len, r.content, r.content_len);
	ts_record_clear(&back);
	g_byte_array_free(v, TRUE);

	/* Long command lines are cut, on a character boundary. */
	g_free(r.holder.command);
	GString *cmd = g_string_new(NULL);
	for (int i = 0; i < 2000; i++)
		g_string_append(cmd, "é");
	r.holder.command = g_string_free(cmd, FALSE);
	v = ts_record_encode(&r);
	g_assert_true(ts_record_decode(v->data, v->len, &back, &e));
	g_assert_cmpuint(strlen(back.holder.command), <=, 1024);
	g_assert_true(g_utf8_validate(back.holder.command, -1, NULL));
	ts_record_clear(&back);
	g_byte_array_free(v, TRUE);
	ts_record_clear(&r);
}

static void test_record_hostile(void)
{
	static const char *const bad[] = {
		"{\"v\":1}",     /* no type byte */
		"\x02{\"v\":1}", /* raw bytes */
		"\x03",          /* nothing */
		"\x03[]",        /* not an object */
		"\x03{\"fence\":\"1\",\"lease\":\"000102030405060708090a0b0c0d0e0f\"}", /* no v */
		"\x03{\"v\":1,\"lease\":\"000102030405060708090a0b0c0d0e0f\"}", /* no fence */
		"\x03{\"v\":1,\"fence\":\"1\"}",                                /* no lease */
		"\x03{\"v\":1,\"fence\":\"1x\",\"lease\":\"000102030405060708090a0b0c0d0e0f\"}",
		"\x03{\"v\":1,\"fence\":\"1\",\"lease\":\"000102030405060708090a0b0c0d0e0g\"}",
		"\x03{\"v\":1,\"fence\":\"1\",\"lease\":\"00\"}",
		"\x03{\"v\":1,\"fence\":\"1\",\"lease\":\"000102030405060708090a0b0c0d0e0f\","
		"\"uid\":-1}",
		"\x03{\"v\":1,\"fence\":\"1\",\"lease\":\"000102030405060708090a0b0c0d0e0f\","
		"\"uid\":4294967296}",
		"\x03{\"v\":1,\"fence\":\"1\",\"lease\":\"000102030405060708090a0b0c0d0e0f\","
		"\"pid\":1.5}",
		"\x03{\"v\":1,\"fence\":\"1\",\"lease\":\"000102030405060708090a0b0c0d0e0f\","
		"\"pid\":99999999999999999999}",
		"\x03{\"v\":1,\"fence\":\"1\",\"lease\":\"000102030405060708090a0b0c0d0e0f\","
		"\"host\":7}",
		"\x03{\"v\":1,\"fence\":\"1\",\"lease\":\"000102030405060708090a0b0c0d0e0f\","
		"\"content\":\"!!!!\"}",
		"\x03{\"v\":0,\"fence\":\"1\",\"lease\":\"000102030405060708090a0b0c0d0e0f\"}",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		ts_record r;
		GError *e = NULL;
		g_assert_false(ts_record_decode((const uint8_t *)bad[i], strlen(bad[i]), &r, &e));
		g_assert_nonnull(e);
		g_clear_error(&e);
	}
	/* Content past LOCKFS_CONTENT_MAX is refused. */
	GString *big = g_string_new("\x03{\"v\":1,\"fence\":\"1\",\"lease\":"
	                            "\"000102030405060708090a0b0c0d0e0f\",\"content\":\"");
	for (int i = 0; i < (LOCKFS_CONTENT_MAX + 3) / 3 + 1; i++)
		g_string_append(big, "QUJD");
	g_string_append(big, "\"}");
	ts_record r;
	GError *e = NULL;
	g_assert_false(ts_record_decode((const uint8_t *)big->str, big->len, &r, &e));
	g_clear_error(&e);
	g_string_free(big, TRUE);
	/* Unknown members and a later version are read. */
	const char *later =
	        "\x03{\"v\":2,\"fence\":\"7\",\"lease\":\"000102030405060708090a0b0c0d0e0f\","
	        "\"new\":{\"x\":[1,2,null,true]}}";
	g_assert_true(ts_record_decode((const uint8_t *)later, strlen(later), &r, &e));
	g_assert_cmpstr(r.fence, ==, "7");
	g_assert_null(r.holder.host);
	ts_record_clear(&r);
}

/* ---- fence epochs and the restart marker ---- */

static void test_fence_epoch(void)
{
	static const struct {
		const char *fence;
		bool ok;
		uint64_t epoch;
	} cases[] = {
		/* The protocol document's examples (§5.8): before and after a restart. */
		{ "33130733005241463604112948985857", true, 1796020635016 },
		{ "33130734863990736703308498468865", true, 1796020735779 },
		{ "1", true, 0 },
		{ "18446744073709551615", true, 0 },
		{ "18446744073709551616", true, 1 },
		{ "340282366920938463463374607431768211455", true, UINT64_MAX },
		{ "340282366920938463463374607431768211456", false, 0 }, /* u128 + 1 */
		{ "999999999999999999999999999999999999999", false, 0 },
		{ "", false, 0 },
		{ "12a", false, 0 },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		uint64_t epoch = 42;
		g_assert_cmpint(ts_fence_epoch(cases[i].fence, &epoch), ==, cases[i].ok);
		if (cases[i].ok)
			g_assert_cmpuint(epoch, ==, cases[i].epoch);
	}
}

static void test_marker(void)
{
	ts_marker m = { .epoch = 1796020735779,
		        .prev = 1796020635016,
		        .ttl_ms = 30000,
		        .grace_until = 1796020765829 };
	GByteArray *v = ts_marker_encode(&m);
	g_assert_cmpuint(v->data[0], ==, 3);
	ts_marker back;
	GError *e = NULL;
	g_assert_true(ts_marker_decode(v->data, v->len, &back, &e));
	g_assert_no_error(e);
	g_assert_cmpmem(&back, sizeof(back), &m, sizeof(m));
	g_byte_array_free(v, TRUE);

	static const char *const bad[] = {
		"{\"v\":1,\"epoch\":1}", /* no type byte */
		"\x03[1]",               /* not an object */
		"\x03{\"epoch\":1}",     /* no v */
		"\x03{\"v\":1}",         /* no epoch */
		"\x03{\"v\":1,\"epoch\":-1}",
		"\x03{\"v\":1,\"epoch\":\"1\"}",
		"\x03{\"v\":1,\"epoch\":1,\"ttl_ms\":1.5}",
		"\x03{\"v\":1,\"epoch\":1,\"grace_until\":99999999999999999999}",
		"\x03{\"v\":1,\"epoch\":1",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_assert_false(
		        ts_marker_decode((const uint8_t *)bad[i], strlen(bad[i]), &back, &e));
		g_assert_nonnull(e);
		g_clear_error(&e);
	}
	/* A later version with more members is read. */
	const char *later = "\x03{\"v\":2,\"epoch\":7,\"ttl_ms\":1000,\"new\":[true]}";
	g_assert_true(ts_marker_decode((const uint8_t *)later, strlen(later), &back, &e));
	g_assert_cmpint(back.epoch, ==, 7);
	g_assert_cmpint(back.ttl_ms, ==, 1000);
	g_assert_cmpint(back.grace_until, ==, 0);
}

/* ---- the fuzz target, under the normal build ---- */

static const char *const vectors[] = {
	"3900000004010000010000008301c302c410000102030405060708090a0b0c0d0e0f03d9203333313330"
	"373333303035323431343633363034313132393438393835383537",
	"01000000040100000100000080",
	"2b00000004030000040000008201a46c6f737402d9216e6f206c65617365206f66207468697320696420"
	"69732068656c643a206c6f7374",
	"5e00000004030000010000008301ad756e696d706c656d656e74656402d92d6669656c642039206f6620"
	"6c6f636b732e486f6c643a206e6f7420696e2074696e7973746f726520302e352e310381a56669656c64"
	"b56669656c642039206f66206c6f636b732e486f6c64",
	"030000000401000006000000810101",
	"1200000004010000070000008301c302c402313603cf000001a22b300075",
	"2c00000004010000080000008401c302c417037b22686f7374223a226831222c22706964223a34327d03c4"
	"02313604cf000001a22b300075",
	"4b00000004010000090000008101928501c302c417037b22686f7374223a226831222c22706964223a3432"
	"7d03c402313604cf000001a22b30007505a62f7372762f618401c302c4060168656c6c6f03c4013305a26b"
	"33",
	"0800000008000000000000003132333435363738",
	"0400000007000000000000008c4b4c00",
	"250000000a000000000000008201ab756e617661696c61626c6502b574686520736572766572206973"
	"20636c6f73696e67",
	"af00000002000000000000008b010102a5302e352e3103c410e520c29dc3f8fa4dad5ae858ae988d7a04"
	"a561646d696e05ce0020000006cd040007ce0080000008ce00200000099ba26b76a6636f6e666967a56c6f"
	"636b73a86368616e6e656c73a46a6f6273a373716ca5626c6f6273a77265636f726473a76d657472696373"
	"a6736561726368a66261636b75700acf000001a22b2f8b440bc420d7304037bef1b38706bf5a03313c0233"
	"3ea9f32f9dd883fc4fae13b5ed676369",
};

static void test_fuzz_vectors(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(vectors); i++) {
		GByteArray *b = unhex(vectors[i]);
		ts_fuzz_one(b->data, b->len);
		g_byte_array_free(b, TRUE);
	}
	/* What the fuzzer found: an empty str, which msgpack-c leaves without a
	 * pointer, as a failure code and as a page's next key. */
	static const char *const found[] = {
		"AwAAAAQBAAAGAAAAgQGgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCg"
		"oKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgATkAAAAE"
		"AQAAAQAAAIMBwwLEEAABAgMEBQYHCAkKCwwNDg8D2SAzMzEzMDdFMzAwNTI0MTQ2MzYwNDEx"
		"Mjk0ODk4NTg1Nw==",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(found); i++) {
		gsize n;
		guchar *b = g_base64_decode(found[i], &n);
		ts_fuzz_one(b, n);
		g_free(b);
	}
	ts_msg m;
	body_msg("820190 02a0", &m);
	ts_page p;
	GError *e = NULL;
	g_assert_false(ts_page_decode(&m, &p, &e));
	g_clear_error(&e);
	ts_msg_clear(&m);
	body_msg("8101a0", &m);
	ts_failure f;
	g_assert_false(ts_failure_decode(&m, &f, &e));
	g_clear_error(&e);
	ts_msg_clear(&m);

	/* A record and a SERVE file. */
	ts_record r = { 0 };
	strcpy(r.fence, "5");
	GByteArray *v = ts_record_encode(&r);
	ts_fuzz_one(v->data, v->len);
	g_byte_array_free(v, TRUE);
}

static void test_fuzz_random(void)
{
	GRand *rnd = g_rand_new_with_seed(20261130);
	uint8_t buf[512];
	for (int i = 0; i < 3000; i++) {
		size_t n = (size_t)g_rand_int_range(rnd, 0, sizeof(buf));
		for (size_t k = 0; k < n; k++)
			buf[k] = (uint8_t)g_rand_int_range(rnd, 0, 256);
		/* Often a plausible header, so bodies get decoded too. */
		if (n >= TS_HEADER_SIZE && g_rand_boolean(rnd)) {
			uint32_t len = (uint32_t)(n - TS_HEADER_SIZE);
			memcpy(buf, &len, 4);
			buf[4] = TS_RESPONSE;
			buf[5] = TS_END;
			buf[6] = buf[7] = 0;
			buf[8] = 1;
			buf[9] = buf[10] = buf[11] = 0;
		}
		ts_fuzz_one(buf, n);
	}
	g_rand_free(rnd);
}

static void test_fuzz_mutated(void)
{
	GRand *rnd = g_rand_new_with_seed(4096);
	for (int i = 0; i < 4000; i++) {
		GByteArray *b = unhex(vectors[(size_t)i % G_N_ELEMENTS(vectors)]);
		int edits = g_rand_int_range(rnd, 1, 6);
		for (int k = 0; k < edits; k++) {
			guint at = (guint)g_rand_int_range(rnd, 0, (gint32)b->len);
			switch (g_rand_int_range(rnd, 0, 4)) {
			case 0:
				b->data[at] = (uint8_t)g_rand_int_range(rnd, 0, 256);
				break;
			case 1:
				b->data[at] ^= (uint8_t)(1u << g_rand_int_range(rnd, 0, 8));
				break;
			case 2:
				g_byte_array_set_size(b, at); /* truncated */
				break;
			default: {
				/* a marker that claims much */
				static const uint8_t big[] = { 0xdd, 0xdf, 0xdb, 0xc6, 0xcf };
				b->data[at] = big[g_rand_int_range(rnd, 0, G_N_ELEMENTS(big))];
			}
			}
			if (b->len == 0)
				break;
		}
		ts_fuzz_one(b->data, b->len);
		g_byte_array_free(b, TRUE);
	}
	g_rand_free(rnd);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/tinystore-codec/encode-vectors", test_encode_vectors);
	g_test_add_func("/tinystore-codec/lock-answers", test_decode_lock_answers);
	g_test_add_func("/tinystore-codec/kv-answers", test_decode_kv_answers);
	g_test_add_func("/tinystore-codec/welcome", test_decode_welcome);
	g_test_add_func("/tinystore-codec/header-checks", test_header_checks);
	g_test_add_func("/tinystore-codec/profile", test_profile);
	g_test_add_func("/tinystore-codec/held-strict", test_held_strict);
	g_test_add_func("/tinystore-codec/entries-strict", test_entries_strict);
	g_test_add_func("/tinystore-codec/proof-vectors", test_proof_vectors);
	g_test_add_func("/tinystore-codec/serve", test_serve);
	g_test_add_func("/tinystore-codec/record-roundtrip", test_record_roundtrip);
	g_test_add_func("/tinystore-codec/record-hostile", test_record_hostile);
	g_test_add_func("/tinystore-codec/fence-epoch", test_fence_epoch);
	g_test_add_func("/tinystore-codec/marker", test_marker);
	g_test_add_func("/tinystore-codec/fuzz-vectors", test_fuzz_vectors);
	g_test_add_func("/tinystore-codec/fuzz-random", test_fuzz_random);
	g_test_add_func("/tinystore-codec/fuzz-mutated", test_fuzz_mutated);
	return g_test_run();
}
