/* libFuzzer target for lockfs's configuration: a configuration file
 * (lockfs_config_load_file(): the scanner, GKeyFile, every [lockfs] value's
 * parser), mount option lists (lockfs_options_split(), libfuse's splitter,
 * and lockfs_config_set_option() on each item), then the rules between keys
 * (lockfs_config_finish()) and every backend key through every getter, as
 * the backends read them.  Option lists split, escaped and split again give
 * the same items.
 *
 * The input is a file, then optionally a line "%%" and up to 3 mount option
 * lists, one a line ("-o" arguments, as fstab(5) and mount(8) hand them
 * over), of which the first 6 items each are set.
 * The file is read through a memfd, as any path would be.  config.c and
 * options.c are compiled again with the fuzzer's coverage.
 *
 *   build-fuzz/tests/fuzz/fuzz_config -dict=tests/fuzz/config.dict tests/fuzz/corpus/config */
#include <errno.h>
#include <glib.h>
#include <lockfs/backend.h>
#include <lockfs/backends.h>
#include <lockfs/config.h>
#include <lockfs/options.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static int file_fd = -1;
static char file_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	lockfs_backends_register_config();
	file_fd = memfd_create("lockfs.conf", MFD_CLOEXEC);
	if (file_fd < 0)
		abort();
	snprintf(file_path, sizeof(file_path), "/proc/self/fd/%d", file_fd);
	/* Configuration errors are answers here, not failures. */
	g_log_set_always_fatal(G_LOG_FATAL_MASK);
	return 0;
}

static void load_file(lockfs_config *cfg, const char *text, size_t len)
{
	if (ftruncate(file_fd, 0) != 0 || pwrite(file_fd, text, len, 0) != (ssize_t)len)
		abort();
	GError *err = NULL;
	if (!lockfs_config_load_file(cfg, file_path, &err))
		g_clear_error(&err);
}

/* ITEMS escaped into one list and split again are ITEMS. */
static void check_split(GPtrArray *items)
{
	g_autoptr(GString) list = g_string_new(NULL);
	for (guint i = 0; i < items->len; i++)
		lockfs_options_append(list, items->pdata[i]);
	g_autoptr(GPtrArray) again = g_ptr_array_new_with_free_func(g_free);
	lockfs_options_split(list->str, again);
	if (again->len != items->len)
		abort();
	for (guint i = 0; i < items->len; i++)
		if (strcmp(again->pdata[i], items->pdata[i]) != 0)
			abort();
}

static void set_options(lockfs_config *cfg, const char *list)
{
	g_autoptr(GPtrArray) items = g_ptr_array_new_with_free_func(g_free);
	lockfs_options_split(list, items);
	check_split(items);
	/* At most 6 items a list: an unknown key's hint (edit distances to
	 * every known key) costs the fuzzer a few ms each. */
	for (guint i = 0; i < items->len && i < 6; i++) {
		bool for_fuse;
		GError *err = NULL;
		if (!lockfs_config_set_option(cfg, items->pdata[i], &for_fuse, &err))
			g_clear_error(&err);
	}
}

/* Every key of every backend through every getter. */
static void read_backend_keys(const lockfs_config *cfg)
{
	static const char *const names[] = { "local", "ldap", "tinystore", "etcd" };
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		const lockfs_backend_type *t = lockfs_backend_type_find(names[i]);
		for (size_t k = 0; t && t->group && t->keys && t->keys[k]; k++) {
			const char *g = t->group, *key = t->keys[k];
			GError *err = NULL;
			char *s = NULL;
			bool b;
			int64_t v;
			if (lockfs_config_get_string(cfg, g, key, "default", &s, &err))
				g_free(s);
			g_clear_error(&err);
			if (!lockfs_config_get_bool(cfg, g, key, false, &b, &err))
				g_clear_error(&err);
			if (!lockfs_config_get_duration(cfg, g, key, 1000, &v, &err))
				g_clear_error(&err);
			if (!lockfs_config_get_int(cfg, g, key, 1, -5, 1 << 20, &v, &err))
				g_clear_error(&err);
			(void)lockfs_config_origin(cfg, g, key);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *sep = g_strstr_len(text, (gssize)size, "\n%%\n");
	size_t file_len = sep ? (size_t)(sep - text) + 1 : size;
	lockfs_config *cfg = lockfs_config_new();
	load_file(cfg, text, file_len);
	if (sep) {
		g_autofree char *rest = g_strndup(sep + 4, size - file_len - 3);
		g_auto(GStrv) lists = g_strsplit(rest, "\n", 3);
		for (char **l = lists; *l; l++)
			set_options(cfg, *l);
	}
	GError *err = NULL;
	if (lockfs_config_finish(cfg, &err)) {
		if (!lockfs_config_settings(cfg))
			abort();
		read_backend_keys(cfg);
	}
	g_clear_error(&err);
	int64_t ms;
	g_autofree char *whole = g_strndup(text, MIN(size, 64));
	(void)lockfs_parse_duration(whole, &ms);
	lockfs_config_free(cfg);
	return 0;
}
