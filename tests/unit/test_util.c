/* Helpers the unit tests share: see test_util.h. */
#include "test_util.h"

#include <string.h>
#include <sys/wait.h>

int run_command(const char *const *argv, GSpawnFlags flags, char **out, char **err)
{
	int status = -1;
	GError *e = NULL;
	if (!g_spawn_sync(NULL, (char **)argv, NULL, flags, NULL, NULL, out, err, &status, &e)) {
		*err = g_strdup(e->message);
		g_error_free(e);
		return -1;
	}
	g_strchomp(*err);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

void parse_vars(const char *out, GHashTable *vars)
{
	g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
	for (char **l = lines; *l; l++) {
		char *eq = strchr(*l, '=');
		if (eq)
			g_hash_table_replace(vars, g_strndup(*l, (gsize)(eq - *l)),
			                     g_strdup(eq + 1));
	}
}

int run_script_output(const char *script, const char *const *args, char **out, char **err)
{
	GPtrArray *argv = g_ptr_array_new();
	g_ptr_array_add(argv, (char *)"bash");
	g_ptr_array_add(argv, (char *)script);
	for (const char *const *a = args; *a; a++)
		g_ptr_array_add(argv, (char *)*a);
	g_ptr_array_add(argv, NULL);
	int rc = run_command((const char *const *)argv->pdata, G_SPAWN_SEARCH_PATH, out, err);
	g_ptr_array_free(argv, TRUE);
	return rc;
}

int run_script(const char *script, const char *const *args, GHashTable *vars, char **err)
{
	g_autofree char *out = NULL;
	int rc = run_script_output(script, args, &out, err);
	if (rc != -1 && vars)
		parse_vars(out, vars);
	return rc;
}

bool has_key(GPtrArray *keys, const char *key)
{
	for (guint i = 0; i < keys->len; i++)
		if (strcmp(keys->pdata[i], key) == 0)
			return true;
	return false;
}

void give(lockfs_backend *be, lockfs_lease *lease)
{
	g_assert_cmpint(be->release(be, lease), ==, 0);
	be->lease_free(be, lease);
}
