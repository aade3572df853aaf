/* Unit tests for src/common/lockstate.c, the record of a mount's locks that
 * a restart of lockfs takes back: what is written comes back exactly (every
 * byte of a holder's strings and content), later lines replace earlier ones
 * and releases remove them, a torn last line is skipped, and anything that
 * is not a record lockfs wrote -- a wrong magic, a short or long line, a bad
 * escape or number, a NUL -- is refused with FILE:LINE, never half-read. */
#include "lockstate.h"

#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

static char *tmpdir;

static const lockfs_lockstate_id ID = { "/mnt/a b", "hostA", "tinystore", "ts dir=/x" };

static lockfs_lockrec *sample(uint64_t serial, const char *key)
{
	lockfs_lockrec *r = g_new0(lockfs_lockrec, 1);
	r->serial = serial;
	r->key = g_strdup(key);
	g_strlcpy(r->fence, "340282366920938463463374607431768211455", sizeof(r->fence));
	r->token = g_strdup("ts1.0123456789abcdef");
	r->holder.host = g_strdup("host with space\nand newline");
	r->holder.user = g_strdup("");
	r->holder.command = g_strdup("sh -c 'echo %41 100%'");
	r->holder.pid = 4242;
	r->holder.uid = 1000;
	r->holder.gid = 8;
	r->holder.mode = 0100444;
	r->holder.acquired_us = 1796534916086661;
	r->holder.heartbeat_us = 1796534916086662;
	r->holder.mtime_us = -5;
	r->ppid = 1;
	r->start = 123456789;
	static const char content[] = { '4', '2', '\n', '\0', '\377' };
	r->content = g_memdup2(content, sizeof(content));
	r->content_len = sizeof(content);
	return r;
}

static void assert_same(const lockfs_lockrec *a, const lockfs_lockrec *b)
{
	g_assert_cmpuint(a->serial, ==, b->serial);
	g_assert_cmpstr(a->key, ==, b->key);
	g_assert_cmpstr(a->fence, ==, b->fence);
	g_assert_cmpstr(a->token, ==, b->token);
	g_assert_cmpstr(a->holder.host, ==, b->holder.host);
	g_assert_cmpstr(a->holder.user, ==, b->holder.user);
	g_assert_cmpstr(a->holder.command, ==, b->holder.command);
	g_assert_cmpint(a->holder.pid, ==, b->holder.pid);
	g_assert_cmpuint(a->holder.uid, ==, b->holder.uid);
	g_assert_cmpuint(a->holder.gid, ==, b->holder.gid);
	g_assert_cmpuint(a->holder.mode, ==, b->holder.mode);
	g_assert_cmpint(a->holder.acquired_us, ==, b->holder.acquired_us);
	g_assert_cmpint(a->holder.heartbeat_us, ==, b->holder.heartbeat_us);
	g_assert_cmpint(a->holder.mtime_us, ==, b->holder.mtime_us);
	g_assert_cmpint(a->ppid, ==, b->ppid);
	g_assert_cmpuint(a->start, ==, b->start);
	g_assert_cmpmem(a->content, a->content_len, b->content, b->content_len);
}

static char *read_text(lockfs_lockstate *st, gsize *len)
{
	char *text = NULL;
	g_assert_true(g_file_get_contents(lockfs_lockstate_file(st), &text, len, NULL));
	return text;
}

/* Written, replaced, released, rewritten: read back exactly. */
static void test_round_trip(void)
{
	lockfs_lockstate_found found;
	g_autoptr(GError) err = NULL;
	lockfs_lockstate *st = lockfs_lockstate_open(tmpdir, &ID, 0, &found, &err);
	g_assert_no_error(err);
	g_assert_nonnull(st);
	g_assert_cmpuint(found.locks->len, ==, 0);
	lockfs_lockstate_found_clear(&found);
	lockfs_lockrec *a = sample(1, "dir/a.lock"), *b = sample(2, "b.lock");
	g_assert_cmpint(lockfs_lockstate_grant(st, a), ==, 0);
	g_assert_cmpint(lockfs_lockstate_grant(st, b), ==, 0);
	g_assert_cmpint(lockfs_lockstate_session(st, "etcd-lease:7"), ==, 0);
	a->holder.heartbeat_us += 10; /* a heartbeat: the same serial again */
	g_assert_cmpint(lockfs_lockstate_grant(st, a), ==, 0);
	g_assert_cmpint(lockfs_lockstate_release(st, 2), ==, 0);
	gsize len;
	g_autofree char *text = read_text(st, &len);
	g_assert_true(lockfs_lockstate_parse("f", text, len, &found, &err));
	g_assert_no_error(err);
	g_assert_cmpuint(found.locks->len, ==, 1);
	assert_same(found.locks->pdata[0], a);
	g_assert_cmpstr(found.session, ==, "etcd-lease:7");
	g_assert_cmpstr(found.header[0], ==, ID.mount);
	g_assert_cmpstr(found.header[1], ==, ID.host);
	lockfs_lockstate_found_clear(&found);

	/* Rewritten whole: the same, with only what is live. */
	g_autoptr(GPtrArray) live = g_ptr_array_new();
	g_ptr_array_add(live, a);
	g_assert_cmpint(lockfs_lockstate_rewrite(st, live, "etcd-lease:8"), ==, 0);
	g_autofree char *text2 = read_text(st, &len);
	g_assert_true(lockfs_lockstate_parse("f", text2, len, &found, &err));
	g_assert_cmpuint(found.locks->len, ==, 1);
	assert_same(found.locks->pdata[0], a);
	g_assert_cmpstr(found.session, ==, "etcd-lease:8");
	g_assert_null(strstr(text2, "\nR "));
	lockfs_lockstate_found_clear(&found);
	lockfs_lockstate_close(st);

	/* Opened again: the same, and a second opener is refused. */
	st = lockfs_lockstate_open(tmpdir, &ID, 0, &found, &err);
	g_assert_no_error(err);
	g_assert_cmpuint(found.locks->len, ==, 1);
	lockfs_lockstate_found_clear(&found);
	lockfs_lockstate *st2 = lockfs_lockstate_open(tmpdir, &ID, 0, &found, &err);
	g_assert_null(st2);
	g_assert_nonnull(strstr(err->message, "in use by another lockfs"));
	g_clear_error(&err);
	/* Another host's record with a lock in it is refused; */
	lockfs_lockstate_id other = ID;
	other.host = "hostB";
	lockfs_lockstate_close(st);
	st2 = lockfs_lockstate_open(tmpdir, &other, 0, &found, &err);
	g_assert_null(st2);
	g_assert_nonnull(strstr(err->message, "of host 'hostA', not 'hostB'"));
	g_clear_error(&err);
	lockfs_lockrec_free(a);
	lockfs_lockrec_free(b);
}

/* A record line cut short by a full disk: skipped, the rest read. */
static void test_torn(void)
{
	const char *text = "lockfs-locks 1\nmount %\nhost h\nbackend local\nserver local\n"
	                   "boot x\nR 5\nG 3 a.lock 12 local 1 1 0 0 0 100644 0 0 0 0 0 h %";
	lockfs_lockstate_found found;
	g_autoptr(GError) err = NULL;
	g_assert_true(lockfs_lockstate_parse("f", text, strlen(text), &found, &err));
	g_assert_cmpuint(found.locks->len, ==, 0);
	g_assert_cmpuint(found.skipped, ==, 1);
	lockfs_lockstate_found_clear(&found);
}

/* Each of these is refused, naming the file and line. */
static void test_refused(void)
{
	static const char *const head = "lockfs-locks 1\nmount %\nhost h\nbackend local\n"
	                                "server local\nboot x\n";
	static const char *const bad[] = {
		"G 1 a.lock 1 local 1 1 0 0 0 100644 0 0 0 0 0 h % %\n",     /* one field short */
		"G 1 a.lock 1 local 1 1 0 0 0 100644 0 0 0 0 0 h % % % x\n", /* one too many */
		"G 0 a.lock 1 local 1 1 0 0 0 100644 0 0 0 0 0 h % % %\n",   /* serial 0 */
		"G 1 % 1 local 1 1 0 0 0 100644 0 0 0 0 0 h % % %\n",        /* empty key */
		"G 1 a%0 1 local 1 1 0 0 0 100644 0 0 0 0 0 h % % %\n",      /* short escape */
		"G 1 a%00b 1 local 1 1 0 0 0 100644 0 0 0 0 0 h % % %\n",    /* a NUL */
		"G 1 a.lock 1 local x 1 0 0 0 100644 0 0 0 0 0 h % % %\n",   /* pid */
		"G 1 a.lock 1 local 1 1 0 99999999999 0 100644 0 0 0 0 0 h % % %\n", /* uid */
		"G 1 a.lock 1 local 1 1 0 0 0 9 0 0 0 0 0 h % % ~\n",                /* content */
		("G 1 a.lock 1111111111111111111111111111111111111111 local 1 1 0 0 0 1 0 0 0 0 "
		 "0 h % % %\n"), /* fence too long; () for clang's -Wstring-concatenation */
		"G  1 a.lock\n", /* empty field */
		"X 1\n",
		"R x\n",
		"\n",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree char *text = g_strconcat(head, bad[i], NULL);
		lockfs_lockstate_found found;
		g_autoptr(GError) err = NULL;
		g_test_message("line: %s", bad[i]);
		g_assert_false(lockfs_lockstate_parse("FILE", text, strlen(text), &found, &err));
		g_assert_nonnull(err);
		g_assert_true(g_str_has_prefix(err->message, "FILE:7: "));
		g_assert_null(found.locks);
	}
	/* Not a record at all, a header out of order, a NUL byte. */
	static const char *const files[] = {
		"not a record\n",
		"lockfs-locks 1\nhost h\nmount %\n",
		"lockfs-locks 1\nmount %\n\0host h\n",
	};
	static const size_t lens[] = { 13, 32, 30 };
	for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
		lockfs_lockstate_found found;
		g_autoptr(GError) err = NULL;
		g_assert_false(lockfs_lockstate_parse("FILE", files[i], lens[i], &found, &err));
		g_assert_nonnull(err);
	}
}

/* Random bytes after a valid header never crash, and either parse or are
 * refused with an error. */
static void test_random(void)
{
	static const char *const head = "lockfs-locks 1\nmount %\nhost h\nbackend local\n"
	                                "server local\nboot x\n";
	GRand *rand = g_rand_new_with_seed(25);
	static const char alphabet[] = "GR 0123456789%abcdefAF\n.-~";
	for (int n = 0; n < 20000; n++) {
		GString *text = g_string_new(head);
		int len = g_rand_int_range(rand, 0, 160);
		for (int i = 0; i < len; i++)
			g_string_append_c(
			        text, alphabet[g_rand_int_range(rand, 0, sizeof(alphabet) - 1)]);
		lockfs_lockstate_found found;
		GError *err = NULL;
		bool ok = lockfs_lockstate_parse("f", text->str, text->len, &found, &err);
		g_assert_true(ok == (err == NULL));
		if (ok)
			lockfs_lockstate_found_clear(&found);
		g_clear_error(&err);
		g_string_free(text, TRUE);
	}
	g_rand_free(rand);
}

/* The exact bytes of a G line, as printf wrote them before its numbers
 * were written by hand (issue #29): extremes of every number, escapes. */
static void test_line_bytes(void)
{
	lockfs_lockstate_found found;
	g_autoptr(GError) err = NULL;
	g_autofree char *dir = g_build_filename(tmpdir, "bytes", NULL);
	g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
	lockfs_lockstate *st = lockfs_lockstate_open(dir, &ID, 0, &found, &err);
	g_assert_no_error(err);
	lockfs_lockstate_found_clear(&found);
	lockfs_lockrec *r = sample(UINT64_MAX, "dir/a b%.lock");
	r->holder.pid = INT64_MIN;
	r->ppid = INT64_MAX;
	r->holder.uid = UINT32_MAX;
	r->holder.gid = 0;
	r->holder.heartbeat_us = 0;
	r->holder.atime_us = -1796534916086661;
	r->holder.ctime_us = 1;
	g_assert_cmpint(lockfs_lockstate_grant(st, r), ==, 0);
	g_assert_cmpint(lockfs_lockstate_release(st, 7), ==, 0);
	gsize len;
	g_autofree char *text = read_text(st, &len);
	const char *g = strstr(text, "\nG ");
	g_assert_nonnull(g);
	g_assert_cmpstr(g + 1, ==,
	                "G 18446744073709551615 dir/a%20b%25.lock "
	                "340282366920938463463374607431768211455 ts1.0123456789abcdef "
	                "-9223372036854775808 9223372036854775807 123456789 4294967295 0 100444 "
	                "1796534916086661 0 -5 -1796534916086661 1 "
	                "host%20with%20space%0Aand%20newline % sh%20-c%20'echo%20%2541%20100%25' "
	                "NDIKAP8=\nR 7\n");
	lockfs_lockrec_free(r);
	lockfs_lockstate_close(st);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	tmpdir = g_dir_make_tmp("lockfs-lockstate-XXXXXX", NULL);
	g_test_add_func("/lockstate/round-trip", test_round_trip);
	g_test_add_func("/lockstate/line-bytes", test_line_bytes);
	g_test_add_func("/lockstate/torn", test_torn);
	g_test_add_func("/lockstate/refused", test_refused);
	g_test_add_func("/lockstate/random", test_random);
	int r = g_test_run();
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		r = r ? r : 1;
	return r;
}
