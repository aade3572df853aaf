/* libFuzzer target for the restart's state file (src/common/lockstate.c):
 * whatever a crash, a full disk or another program left in
 * STATE_DIR/mount*.locks is parsed by lockfs_lockstate_parse() at the next
 * mount and by lockfsctl; lockfs_lockstate_check() then compares its
 * header.  What parses is written again as the rewrite writes it
 * (format_rec()), and must read back the same, byte for byte.
 *
 * lockstate.c is compiled into this file for its static format_rec(), with
 * the fuzzer's coverage.
 *
 *   build-fuzz/tests/fuzz/fuzz_lockstate -dict=tests/fuzz/lockstate.dict tests/fuzz/corpus/lockstate */
#include "../../src/common/lockstate.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_rec(const lockfs_lockrec *a, const lockfs_lockrec *b)
{
	const lockfs_holder *x = &a->holder, *y = &b->holder;
	return a->serial == b->serial && strcmp(a->key, b->key) == 0 &&
	       strcmp(a->fence, b->fence) == 0 && g_strcmp0(a->token, b->token) == 0 &&
	       a->ppid == b->ppid && a->start == b->start && a->content_len == b->content_len &&
	       (!a->content_len || memcmp(a->content, b->content, a->content_len) == 0) &&
	       g_strcmp0(x->host, y->host) == 0 && g_strcmp0(x->user, y->user) == 0 &&
	       g_strcmp0(x->command, y->command) == 0 && x->pid == y->pid && x->uid == y->uid &&
	       x->gid == y->gid && x->mode == y->mode && x->acquired_us == y->acquired_us &&
	       x->heartbeat_us == y->heartbeat_us && x->mtime_us == y->mtime_us &&
	       x->atime_us == y->atime_us && x->ctime_us == y->ctime_us;
}

/* FOUND written again (header, session, records) reads back the same. */
static void round_trip(const lockfs_lockstate_found *found)
{
	GString *out = g_string_new(MAGIC "\n");
	for (int i = 0; i < 5; i++) {
		g_string_append_printf(out, "%s ", header_words[i]);
		esc(out, found->header[i]);
		g_string_append_c(out, '\n');
	}
	if (found->session) {
		g_string_append(out, "session ");
		esc(out, found->session);
		g_string_append_c(out, '\n');
	}
	for (guint i = 0; i < found->locks->len; i++)
		format_rec(out, found->locks->pdata[i]);
	lockfs_lockstate_found again;
	GError *err = NULL;
	if (!lockfs_lockstate_parse("again", out->str, out->len, &again, &err)) {
		fprintf(stderr, "written again, refused: %s\n%s", err->message, out->str);
		abort();
	}
	if (again.locks->len != found->locks->len || g_strcmp0(again.session, found->session) != 0)
		abort();
	for (guint i = 0; i < found->locks->len; i++)
		if (!same_rec(found->locks->pdata[i], again.locks->pdata[i]))
			abort();
	for (int i = 0; i < 5; i++)
		if (g_strcmp0(again.header[i], found->header[i]) != 0)
			abort();
	lockfs_lockstate_found_clear(&again);
	g_string_free(out, TRUE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lockfs_lockstate_found found;
	GError *err = NULL;
	bool ok = lockfs_lockstate_parse("fuzz", (const char *)data, size, &found, &err);
	if (ok == (err != NULL))
		abort(); /* an answer and an error, or neither */
	g_clear_error(&err);
	if (!ok)
		return 0;
	const lockfs_lockstate_id id = { "/var/lock/shared", "host1", "local", "local" };
	if (!lockfs_lockstate_check("fuzz", &found, &id, &err))
		g_clear_error(&err);
	if (found.locks->len && found.header[4])
		round_trip(&found);
	lockfs_lockstate_found_clear(&found);
	return 0;
}
