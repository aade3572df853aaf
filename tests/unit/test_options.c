/* Unit tests for src/common/options.c, the one mount option splitter of lockfs -o
 * and lockfsctl check -o: libfuse's rules (a comma ends an item, "\," and
 * "\\" inside one, "\NNN" octal, a backslash before anything else stands for
 * that character, empty items dropped), and lockfs_options_append() writes
 * what the splitter gives back whole, for every byte. */
#include <lockfs/options.h>
#include <string.h>

/* TEXT split is exactly the NULL-terminated list WANT. */
static void expect_split(const char *text, const char *const *want)
{
	g_autoptr(GPtrArray) got = g_ptr_array_new_with_free_func(g_free);
	lockfs_options_split(text, got);
	guint n = 0;
	while (want[n])
		n++;
	g_test_message("split '%s'", text);
	g_assert_cmpuint(got->len, ==, n);
	for (guint i = 0; i < n; i++)
		g_assert_cmpstr(got->pdata[i], ==, want[i]);
}

#define SPLIT(text, ...) expect_split(text, (const char *const[]){ __VA_ARGS__, NULL })
#define SPLIT_NONE(text) expect_split(text, (const char *const[]){ NULL })

static void test_split_rules(void)
{
	SPLIT_NONE("");
	SPLIT_NONE(",,,");
	SPLIT("ttl=30s", "ttl=30s");
	SPLIT("ttl=30s,allow_other", "ttl=30s", "allow_other");
	SPLIT(",a,,b,", "a", "b");
	/* An LDAP DN inside a value. */
	SPLIT("ldap_base=ou=locks\\,dc=example\\,dc=com,ttl=5s",
	      "ldap_base=ou=locks,dc=example,dc=com", "ttl=5s");
	SPLIT("host=h\\,comma\\\\slash", "host=h,comma\\slash");
	/* "\\," is a backslash, then the comma ends the item. */
	SPLIT("a\\\\,b", "a\\", "b");
	/* Octal, as fstab(5) writes a space; the first digit is 0-3. */
	SPLIT("x=a\\054b", "x=a,b");
	SPLIT("notify=echo\\040hi", "notify=echo hi");
	SPLIT("x=\\101\\177", "x=A\177");
	SPLIT("x=\\400", "x=400");
	SPLIT("x=\\08", "x=08");
	/* Any other character after a backslash stands for itself. */
	SPLIT("x=\\a\\-b", "x=a-b");
	/* A backslash at the very end stays. */
	SPLIT("x=a\\", "x=a\\");
	/* The splitter never reads an item as a command-line option. */
	SPLIT("-f,-o,--config", "-f", "-o", "--config");
}

static void test_split_appends(void)
{
	g_autoptr(GPtrArray) got = g_ptr_array_new_with_free_func(g_free);
	lockfs_options_split("a,b", got);
	lockfs_options_split("", got);
	lockfs_options_split("c", got);
	g_assert_cmpuint(got->len, ==, 3);
	g_assert_cmpstr(got->pdata[0], ==, "a");
	g_assert_cmpstr(got->pdata[2], ==, "c");
}

/* ITEMS appended one by one, then split: the same items. */
static void expect_round_trip(const char *const *items, guint n)
{
	g_autoptr(GString) list = g_string_new(NULL);
	for (guint i = 0; i < n; i++)
		lockfs_options_append(list, items[i]);
	/* C escapes: the list holds control characters. */
	g_autofree char *shown = g_strescape(list->str, NULL);
	g_test_message("list (C-escaped) \"%s\"", shown);
	g_autoptr(GPtrArray) got = g_ptr_array_new_with_free_func(g_free);
	lockfs_options_split(list->str, got);
	g_assert_cmpuint(got->len, ==, n);
	for (guint i = 0; i < n; i++)
		g_assert_cmpstr(got->pdata[i], ==, items[i]);
}

static void test_append_round_trip(void)
{
	static const char *const items[] = {
		"fsname=lockfs", "host=a,b", "x=\\", "x=\\\\,", "x=\\054", "x=a\\", ",", "\\",
	};
	expect_round_trip(items, G_N_ELEMENTS(items));

	g_autoptr(GString) list = g_string_new("default_permissions");
	lockfs_options_append(list, "host=a,b");
	g_assert_cmpstr(list->str, ==, "default_permissions,host=a\\,b");

	/* Every byte but NUL, in one item and one item per byte. */
	char all[256];
	for (int b = 1; b < 256; b++)
		all[b - 1] = (char)b;
	all[255] = '\0';
	const char *one[] = { all };
	expect_round_trip(one, 1);
	char bytes[255][2];
	const char *each[255];
	for (int b = 1; b < 256; b++) {
		bytes[b - 1][0] = (char)b;
		bytes[b - 1][1] = '\0';
		each[b - 1] = bytes[b - 1];
	}
	expect_round_trip(each, 255);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/options/split-rules", test_split_rules);
	g_test_add_func("/options/split-appends", test_split_appends);
	g_test_add_func("/options/append-round-trip", test_append_round_trip);
	return g_test_run();
}
