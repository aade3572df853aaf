/* Unit tests for src/daemon/fs_rules.c, the filesystem's pure rules: who
 * acts as a lock's holder, who may touch a lock, what an unlink does, who is
 * of a holder's family, who may delete a name, and what a flock's or POSIX
 * lock's backend key names. */
#include "daemon/fs_rules.h"

#include <glib.h>
#include <string.h>

static const struct lfs_caller ALICE = { .pid = 100, .ppid = 10, .uid = 1000, .gid = 1000 };
static const struct lfs_caller ROOT = { .pid = 200, .ppid = 1, .uid = 0, .gid = 0 };

/* The holder is whoever runs as the holder's uid, whatever its pid. */
static void test_is_holder(void)
{
	g_assert_true(rules_is_holder(&ALICE, 1000));
	g_assert_false(rules_is_holder(&ALICE, 1001));
	/* Root is no holder of another uid's lock: it may touch, not hold. */
	g_assert_false(rules_is_holder(&ROOT, 1000));
	g_assert_true(rules_is_holder(&ROOT, 0));
}

static void test_may_touch(void)
{
	g_assert_true(rules_may_touch(&ALICE, 1000));
	g_assert_false(rules_may_touch(&ALICE, 1001));
	g_assert_false(rules_may_touch(&ALICE, 0));
	g_assert_true(rules_may_touch(&ROOT, 1000));
	g_assert_true(rules_may_touch(&ROOT, 0));
}

/* The holder's unlink releases; anyone else's, root's too, breaks. */
static void test_unlink_effect(void)
{
	g_assert_cmpint(rules_unlink_effect(&ALICE, 1000), ==, TOUCH_RELEASE);
	g_assert_cmpint(rules_unlink_effect(&ALICE, 1001), ==, TOUCH_BREAK);
	g_assert_cmpint(rules_unlink_effect(&ROOT, 1000), ==, TOUCH_BREAK);
	g_assert_cmpint(rules_unlink_effect(&ROOT, 0), ==, TOUCH_RELEASE);
}

static void test_in_family(void)
{
	/* The process itself, its child, its parent, and its sibling. */
	g_assert_true(rules_in_family(&ALICE, 100, 50));
	g_assert_true(rules_in_family(&ALICE, 10, 5));
	g_assert_true(rules_in_family(&ALICE, 300, 100));
	g_assert_true(rules_in_family(&ALICE, 300, 10));
	g_assert_false(rules_in_family(&ALICE, 300, 30));
	/* pids 0 and 1 name nobody: every orphan's parent is init. */
	struct lfs_caller orphan = { .pid = 400, .ppid = 1, .uid = 1000 };
	g_assert_false(rules_in_family(&orphan, 500, 1));
	g_assert_false(rules_in_family(&orphan, 1, 0));
	struct lfs_caller unknown = { .pid = 400, .ppid = 0, .uid = 1000 };
	g_assert_false(rules_in_family(&unknown, 0, 0));
	g_assert_true(rules_in_family(&unknown, 400, 0));
}

/* What the kernel checks for unlink(2): write and search permission on the
 * directory, and in a sticky one, the name's or the directory's owner. */
static void test_may_delete(void)
{
	g_assert_true(rules_may_delete(0, 0, S_IFDIR | 01777, 5, 6));
	g_assert_true(rules_may_delete(1000, 07, S_IFDIR | 0777, 5, 6));
	g_assert_true(rules_may_delete(1000, 03, S_IFDIR | 0333, 5, 6));
	g_assert_false(rules_may_delete(1000, 05, S_IFDIR | 0555, 5, 6));
	g_assert_false(rules_may_delete(1000, 06, S_IFDIR | 0666, 5, 6));
	/* Sticky: only the name's owner or the directory's. */
	g_assert_false(rules_may_delete(1000, 07, S_IFDIR | 01777, 5, 6));
	g_assert_true(rules_may_delete(1000, 07, S_IFDIR | 01777, 5, 1000));
	g_assert_true(rules_may_delete(1000, 07, S_IFDIR | 01777, 1000, 6));
}

static void check_key(const char *key, const char *kind, const char *path)
{
	const char *k = NULL, *p = NULL;
	g_assert_true(rules_flock_key_parse(key, &k, &p));
	g_assert_cmpstr(k, ==, kind);
	g_assert_cmpstr(p, ==, path);
	g_assert_true(p >= key && p <= key + strlen(key));
}

static void test_flock_key(void)
{
	check_key(".lockfs/flock/a/b", "flock", "a/b");
	check_key(".lockfs/posix/a", "posix", "a");
	check_key(".lockfs/flock-sh/a//0123", "flock-shared", "a//0123");
	check_key(".lockfs/posix-sh/x", "posix-shared", "x");
	check_key(".lockfs/flock/", "flock", "");
	const char *k = "unset", *p = "unset";
	g_assert_false(rules_flock_key_parse("a/b.lock", &k, &p));
	g_assert_false(rules_flock_key_parse(".lockfs/flock", &k, &p));
	g_assert_false(rules_flock_key_parse(".lockfs/status", &k, &p));
	g_assert_false(rules_flock_key_parse("", &k, &p));
	g_assert_cmpstr(k, ==, "unset"); /* untouched when it is no such key */
	g_assert_cmpstr(p, ==, "unset");
	/* The tables name each class's keys. */
	for (int c = 0; c <= 1; c++) {
		g_autofree char *ex = g_strconcat(RULES_EX_PREFIX[c], "f", NULL);
		g_autofree char *sh = g_strconcat(RULES_SH_PREFIX[c], "f", NULL);
		check_key(ex, RULES_EX_KIND[c], "f");
		check_key(sh, RULES_SH_KIND[c], "f");
	}
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/rules/is-holder", test_is_holder);
	g_test_add_func("/rules/may-touch", test_may_touch);
	g_test_add_func("/rules/unlink-effect", test_unlink_effect);
	g_test_add_func("/rules/in-family", test_in_family);
	g_test_add_func("/rules/may-delete", test_may_delete);
	g_test_add_func("/rules/flock-key", test_flock_key);
	return g_test_run();
}
