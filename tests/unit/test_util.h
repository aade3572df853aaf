/* Helpers the unit tests share (test_util.c): the skip-with-reason macro,
 * the runner of the tests/lib scripts that start and stop servers, and small steps
 * of the backend tests. */
#ifndef LOCKFS_TEST_UTIL_H
#define LOCKFS_TEST_UTIL_H

#include <glib.h>
#include <lockfs/backend.h>
#include <stdbool.h>

/* Skip the current test, saying REASON, when REASON is not NULL. */
#define NEED(reason)                         \
	do {                                 \
		if (reason) {                \
			g_test_skip(reason); \
			return;              \
		}                            \
	} while (0)

/* Run ARGV (NULL-terminated) with FLAGS: its stdout in *OUT, its stderr
 * (trailing blanks cut) in *ERR.  Exit status, 128 when a signal ended it,
 * or -1 when it could not run (then *ERR says why, *OUT is NULL). */
int run_command(const char *const *argv, GSpawnFlags flags, char **out, char **err);

/* The KEY=VALUE lines of OUT into VARS (a key seen again: the later value). */
void parse_vars(const char *out, GHashTable *vars);

/* Run `bash SCRIPT ARGS...` (ARGS NULL-terminated) as run_command does, with
 * PATH searched. */
int run_script_output(const char *script, const char *const *args, char **out, char **err);

/* run_script_output, and the script's KEY=VALUE lines into VARS (when not
 * NULL). */
int run_script(const char *script, const char *const *args, GHashTable *vars, char **err);

/* Whether KEYS (strings) holds KEY. */
bool has_key(GPtrArray *keys, const char *key);

/* Release LEASE on BE (asserting success) and free it. */
void give(lockfs_backend *be, lockfs_lease *lease);

#endif
