/* Secrets kept in files: one check of ownership and content for every backend
 * that reads a password from a file. */
#include <lockfs/backend_support.h>

#include <errno.h>
#include <glib.h>
#include <lockfs/config.h>
#include <string.h>
#include <sys/stat.h>

#define FAIL(code, ...) lockfs_config_key_error(cfg, group, key, error, code, __VA_ARGS__)

char *lockfs_secret_read(const lockfs_config *cfg, const char *group, const char *key,
                         const char *path, GError **error)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		FAIL(LOCKFS_CONFIG_ERROR_IO, "cannot read %s: %s", path, g_strerror(errno));
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		FAIL(LOCKFS_CONFIG_ERROR_VALUE, "%s is not a regular file", path);
		return NULL;
	}
	if (st.st_mode & (S_IRGRP | S_IROTH)) {
		FAIL(LOCKFS_CONFIG_ERROR_VALUE,
		     "%s is readable by group or others; make it private: chmod 600 %s", path,
		     path);
		return NULL;
	}
	char *text = NULL;
	GError *e = NULL;
	if (!g_file_get_contents(path, &text, NULL, &e)) {
		FAIL(LOCKFS_CONFIG_ERROR_IO, "%s", e->message);
		g_error_free(e);
		return NULL;
	}
	/* One line: a trailing newline is not part of the password. */
	size_t len = strlen(text);
	while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		text[--len] = '\0';
	if (!len) {
		FAIL(LOCKFS_CONFIG_ERROR_VALUE, "%s is empty", path);
		g_free(text);
		return NULL;
	}
	return text;
}
