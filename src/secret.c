/* Secrets kept in files: one check of ownership and content for every backend
 * that reads a password from a file. */
#include "secret.h"

#include <errno.h>
#include <glib.h>
#include <lockfs/config.h>
#include <string.h>
#include <sys/stat.h>

char *lockfs_secret_read(const char *path, int *code, char **why)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		*code = LOCKFS_CONFIG_ERROR_IO;
		*why = g_strdup_printf("cannot read %s: %s", path, g_strerror(errno));
		return NULL;
	}
	*code = LOCKFS_CONFIG_ERROR_VALUE;
	if (!S_ISREG(st.st_mode)) {
		*why = g_strdup_printf("%s is not a regular file", path);
		return NULL;
	}
	if (st.st_mode & (S_IRGRP | S_IROTH)) {
		*why = g_strdup_printf(
		        "%s is readable by group or others; make it private: chmod 600 %s", path,
		        path);
		return NULL;
	}
	char *text = NULL;
	GError *e = NULL;
	if (!g_file_get_contents(path, &text, NULL, &e)) {
		*code = LOCKFS_CONFIG_ERROR_IO;
		*why = g_strdup(e->message);
		g_error_free(e);
		return NULL;
	}
	/* One line: a trailing newline is not part of the password. */
	size_t len = strlen(text);
	while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		text[--len] = '\0';
	if (!len) {
		*why = g_strdup_printf("%s is empty", path);
		g_free(text);
		return NULL;
	}
	return text;
}
