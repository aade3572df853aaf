/* lockfsctl status [--json] [MOUNT...]: every lock of the mounts, one a line. */
#include "ctl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const columns[] = { "LOCK", "STATE", "FENCE",     "HOLDER",
	                               "USER", "AGE",   "HEARTBEAT", "COMMAND" };
#define NCOL G_N_ELEMENTS(columns)

static void add_row(GPtrArray *rows, const ctl_lock *l)
{
	char **r = g_new0(char *, NCOL + 1);
	g_autofree char *hb = ctl_format_age(l->heartbeat_age_s);
	r[0] = ctl_escape(l->path);
	r[1] = ctl_escape(l->state ? l->state : "?");
	r[2] = ctl_escape(l->fence ? l->fence : "-");
	g_autofree char *host = ctl_escape(l->host ? l->host : "?");
	r[3] = g_strdup_printf("%s:%" G_GINT64_FORMAT, host, l->pid);
	r[4] = ctl_escape(l->user ? l->user : "?");
	r[5] = ctl_format_age(l->age_s);
	r[6] = l->heartbeat_age_s < 0 ? g_strdup("?") : g_strdup_printf("%s ago", hb);
	r[7] = ctl_escape_text(l->command);
	g_ptr_array_add(rows, r);
}

static void print_table(GPtrArray *rows)
{
	size_t width[NCOL];
	for (size_t c = 0; c < NCOL; c++)
		width[c] = strlen(columns[c]);
	for (guint i = 0; i < rows->len; i++) {
		char **r = rows->pdata[i];
		for (size_t c = 0; c < NCOL; c++)
			width[c] = MAX(width[c], (size_t)g_utf8_strlen(r[c], -1));
	}
	for (guint i = 0; i <= rows->len; i++) {
		const char *const *r = i ? (const char *const *)rows->pdata[i - 1] : columns;
		g_autoptr(GString) line = g_string_new(NULL);
		for (size_t c = 0; c < NCOL; c++) {
			g_string_append(line, r[c]);
			if (c + 1 < NCOL)
				for (size_t n = (size_t)g_utf8_strlen(r[c], -1); n < width[c] + 2;
				     n++)
					g_string_append_c(line, ' ');
		}
		while (line->len && line->str[line->len - 1] == ' ')
			g_string_truncate(line, line->len - 1);
		printf("%s\n", line->str);
	}
}

static void json_int(GString *out, const char *name, int64_t v)
{
	if (v < 0)
		g_string_append_printf(out, ",\"%s\":null", name);
	else
		g_string_append_printf(out, ",\"%s\":%" G_GINT64_FORMAT, name, v);
}

static void json_str(GString *out, const char *name, const char *v)
{
	g_string_append_printf(out, ",\"%s\":", name);
	ctl_json_string(out, v);
}

static void json_lock(GString *out, const ctl_lock *l)
{
	g_string_append(out, "{\"mount\":");
	ctl_json_string(out, l->mount);
	json_str(out, "lock", l->path);
	json_str(out, "key", l->key);
	json_str(out, "state", l->state);
	/* A string: fences may exceed what a JSON number holds exactly (2^53). */
	json_str(out, "fence", l->fence);
	json_str(out, "host", l->host);
	json_int(out, "pid", l->pid);
	json_int(out, "uid", l->uid);
	json_int(out, "gid", l->gid);
	json_str(out, "user", l->user);
	json_str(out, "command", l->command);
	json_str(out, "acquired", l->acquired);
	json_str(out, "heartbeat", l->heartbeat);
	json_int(out, "age_s", l->age_s);
	json_int(out, "heartbeat_age_s", l->heartbeat_age_s);
	json_int(out, "lease_left_ms", l->lease_left_ms);
	json_str(out, "backend", l->backend);
	g_string_append_c(out, '}');
}

static void usage(void)
{
	printf("usage: lockfsctl status [--json] [MOUNT...]\n"
	       "Lists every lock of MOUNT (default: every lockfs mount in /proc/self/mounts):\n"
	       "name, state (held, stale, lost), fence, holder (host:pid), user, age, last\n"
	       "heartbeat and command.  --json prints one JSON object instead.\n");
}

/* The locks of every mount of MOUNTS into LOCKS, each mount read into SHOWN;
 * ALL: MOUNTS is every lockfs mount, not the user's list.  The exit code. */
static int read_mounts(GPtrArray *mounts, bool all, GPtrArray *shown, GPtrArray *locks)
{
	int rc = CTL_EXIT_OK;
	for (guint m = 0; m < mounts->len; m++) {
		const char *mount = mounts->pdata[m];
		if (!all && !ctl_is_lockfs_mount(mount)) {
			ctl_err("%s is not a lockfs mount (no .lockfs/status there); give a mount "
			        "point, or no argument for every mount",
			        mount);
			rc = CTL_EXIT_ERROR;
			continue;
		}
		int err = 0;
		GPtrArray *found = ctl_read_all(mount, &err);
		if (!found) {
			ctl_err("cannot read %s/.lockfs/status: %s; %s", mount, g_strerror(err),
			        err == EACCES ? "run as the mount's owner, or mount it with "
			                        "allow_other"
			                      : "check that its lockfs process is running");
			rc = CTL_EXIT_ERROR;
			continue;
		}
		g_ptr_array_add(shown, g_strdup(mount));
		g_ptr_array_extend_and_steal(locks, found);
	}
	return rc;
}

static void print_json(GPtrArray *shown, GPtrArray *locks)
{
	g_autoptr(GString) out = g_string_new("{\"mounts\":[");
	for (guint i = 0; i < shown->len; i++) {
		if (i)
			g_string_append_c(out, ',');
		ctl_json_string(out, shown->pdata[i]);
	}
	g_string_append(out, "],\"locks\":[");
	for (guint i = 0; i < locks->len; i++) {
		g_string_append(out, i ? ",\n" : "\n");
		json_lock(out, locks->pdata[i]);
	}
	g_string_append(out, "]}");
	printf("%s\n", out->str);
}

/* LOCKS as JSON, a table, or a line saying there are none. */
static void print_status(bool json, bool all, GPtrArray *shown, GPtrArray *locks)
{
	if (json) {
		print_json(shown, locks);
	} else if (locks->len) {
		g_autoptr(GPtrArray) rows =
		        g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
		for (guint i = 0; i < locks->len; i++)
			add_row(rows, locks->pdata[i]);
		print_table(rows);
	} else if (shown->len) {
		g_autoptr(GString) list = g_string_new(NULL);
		for (guint i = 0; i < shown->len; i++)
			g_string_append_printf(list, "%s%s", i ? ", " : "",
			                       (char *)shown->pdata[i]);
		printf("no locks held in %s\n", list->str);
	} else if (all) {
		ctl_err("no lockfs mounts (none of type fuse.lockfs in /proc/self/mounts)");
	}
}

int ctl_status(int argc, char **argv)
{
	bool json = false;
	g_autoptr(GPtrArray) mounts = g_ptr_array_new_with_free_func(g_free);
	bool options = true;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (options && !strcmp(a, "--")) {
			options = false;
		} else if (options && !strcmp(a, "--json")) {
			json = true;
		} else if (options && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
			usage();
			return CTL_EXIT_OK;
		} else if (options && a[0] == '-' && a[1]) {
			return ctl_usage_error("unknown option '%s'", a);
		} else {
			/* Absolute, so that every lock's path can be used from anywhere. */
			char *real = realpath(a, NULL);
			g_ptr_array_add(mounts, real ? g_strdup(real) : g_strdup(a));
			free(real);
		}
	}
	bool all = mounts->len == 0;
	if (all) {
		g_ptr_array_unref(mounts);
		mounts = ctl_list_mounts();
	}

	g_autoptr(GPtrArray) shown = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) locks = g_ptr_array_new_with_free_func((GDestroyNotify)ctl_lock_free);
	int rc = read_mounts(mounts, all, shown, locks);
	print_status(json, all, shown, locks);
	if (fflush(stdout) != 0)
		rc = CTL_EXIT_ERROR;
	return rc;
}
