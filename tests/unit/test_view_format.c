/* Unit tests for src/common/view_format.c, the text of .lockfs/ that the daemon
 * writes and lockfsctl reads: every byte value survives escaping and comes
 * back, the escaped text holds no control character, space, bad UTF-8 or
 * line break of any kind, malformed escapes are refused rather than taken
 * literally, a hostile holder record can neither add a status line nor a
 * field, and lockfsctl's own reader (src/ctl/ctl_common.c, linked in) gets back
 * exactly what the daemon's writer was given.  Also the fence state file's
 * one parser (src/common/fence_store.c), which lockfsctl check uses too. */
#include "ctl.h"
#include "fence_store.h"
#include "view_format.h"

#include <glib/gstdio.h>
#include <string.h>

/* ---- helpers ---- */

static char *escape_len(const char *s, size_t len, unsigned flags)
{
	GString *out = g_string_new(NULL);
	lockfs_escape_append(out, s, len, flags);
	return g_string_free(out, FALSE);
}

/* S (LEN bytes) escaped has only printable ASCII, valid UTF-8 of safe
 * characters, and backslashes that start \NNN escapes. */
static void assert_clean(const char *s, size_t len, bool keep_space)
{
	g_assert_true(g_utf8_validate(s, len, NULL));
	for (const char *p = s; p < s + len; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);
		if (c == ' ' && keep_space)
			continue;
		g_assert_false(lockfs_unichar_unsafe(c));
		if (c == '\\') {
			g_assert_cmpint(s + len - p, >=, 4);
			g_assert_true(p[1] >= '0' && p[1] <= '3');
			g_assert_true(p[2] >= '0' && p[2] <= '7');
			g_assert_true(p[3] >= '0' && p[3] <= '7');
		}
	}
}

static void assert_round_trip(const char *s, size_t len)
{
	for (unsigned flags = 0; flags <= LOCKFS_ESCAPE_KEEP_SPACE; flags++) {
		g_autofree char *e = escape_len(s, len, flags);
		assert_clean(e, strlen(e), flags != 0);
		GString *back = g_string_new(NULL);
		g_assert_true(lockfs_unescape_append(back, e, strlen(e)));
		g_assert_cmpmem(back->str, back->len, s, len);
		g_string_free(back, TRUE);
	}
}

/* ---- escaping ---- */

static void test_every_byte(void)
{
	for (int b = 0; b < 256; b++) {
		char c = (char)b;
		assert_round_trip(&c, 1);
		g_autofree char *e = escape_len(&c, 1, 0);
		bool raw = b >= 0x21 && b < 0x7f && b != '\\';
		if (raw) {
			char want[2] = { c, 0 };
			g_assert_cmpstr(e, ==, want);
		} else {
			/* Alone, a byte >= 0x80 is never well-formed UTF-8. */
			g_autofree char *want = g_strdup_printf("\\%03o", b);
			g_assert_cmpstr(e, ==, want);
		}
	}
	/* All 256 in one string, in order and reversed, and in pairs: a lead
	 * byte next to every other byte. */
	char all[256], rev[256];
	for (int b = 0; b < 256; b++) {
		all[b] = (char)b;
		rev[255 - b] = (char)b;
	}
	assert_round_trip(all, sizeof(all));
	assert_round_trip(rev, sizeof(rev));
	for (int a = 0; a < 256; a++)
		for (int b = 0; b < 256; b++) {
			char pair[2] = { (char)a, (char)b };
			assert_round_trip(pair, 2);
		}
}

static void test_random_bytes(void)
{
	for (int round = 0; round < 2000; round++) {
		char buf[64];
		size_t len = g_test_rand_int_range(0, sizeof(buf) + 1);
		for (size_t i = 0; i < len; i++)
			buf[i] = (char)g_test_rand_int_range(0, 256);
		assert_round_trip(buf, len);
	}
}

static void test_expected(void)
{
	static const struct {
		const char *in, *out, *text; /* text: with LOCKFS_ESCAPE_KEEP_SPACE */
	} cases[] = {
		{ "plain.lock", "plain.lock", "plain.lock" },
		{ "a b\tc\nd\\e", "a\\040b\\011c\\012d\\134e", "a b\\011c\\012d\\134e" },
		{ "\033[2J\033]0;x\007", "\\033[2J\\033]0;x\\007", "\\033[2J\\033]0;x\\007" },
		{ "\r\177", "\\015\\177", "\\015\\177" },
		{ "\\012", "\\134012", "\\134012" }, /* a literal escape is not one */
		/* UTF-8 of every script stays readable. */
		{ "ünïcødé-锁-𝄞", "ünïcødé-锁-𝄞", "ünïcødé-锁-𝄞" },
		{ "\xc2\xa0", "\xc2\xa0", "\xc2\xa0" }, /* NBSP: no control */
		{ "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf" }, /* U+10FFFF */
		/* C1 controls (U+0085 NEL, U+009B CSI), line separators, bidi. */
		{ "\xc2\x85", "\\302\\205", "\\302\\205" },
		{ "\xc2\x9b"
		  "2J",
		  "\\302\\2332J", "\\302\\2332J" },
		{ "\xe2\x80\xa8|\xe2\x80\xa9", "\\342\\200\\250|\\342\\200\\251",
		  "\\342\\200\\250|\\342\\200\\251" },
		{ "\xe2\x80\xae\xe2\x81\xa6\xe2\x80\x8f",
		  "\\342\\200\\256\\342\\201\\246\\342\\200\\217",
		  "\\342\\200\\256\\342\\201\\246\\342\\200\\217" },
		/* Not UTF-8: a stray continuation, a cut sequence, an overlong
		 * '/', a surrogate, past U+10FFFF, 0xfe/0xff. */
		{ "\x80", "\\200", "\\200" },
		{ "x\xe2\x82", "x\\342\\202", "x\\342\\202" },
		{ "\xc0\xaf", "\\300\\257", "\\300\\257" },
		{ "\xe0\x80\xaf", "\\340\\200\\257", "\\340\\200\\257" },
		{ "\xed\xa0\x80", "\\355\\240\\200", "\\355\\240\\200" },
		{ "\xf4\x90\x80\x80", "\\364\\220\\200\\200", "\\364\\220\\200\\200" },
		{ "\xfe\xff", "\\376\\377", "\\376\\377" },
		/* A bad lead byte does not swallow a good character after it. */
		{ "\xe2"
		  "é",
		  "\\342é", "\\342é" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *e = lockfs_escape(cases[i].in);
		g_autofree char *t = lockfs_escape_text(cases[i].in);
		g_assert_cmpstr(e, ==, cases[i].out);
		g_assert_cmpstr(t, ==, cases[i].text);
		g_autofree char *back = lockfs_unescape(e, -1);
		g_assert_cmpstr(back, ==, cases[i].in);
	}
	g_autofree char *empty = lockfs_escape(NULL);
	g_assert_cmpstr(empty, ==, "");
}

static void test_malformed(void)
{
	static const char *const bad[] = {
		"\\",    "a\\",   "\\1",   "\\12",  "x\\12", "\\8aa", "\\089",
		"\\097", "\\400", "\\777", "\\x41", "\\n",   "\\\\",  "\\ 12",
		"\\1a2", "ok\\0", "\\04",  "\\-12", "\\+12",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_assert_null(lockfs_unescape(bad[i], -1));
		GString *out = g_string_new(NULL);
		g_assert_false(lockfs_unescape_append(out, bad[i], strlen(bad[i])));
		g_string_free(out, TRUE);
	}
	/* \000 is a byte, but not one a C string can hold. */
	g_assert_null(lockfs_unescape("a\\000b", -1));
	GString *out = g_string_new(NULL);
	g_assert_true(lockfs_unescape_append(out, "a\\000b", 6));
	g_assert_cmpmem(out->str, out->len, "a\0b", 3);
	g_string_free(out, TRUE);
	/* LEN bounds the input: an escape cut by it is malformed. */
	g_assert_null(lockfs_unescape("a\\040", 4));
	g_autofree char *cut = lockfs_unescape("a\\040b", 5);
	g_assert_cmpstr(cut, ==, "a ");
	/* Bytes that are not escapes are taken as they are. */
	g_autofree char *raw = lockfs_unescape("a b\t\xff", -1);
	g_assert_cmpstr(raw, ==, "a b\t\xff");
	g_autofree char *hi = lockfs_unescape("\\377\\200\\001", -1);
	g_assert_cmpstr(hi, ==, "\xff\x80\x01");
}

/* ---- a hostile holder record ---- */

/* What another host might put in a record: every byte 1..255, a forged
 * status line and a forged field line, terminal escapes. */
static char *hostile(int which)
{
	GString *s = g_string_new(NULL);
	switch (which) {
	case 0:
		for (int b = 1; b < 256; b++)
			g_string_append_c(s, (char)b);
		break;
	case 1:
		g_string_append(s, "x\nother.lock state=held fence=1 host=h pid=1 uid=0 user=root "
		                   "age=0 heartbeat_age=0 command=evil\n");
		break;
	case 2:
		g_string_append(s, "sh\nstate: lost\nfence: 1\r\nhost: forged");
		break;
	case 3:
		g_string_append(s, "\033]0;owned\007\033[2J\033[1;1H\xc2\x9b"
		                   "31m \tuser=root");
		break;
	default:
		g_string_append(s, "\\012 \\ \\9 =: ");
	}
	return g_string_free(s, FALSE);
}
#define N_HOSTILE 5

static void view_fill(lockfs_view *v, const char *key, const char *evil)
{
	memset(v, 0, sizeof(*v));
	lockfs_view_set(v, LOCKFS_VF_LOCK, key);
	lockfs_view_set(v, LOCKFS_VF_STATE, "held");
	lockfs_view_set(v, LOCKFS_VF_FENCE, "12345678901234567890123");
	lockfs_view_set(v, LOCKFS_VF_HOST, evil);
	lockfs_view_set(v, LOCKFS_VF_PID, "4242");
	lockfs_view_set(v, LOCKFS_VF_UID, "1000");
	lockfs_view_set(v, LOCKFS_VF_GID, "100");
	lockfs_view_set(v, LOCKFS_VF_USER, evil);
	lockfs_view_set(v, LOCKFS_VF_COMMAND, evil);
	lockfs_view_set(v, LOCKFS_VF_ACQUIRED, "2024-01-02T03:04:05Z");
	lockfs_view_set(v, LOCKFS_VF_HEARTBEAT, "2024-01-02T03:04:06Z");
	lockfs_view_set(v, LOCKFS_VF_AGE, "7");
	lockfs_view_set(v, LOCKFS_VF_HEARTBEAT_AGE, "6");
	lockfs_view_set(v, LOCKFS_VF_LEASE_LEFT_MS, "1500");
	lockfs_view_set(v, LOCKFS_VF_BACKEND, "tinystore");
	lockfs_view_set(v, LOCKFS_VF_MINE, "no");
}

static const lockfs_view_field in_status[] = {
	LOCKFS_VF_LOCK,          LOCKFS_VF_STATE,   LOCKFS_VF_FENCE, LOCKFS_VF_HOST,
	LOCKFS_VF_PID,           LOCKFS_VF_UID,     LOCKFS_VF_USER,  LOCKFS_VF_AGE,
	LOCKFS_VF_HEARTBEAT_AGE, LOCKFS_VF_COMMAND,
};

static bool field_in_status(int f)
{
	for (size_t i = 0; i < G_N_ELEMENTS(in_status); i++)
		if ((int)in_status[i] == f)
			return true;
	return false;
}

static void test_status_line(void)
{
	for (int w = 0; w < N_HOSTILE; w++) {
		g_autofree char *evil = hostile(w);
		g_autofree char *key = g_strconcat("dir/", evil, ".lock", NULL);
		lockfs_view v, back;
		view_fill(&v, key, evil);
		GString *line = g_string_new(NULL);
		lockfs_view_status_line(&v, line);
		/* One line: its only newline ends it; words are KEY NAME=VALUE... */
		g_assert_cmpint(line->len, >, 0);
		g_assert_true(line->str[line->len - 1] == '\n');
		g_assert_null(memchr(line->str, '\n', line->len - 1));
		assert_clean(line->str, line->len - 1, true);
		g_autofree char *joined = g_strndup(line->str, line->len - 1);
		g_auto(GStrv) words = g_strsplit(joined, " ", -1);
		g_assert_cmpuint(g_strv_length(words), ==, G_N_ELEMENTS(in_status));
		for (size_t i = 1; i < G_N_ELEMENTS(in_status); i++) {
			g_autofree char *prefix =
			        g_strconcat(lockfs_view_field_name(in_status[i]), "=", NULL);
			g_assert_true(g_str_has_prefix(words[i], prefix));
		}
		g_assert_true(lockfs_view_parse_status_line(line->str, line->len - 1, &back));
		for (int f = 0; f < LOCKFS_VF_COUNT; f++) {
			if (field_in_status(f))
				g_assert_cmpstr(back.v[f], ==, v.v[f]);
			else
				g_assert_null(back.v[f]);
		}
		lockfs_view_clear(&back);
		lockfs_view_clear(&v);
		g_string_free(line, TRUE);
	}
}

static void test_lock_text(void)
{
	for (int w = 0; w < N_HOSTILE; w++) {
		g_autofree char *evil = hostile(w);
		lockfs_view v, back;
		view_fill(&v, evil, evil);
		GString *text = g_string_new(NULL);
		lockfs_view_lock_text(&v, text);
		/* One line per field, each "NAME: " and a clean value. */
		g_auto(GStrv) lines = g_strsplit(text->str, "\n", -1);
		g_assert_cmpuint(g_strv_length(lines), ==, LOCKFS_VF_COUNT + 1);
		g_assert_cmpstr(lines[LOCKFS_VF_COUNT], ==, "");
		for (int f = 0; f < LOCKFS_VF_COUNT; f++) {
			g_autofree char *prefix =
			        g_strconcat(lockfs_view_field_name(f), ": ", NULL);
			g_assert_true(g_str_has_prefix(lines[f], prefix));
			const char *value = lines[f] + strlen(prefix);
			assert_clean(value, strlen(value), false);
		}
		g_assert_true(lockfs_view_parse_lock_text(text->str, &back));
		for (int f = 0; f < LOCKFS_VF_COUNT; f++)
			g_assert_cmpstr(back.v[f], ==, v.v[f]);
		lockfs_view_clear(&back);
		lockfs_view_clear(&v);
		g_string_free(text, TRUE);
	}
}

static void test_parse_rules(void)
{
	lockfs_view v;
	/* No key, or a malformed one: no lock. */
	g_assert_false(lockfs_view_parse_status_line("", 0, &v));
	g_assert_false(lockfs_view_parse_status_line(" state=held", 11, &v));
	const char *bad_key = "a\\9.lock state=held";
	g_assert_false(lockfs_view_parse_status_line(bad_key, strlen(bad_key), &v));
	lockfs_view_clear(&v);
	/* A malformed value is left out; unknown fields are ignored; the first
	 * of two counts; "lock=" is not the key. */
	const char *line = "a.lock lock=b state=held host=x\\ user=u\\040v foo=bar "
	                   "state=lost command=";
	g_assert_true(lockfs_view_parse_status_line(line, strlen(line), &v));
	g_assert_cmpstr(v.v[LOCKFS_VF_LOCK], ==, "a.lock");
	g_assert_cmpstr(v.v[LOCKFS_VF_STATE], ==, "held");
	g_assert_null(v.v[LOCKFS_VF_HOST]);
	g_assert_cmpstr(v.v[LOCKFS_VF_USER], ==, "u v");
	g_assert_cmpstr(v.v[LOCKFS_VF_COMMAND], ==, "");
	lockfs_view_clear(&v);
	/* LEN bounds the line. */
	g_assert_true(lockfs_view_parse_status_line("k.lock state=held", 6, &v));
	g_assert_cmpstr(v.v[LOCKFS_VF_LOCK], ==, "k.lock");
	g_assert_null(v.v[LOCKFS_VF_STATE]);
	lockfs_view_clear(&v);

	const char *text = "lock: a\\040b\nstate: held\nhost: \\400\nuser:nospace\n"
	                   "state: lost\njunk\ncommand: sh -c x\n";
	g_assert_true(lockfs_view_parse_lock_text(text, &v));
	g_assert_cmpstr(v.v[LOCKFS_VF_LOCK], ==, "a b");
	g_assert_cmpstr(v.v[LOCKFS_VF_STATE], ==, "held");
	g_assert_null(v.v[LOCKFS_VF_HOST]);
	g_assert_null(v.v[LOCKFS_VF_USER]);
	g_assert_cmpstr(v.v[LOCKFS_VF_COMMAND], ==, "sh -c x"); /* typed by hand */
	lockfs_view_clear(&v);
	g_assert_false(lockfs_view_parse_lock_text("", &v));
	g_assert_false(lockfs_view_parse_lock_text("nothing: here\n", &v));
	lockfs_view_clear(&v);

	g_assert_cmpint(lockfs_view_field_find("heartbeat_age", 13), ==, LOCKFS_VF_HEARTBEAT_AGE);
	g_assert_cmpint(lockfs_view_field_find("heartbeat", 9), ==, LOCKFS_VF_HEARTBEAT);
	g_assert_cmpint(lockfs_view_field_find("heart", 5), ==, -1);
	g_assert_null(lockfs_view_field_name(LOCKFS_VF_COUNT));
}

/* ---- break requests ---- */

static void test_break(void)
{
	for (int w = 0; w < N_HOSTILE; w++) {
		g_autofree char *evil = hostile(w);
		for (int with_fence = 0; with_fence < 2; with_fence++) {
			const char *fence = with_fence ? "987654321" : NULL;
			g_autofree char *req = lockfs_view_break_request(evil, fence);
			size_t len = strlen(req);
			g_assert_true(req[len - 1] == '\n');
			g_assert_null(memchr(req, '\n', len - 1));
			char *key, *f;
			g_assert_true(lockfs_view_parse_break(req, len, &key, &f));
			g_assert_cmpstr(key, ==, evil);
			g_assert_cmpstr(f, ==, fence);
			g_free(key);
			g_free(f);
		}
	}
	static const struct {
		const char *in, *key, *fence;
	} good[] = {
		{ "a.lock", "a.lock", NULL },
		{ "a.lock\n", "a.lock", NULL },
		{ "a.lock 12\n", "a.lock", "12" },
		{ "a.lock 12  \n\n", "a.lock", "12" },
		{ "d/a\\040b.lock 3", "d/a b.lock", "3" },
		{ "ü.lock", "ü.lock", NULL },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
		char *key, *fence;
		const char *in = good[i].in;
		g_assert_true(lockfs_view_parse_break(in, strlen(in), &key, &fence));
		g_assert_cmpstr(key, ==, good[i].key);
		g_assert_cmpstr(fence, ==, good[i].fence);
		g_free(key);
		g_free(fence);
	}
	static const char *const bad[] = {
		"",           "\n",        " ",
		" 12",        "a b c",     "a 12x",
		"a -1",       "a  12",     "a\nb",
		"a.lock\n12", "a\\9.lock", "a\\",
		"\\000 1",    "a\\04",     "a 1234567890123456789012345678901234567890",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		char *key = (char *)1, *fence = (char *)1;
		g_assert_false(lockfs_view_parse_break(bad[i], strlen(bad[i]), &key, &fence));
		g_assert_null(key);
		g_assert_null(fence);
	}
	char *key, *fence;
	g_assert_false(lockfs_view_parse_break("a\0b 1", 5, &key, &fence));
}

/* ---- lockfsctl reads what the daemon writes ---- */

/* What lockfsctl read of lock W (L) is what the daemon wrote (V). */
static void reader_saw(const ctl_lock *l, const lockfs_view *v, int w)
{
	g_assert_cmpstr(l->key, ==, v->v[LOCKFS_VF_LOCK]);
	g_assert_cmpstr(l->state, ==, v->v[LOCKFS_VF_STATE]);
	g_assert_cmpstr(l->fence, ==, v->v[LOCKFS_VF_FENCE]);
	g_assert_cmpstr(l->host, ==, v->v[LOCKFS_VF_HOST]);
	g_assert_cmpstr(l->user, ==, v->v[LOCKFS_VF_USER]);
	g_assert_cmpstr(l->command, ==, v->v[LOCKFS_VF_COMMAND]);
	g_assert_cmpstr(l->acquired, ==, v->v[LOCKFS_VF_ACQUIRED]);
	g_assert_cmpstr(l->heartbeat, ==, v->v[LOCKFS_VF_HEARTBEAT]);
	g_assert_cmpstr(l->backend, ==, v->v[LOCKFS_VF_BACKEND]);
	g_assert_cmpint(l->pid, ==, 4242);
	g_assert_cmpint(l->uid, ==, 1000);
	g_assert_cmpint(l->gid, ==, 100);
	g_assert_cmpint(l->age_s, ==, 7);
	g_assert_cmpint(l->heartbeat_age_s, ==, 6);
	g_assert_cmpint(l->lease_left_ms, ==, w == 2 ? -1 : 1500);
	g_assert_cmpint(l->acquired_s, ==, 1704164645);
	g_assert_false(l->mine);
	/* What lockfsctl prints of it is clean, and the escape it prints
	 * is the daemon's. */
	g_autofree char *shown = ctl_escape(l->command);
	g_autofree char *daemon = lockfs_escape(v->v[LOCKFS_VF_COMMAND]);
	g_assert_cmpstr(shown, ==, daemon);
	g_autofree char *text = ctl_escape_text(l->command);
	assert_clean(text, strlen(text), true);
	g_assert_null(strchr(text, '\033'));
}

static void test_lockfsctl_reader(void)
{
	g_autofree char *mount = g_dir_make_tmp("lockfs-view-XXXXXX", NULL);
	g_autofree char *dir = g_build_filename(mount, LOCKFS_VIEW_DIR, NULL);
	g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
	GString *status = g_string_new(NULL);
	lockfs_view views[N_HOSTILE];
	g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
	for (int w = 0; w < N_HOSTILE; w++) {
		g_autofree char *evil = hostile(w);
		/* The key is a file's path here: its '/' become '_', and it is
		 * cut in two directories' worth, each name under NAME_MAX. */
		GString *k = g_string_new(NULL);
		for (const char *p = evil; *p; p++) {
			if (p - evil == 128) {
				g_string_append_printf(k, "%d/", w);
				g_autofree char *sub = g_build_filename(dir, k->str, NULL);
				g_assert_cmpint(g_mkdir(sub, 0700), ==, 0);
			}
			g_string_append_c(k, *p == '/' ? '_' : *p);
		}
		g_string_append_printf(k, "%d.lock", w);
		g_ptr_array_add(keys, g_string_free(k, FALSE));
		view_fill(&views[w], keys->pdata[w], evil);
		if (w == 2) /* as for a backend without leases */
			lockfs_view_set(&views[w], LOCKFS_VF_LEASE_LEFT_MS, NULL);
		lockfs_view_status_line(&views[w], status);
		GString *text = g_string_new(NULL);
		lockfs_view_lock_text(&views[w], text);
		g_autofree char *path = g_build_filename(dir, keys->pdata[w], NULL);
		g_assert_true(g_file_set_contents(path, text->str, text->len, NULL));
		g_string_free(text, TRUE);
	}
	g_autofree char *spath = g_build_filename(dir, LOCKFS_VIEW_STATUS, NULL);
	g_assert_true(g_file_set_contents(spath, status->str, status->len, NULL));
	g_string_free(status, TRUE);

	int err = 0;
	g_autoptr(GPtrArray) got = ctl_read_all(mount, &err);
	g_assert_nonnull(got);
	g_assert_cmpuint(got->len, ==, N_HOSTILE);
	for (int w = 0; w < N_HOSTILE; w++) {
		reader_saw(got->pdata[w], &views[w], w);
		lockfs_view_clear(&views[w]);
	}
	for (guint i = 0; i < keys->len; i++) {
		g_autofree char *path = g_build_filename(dir, keys->pdata[i], NULL);
		g_assert_cmpint(g_unlink(path), ==, 0);
		g_autofree char *sub = g_path_get_dirname(path);
		if (strcmp(sub, dir) != 0)
			g_assert_cmpint(g_rmdir(sub), ==, 0);
	}
	g_assert_cmpint(g_unlink(spath), ==, 0);
	g_assert_cmpint(g_rmdir(dir), ==, 0);
	g_assert_cmpint(g_rmdir(mount), ==, 0);
}

static void test_json(void)
{
	GString *out = g_string_new(NULL);
	ctl_json_string(out, "a\"b\\c\nd\te\033f\x7fg\xc2\x9bh\xe2\x80\xa8i\xe2\x80\xaej é\xff");
	g_assert_cmpstr(out->str, ==,
	                "\"a\\\"b\\\\c\\nd\\te\\u001bf\\u007fg\\u009bh\\u2028i\\u202ej "
	                "é\xef\xbf\xbd\"");
	g_string_free(out, TRUE);
}

/* ---- the fence state file ---- */

static void test_fence_state(void)
{
	uint64_t r = 0;
	g_assert_true(lockfs_fence_state_parse("lockfs-fence-state 1\nreserved 42\n", &r));
	g_assert_cmpuint(r, ==, 42);
	const char *most = "lockfs-fence-state 1\nreserved 18446744073709551615";
	g_assert_true(lockfs_fence_state_parse(most, &r));
	g_assert_cmpuint(r, ==, G_MAXUINT64);
	static const char *const bad[] = {
		"",
		"lockfs-fence-state 2\nreserved 1\n",
		"lockfs-fence-state 1\nreserved \n",
		"lockfs-fence-state 1\nreserved -1\n",
		"lockfs-fence-state 1\nreserved +1\n",
		"lockfs-fence-state 1\nreserved  1\n",
		"lockfs-fence-state 1\nreserved 1x\n",
		"lockfs-fence-state 1\nreserved 18446744073709551616\n",
		"lockfs-fence-state 1\nreserve 1\n",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
		g_assert_false(lockfs_fence_state_parse(bad[i], &r));
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/escape/every-byte", test_every_byte);
	g_test_add_func("/escape/random-bytes", test_random_bytes);
	g_test_add_func("/escape/expected", test_expected);
	g_test_add_func("/escape/malformed", test_malformed);
	g_test_add_func("/view/status-line", test_status_line);
	g_test_add_func("/view/lock-text", test_lock_text);
	g_test_add_func("/view/parse-rules", test_parse_rules);
	g_test_add_func("/view/break", test_break);
	g_test_add_func("/view/lockfsctl-reader", test_lockfsctl_reader);
	g_test_add_func("/view/json", test_json);
	g_test_add_func("/fence/state-file", test_fence_state);
	return g_test_run();
}
