/* The journal's fields of a log line (lockfs_log_journal_fields): what
 * g_log_writer_journald is handed when stderr is the journal.  The end to
 * end check, with a real journald, is tests/fs/76-journald.t (root only). */
#include "log.h"

#include <string.h>
#include <syslog.h>

static const char *get(const GLogField *f, gsize n, const char *key)
{
	const char *v = NULL;
	for (gsize i = 0; i < n; i++)
		if (strcmp(f[i].key, key) == 0) {
			g_assert_null(v); /* each key once */
			v = f[i].value;
		}
	return v;
}

static void test_fields(void)
{
	GLogField in[] = {
		{ "MESSAGE", "granted e\033[31m.lock to h:1", -1 },
		{ "PRIORITY", "4", -1 }, /* GLib's: replaced */
		{ "GLIB_DOMAIN", "lockfs", -1 },
		{ "LOCKFS_EVENT", "grant", -1 },
		{ "LOCKFS_LOCK", "e\033[31m.lock", -1 },
		{ "LOCKFS_FENCE", "17", -1 },
		{ "LOCKFS_HOLDER", "h:1 uid=0 user=root", -1 },
	};
	GLogField out[16];
	char prio[2];
	char *msg = NULL;
	gsize n = lockfs_log_journal_fields(G_LOG_LEVEL_INFO, in, G_N_ELEMENTS(in), "lockfs", out,
	                                    G_N_ELEMENTS(out), prio, &msg);
	g_assert_cmpuint(n, ==, G_N_ELEMENTS(in) + 1);
	g_assert_cmpstr(get(out, n, "PRIORITY"), ==, "6");
	g_assert_cmpstr(get(out, n, "SYSLOG_IDENTIFIER"), ==, "lockfs");
	g_assert_cmpstr(get(out, n, "LOCKFS_LOCK"), ==, "e\033[31m.lock"); /* exact bytes */
	g_assert_cmpstr(get(out, n, "LOCKFS_FENCE"), ==, "17");
	g_assert_cmpstr(get(out, n, "LOCKFS_EVENT"), ==, "grant");
	g_assert_cmpstr(get(out, n, "LOCKFS_HOLDER"), ==, "h:1 uid=0 user=root");
	g_assert_cmpstr(get(out, n, "GLIB_DOMAIN"), ==, "lockfs");
	const char *m = get(out, n, "MESSAGE");
	g_assert_nonnull(m);
	g_assert_null(strchr(m, '\033')); /* text: escaped */
	g_assert_cmpstr(m, ==, "granted e\\033[31m.lock to h:1");
	g_free(msg);
}

static void test_priorities(void)
{
	g_assert_cmpint(lockfs_log_priority(G_LOG_LEVEL_CRITICAL), ==, LOG_ERR);
	g_assert_cmpint(lockfs_log_priority(G_LOG_LEVEL_WARNING), ==, LOG_WARNING);
	g_assert_cmpint(lockfs_log_priority(G_LOG_LEVEL_MESSAGE), ==, LOG_NOTICE);
	g_assert_cmpint(lockfs_log_priority(G_LOG_LEVEL_INFO), ==, LOG_INFO);
	g_assert_cmpint(lockfs_log_priority(G_LOG_LEVEL_DEBUG), ==, LOG_DEBUG);
	/* An identifier given by the caller is kept, not doubled. */
	GLogField in[] = { { "MESSAGE", "x", -1 }, { "SYSLOG_IDENTIFIER", "other", -1 } };
	GLogField out[8];
	char prio[2];
	char *msg = NULL;
	gsize n =
	        lockfs_log_journal_fields(G_LOG_LEVEL_WARNING, in, 2, "lockfs", out, 8, prio, &msg);
	g_assert_cmpuint(n, ==, 3);
	g_assert_cmpstr(get(out, n, "SYSLOG_IDENTIFIER"), ==, "other");
	g_assert_cmpstr(get(out, n, "PRIORITY"), ==, "4");
	g_free(msg);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/log/journal-fields", test_fields);
	g_test_add_func("/log/priorities", test_priorities);
	return g_test_run();
}
