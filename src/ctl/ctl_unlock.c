/* lockfsctl unlock [--yes] PATH: show who holds a lock, then break it after
 * confirmation.  Without --yes it wants a terminal on stdin and refuses
 * otherwise rather than guess (e.g. under cron).  Exit 0 broken, 1 refused,
 * declined or not held, 2 error. */
#include "ctl.h"
#include "view_format.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static void usage(void)
{
	printf("usage: lockfsctl unlock [--yes] PATH\n"
	       "Shows who holds the lock PATH (holder, age, the holder's start time, clock\n"
	       "skew), asks \"break it? [y/N]\", then breaks it.  Without --yes stdin must be\n"
	       "a terminal.  Exit status: 0 broken, 1 refused, declined or not held, 2 error.\n");
}

/* What this host knows of the holder process, for the "started" line. */
static char *started_text(int64_t pid, int64_t acquired_s, bool here, const char *host)
{
	if (!here)
		return g_strdup_printf("unknown: the holder runs on host %s", host);
	int64_t start;
	g_autofree char *comm = NULL;
	if (!ctl_proc_info(pid, &start, &comm))
		return g_strdup_printf("pid %" G_GINT64_FORMAT " is not running: its holder is "
		                       "gone",
		                       pid);
	g_autofree char *iso = start >= 0 ? ctl_iso(start) : g_strdup("?");
	g_autofree char *name = ctl_escape_text(comm);
	/* A pid that started after the lock was taken was reused: not the holder. */
	if (start >= 0 && acquired_s >= 0 && start > acquired_s + 2)
		return g_strdup_printf("pid %" G_GINT64_FORMAT " is another process now (%s, "
		                       "started %s, after the lock was taken): its holder is gone",
		                       pid, name, iso);
	return g_strdup_printf("%s (pid %" G_GINT64_FORMAT ", %s, still running)", iso, pid, name);
}

static void show_lockfs(const ctl_lock *l)
{
	int64_t now = g_get_real_time() / G_USEC_PER_SEC;
	g_autofree char *host = ctl_escape(l->host ? l->host : "?");
	g_autofree char *user = ctl_escape(l->user ? l->user : "?");
	g_autofree char *cmd = ctl_escape_text(l->command);
	g_autofree char *path = ctl_escape(l->path);
	/* The daemon's own words, but shown the same way as everything read. */
	g_autofree char *acquired = ctl_escape(l->acquired ? l->acquired : "?");
	g_autofree char *heartbeat = ctl_escape(l->heartbeat ? l->heartbeat : "?");
	g_autofree char *backend = ctl_escape(l->backend ? l->backend : "?");
	g_autofree char *fence = ctl_escape(l->fence ? l->fence : "?");
	g_autofree char *state = ctl_escape(l->state ? l->state : "?");
	g_autofree char *age = ctl_format_age(l->age_s);
	g_autofree char *hb = ctl_format_age(l->heartbeat_age_s);
	bool local = l->backend && !strcmp(l->backend, "local");
	/* The local backend lives on this host, and so does a lock held through
	 * this mount whatever its host identity; others' holders may be here too. */
	bool here = local || l->mine || (l->host && !strcmp(l->host, g_get_host_name()));
	g_autofree char *started = started_text(l->pid, l->acquired_s, here, host);

	printf("lock:       %s\n", path);
	printf("holder:     %s:%" G_GINT64_FORMAT " (user %s, uid %" G_GINT64_FORMAT ")\n", host,
	       l->pid, user, l->uid);
	printf("command:    %s\n", cmd);
	printf("acquired:   %s, %s ago (by the %s backend's clock)\n", acquired, age, backend);
	printf("started:    %s\n", started);
	printf("heartbeat:  %s, %s ago\n", heartbeat, hb);
	printf("fence:      %s\n", fence);
	printf("state:      %s\n", state);
	int64_t ahead = MAX(l->acquired_s, l->heartbeat_s) - now;
	if (local) {
		printf("clock skew: none (local backend)\n");
	} else if (ahead > CTL_SKEW_LIMIT_S) {
		g_autofree char *by = ctl_format_age(ahead);
		printf("clock skew: the holder's times are %s ahead of this host's clock\n", by);
	} else {
		printf("clock skew: none seen (the holder's times are not ahead of this host's "
		       "clock)\n");
	}
}

/* A dot-lock in a plain directory: the pid its holder wrote, its owner, and
 * its mtime (the last touch: dot-lock tools heartbeat that way). */
static void show_plain(const char *path, const struct stat *st)
{
	int64_t now = g_get_real_time() / G_USEC_PER_SEC;
	int err;
	g_autofree char *text = S_ISREG(st->st_mode) ? ctl_read_text(path, &err) : NULL;
	gint64 pid = -1;
	if (text) {
		g_strstrip(text);
		if (!g_ascii_string_to_signed(text, 10, 1, G_MAXINT32, &pid, NULL))
			pid = -1;
	}
	struct passwd *pw = getpwuid(st->st_uid);
	g_autofree char *epath = ctl_escape(path);
	g_autofree char *mtime = ctl_iso(st->st_mtime);
	g_autofree char *age = ctl_format_age(MAX(now - (int64_t)st->st_mtime, 0));
	printf("lock:       %s (a plain dot-lock, not in a lockfs mount)\n", epath);
	printf("owner:      %s (uid %u)\n", pw ? pw->pw_name : "?", (unsigned)st->st_uid);
	if (pid > 0) {
		g_autofree char *started = started_text(pid, -1, true, NULL);
		printf("pid:        %" G_GINT64_FORMAT " (from its content)\n", (int64_t)pid);
		printf("started:    %s\n", started);
	} else {
		printf("pid:        none in its content\n");
	}
	printf("modified:   %s, %s ago\n", mtime, age);
}

static int break_error(const char *path, const char *dir, const char *owner, int e)
{
	if (e == EPERM || e == EACCES)
		ctl_err("cannot break %s: %s; only root, its holder's user (%s) or a user who may "
		        "write to %s (without the sticky bit) may break it: run as one of them",
		        path, g_strerror(e), owner, dir);
	else if (e == ENOTEMPTY)
		ctl_err("cannot break %s: it is a directory lock with files in it; remove them "
		        "first",
		        path);
	else
		ctl_err("cannot break %s: %s; check the lockfs log of its mount", path,
		        g_strerror(e));
	return CTL_EXIT_ERROR;
}

/* Remove the name the way a legacy tool would: a directory lock by rmdir. */
static int remove_name(const char *path, bool dir)
{
	return (dir ? rmdir(path) : unlink(path)) == 0 ? 0 : errno;
}

/* Show who holds T (PATH and MOUNT escaped), its lstat in *ST and, in a
 * mount, its record in *L: -1 when shown, else the exit code. */
static int show_holder(const ctl_target *t, const char *path, const char *mount, struct stat *st,
                       ctl_lock **l)
{
	if (lstat(t->path, st) != 0) {
		int e = errno;
		if (e == ENOENT) {
			ctl_err("%s is not held; nothing to break", path);
			return CTL_EXIT_FAIL;
		}
		ctl_err("cannot look at %s: %s; check the path and its permissions", path,
		        g_strerror(e));
		return CTL_EXIT_ERROR;
	}
	if (!t->mount) {
		show_plain(t->path, st);
		return -1;
	}
	int e;
	*l = ctl_read_lock(t->mount, t->key, &e);
	if (!*l && e == ENOENT) {
		ctl_err("%s is not a held lock (%s/.lockfs has no record of it); if it "
		        "is a leftover file, remove it with rm",
		        path, mount);
		return CTL_EXIT_FAIL;
	}
	if (!*l) {
		ctl_err("cannot read the holder of %s from %s/.lockfs: %s; check that the "
		        "mount's lockfs process is running",
		        path, mount, g_strerror(e));
		return CTL_EXIT_ERROR;
	}
	show_lockfs(*l);
	return -1;
}

/* Break only what was shown (L, ST; FENCE escaped): the lock may have
 * changed hands while the user read it.  -1 when it did not, with its
 * lstat now in *NOW, else the exit code. */
static int check_unchanged(const ctl_target *t, const char *path, const ctl_lock *l,
                           const struct stat *st, const char *fence, struct stat *now)
{
	g_autoptr(ctl_lock) again = NULL;
	g_autofree char *new_fence = NULL;
	int e = 0;
	if (lstat(t->path, now) != 0 ||
	    (t->mount && !(again = ctl_read_lock(t->mount, t->key, &e)))) {
		ctl_err("%s was released before it could be broken; nothing to do", path);
		return CTL_EXIT_FAIL;
	}
	if (t->mount ? g_strcmp0(again->fence, l->fence) != 0 : now->st_ino != st->st_ino) {
		new_fence = ctl_escape(t->mount && again->fence ? again->fence : "-");
		ctl_err("%s changed hands while you decided (fence %s, now %s); nothing "
		        "was broken: run lockfsctl unlock again to see the new holder",
		        path, t->mount ? fence : "-", new_fence);
		return CTL_EXIT_FAIL;
	}
	return -1;
}

/* Break T, still the lock shown: through its mount, or by removing the
 * plain dot-lock.  -1 when broken, else the exit code. */
static int break_lock(const ctl_target *t, const char *path, const ctl_lock *l,
                      const struct stat *st, const char *fence, const struct stat *now)
{
	int e;
	bool dir = S_ISDIR(now->st_mode);
	if (t->mount) {
		/* The daemon judges the request as it would an unlink by us, logs
		 * and notifies it as a break whoever asks, and refuses it (ESTALE)
		 * if the fence is no longer the one shown. */
		e = ctl_request_break(t->mount, t->key, l->fence);
		if (e == ESTALE) {
			ctl_err("%s changed hands while you decided (fence %s is gone); nothing "
			        "was broken: run lockfsctl unlock again to see the new holder",
			        path, fence);
			return CTL_EXIT_FAIL;
		}
	} else {
		e = remove_name(t->path, dir);
	}
	if (e == ENOENT) {
		ctl_err("%s was released before it could be broken; nothing to do", path);
		return CTL_EXIT_FAIL;
	}
	if (e) {
		g_autofree char *owner = NULL;
		if (l && l->user) {
			owner = ctl_escape(l->user);
		} else {
			struct passwd *pw = getpwuid(st->st_uid);
			owner = g_strdup(pw ? pw->pw_name : "?");
		}
		g_autofree char *where = ctl_escape(t->dir);
		return break_error(path, where, owner, e);
	}
	return -1;
}

/* Show, confirm, check again, break, say so. */
static int unlock(const ctl_target *t, bool yes)
{
	g_autoptr(ctl_lock) l = NULL;
	struct stat st, now;
	/* Lock names, like holders, may come from another host. */
	g_autofree char *path = ctl_escape(t->path);
	g_autofree char *mount = ctl_escape(t->mount);
	int rc = show_holder(t, path, mount, &st, &l);
	if (rc >= 0)
		return rc;
	g_autofree char *fence = t->mount ? ctl_escape(l->fence ? l->fence : "?") : NULL;
	fflush(stdout);

	if (!yes && !ctl_confirm("break it?")) {
		printf("not broken\n");
		return CTL_EXIT_FAIL;
	}
	rc = check_unchanged(t, path, l, &st, fence, &now);
	if (rc < 0)
		rc = break_lock(t, path, l, &st, fence, &now);
	if (rc >= 0)
		return rc;
	if (t->mount) {
		g_autofree char *host = ctl_escape(l->host ? l->host : "?");
		printf("broke %s (held by %s:%" G_GINT64_FORMAT ", fence %s); lockfs logged the "
		       "break and sent its notification\n",
		       path, host, l->pid, fence);
	} else {
		printf("broke %s (removed the plain dot-lock)\n", path);
	}
	return CTL_EXIT_OK;
}

int ctl_unlock(int argc, char **argv)
{
	bool yes = false, options = true;
	const char *arg = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (options && !strcmp(a, "--")) {
			options = false;
		} else if (options && (!strcmp(a, "--yes") || !strcmp(a, "-y"))) {
			yes = true;
		} else if (options && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
			usage();
			return CTL_EXIT_OK;
		} else if (options && a[0] == '-' && a[1]) {
			return ctl_usage_error("unknown option '%s'", a);
		} else if (arg) {
			return ctl_usage_error("give one lock to break (got '%s' and '%s')", arg,
			                       a);
		} else {
			arg = a;
		}
	}
	if (!arg)
		return ctl_usage_error("give the lock to break: lockfsctl unlock [--yes] PATH");

	if (!yes && !isatty(STDIN_FILENO)) {
		ctl_err("%s: stdin is not a terminal, so nothing was broken; to break it "
		        "unattended, use --yes",
		        arg);
		return CTL_EXIT_FAIL;
	}

	g_autoptr(GError) error = NULL;
	ctl_target t;
	if (!ctl_target_resolve(arg, &t, &error)) {
		ctl_err("%s", error->message);
		return CTL_EXIT_ERROR;
	}
	int rc = unlock(&t, yes);
	ctl_target_clear(&t);
	return rc;
}
