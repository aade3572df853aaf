/* lockfsctl release --all [--yes] [--config FILE] [-o OPTIONS] MOUNT: free
 * at once every lock a mount holds, for an admin who knows none of their
 * holders runs.  Stopping lockfs releases nothing (its locks belong to
 * their holders and the next lockfs of the mount takes them back); this is
 * the way to let them go without waiting a ttl.
 *
 * A live mount breaks each lock held through it by .lockfs/break with its
 * fence, as unlock does (logged and notified as a break).  A mount point
 * with nothing mounted has only its record in state_dir (lockstate.h):
 * each recorded lease is taken back from the backend (resume, adopt) and
 * released there, and the record is rewritten without it, under the
 * record's flock, so that the next lockfs takes nothing back.  Confirmation
 * as unlock's.  Exit 0 all released, 1 declined, refused or partial, 2
 * error. */
#include "ctl.h"
#include "lockstate.h"
#include "log.h"

#include <errno.h>
#include <lockfs/backends.h>
#include <lockfs/config.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(void)
{
	printf("usage: lockfsctl release --all [--yes] [--config FILE] [-o OPTIONS] MOUNT\n"
	       "Frees every lock the lockfs mount MOUNT holds, at once: for when none of\n"
	       "their holders runs (a stopped lockfs keeps its locks until their leases run\n"
	       "out, and the next lockfs of MOUNT takes them back).  Shows them, asks\n"
	       "\"release N locks? [y/N]\"; without --yes stdin must be a terminal.\n"
	       "Mounted: each lock held through MOUNT is broken with its fence.  Not mounted:\n"
	       "the locks recorded in state_dir (from FILE and OPTIONS, as lockfs reads them)\n"
	       "are released at the backend and the record is emptied.\n"
	       "Exit status: 0 all released, 1 declined, refused or partly released,\n"
	       "2 error, 64 usage.\n");
}

typedef struct {
	guint released, gone, failed;
} tally;

static int finish(const tally *t)
{
	printf("released %u lock%s", t->released, t->released == 1 ? "" : "s");
	if (t->gone)
		printf(", %u already gone", t->gone);
	if (t->failed)
		printf(", %u not released (see above)", t->failed);
	printf("\n");
	return t->failed ? CTL_EXIT_FAIL : CTL_EXIT_OK;
}

static bool ask(guint n)
{
	g_autofree char *q = g_strdup_printf("release %u lock%s?", n, n == 1 ? "" : "s");
	return ctl_confirm(q);
}

/* ---------------------------------------------------------------- live mount */

static void show_live(const ctl_lock *l)
{
	g_autofree char *key = ctl_escape(l->key);
	g_autofree char *fence = ctl_escape(l->fence ? l->fence : "?");
	g_autofree char *host = ctl_escape(l->host ? l->host : "?");
	g_autofree char *user = ctl_escape(l->user ? l->user : "?");
	g_autofree char *state = ctl_escape(l->state ? l->state : "?");
	g_autofree char *age = ctl_format_age(l->age_s);
	printf("  %s  fence %s  held by %s:%" G_GINT64_FORMAT " (user %s) for %s, %s\n", key, fence,
	       host, l->pid, user, age, state);
}

/* Break L as unlock does, only while its fence is the one shown. */
static void break_live(const char *mount, const ctl_lock *l, tally *t)
{
	g_autofree char *key = ctl_escape(l->key);
	g_autofree char *fence = ctl_escape(l->fence ? l->fence : "?");
	int e = ctl_request_break(mount, l->key, l->fence);
	if (e == 0) {
		printf("released %s (fence %s)\n", key, fence);
		t->released++;
	} else if (e == ENOENT) {
		printf("%s: already gone (released meanwhile)\n", key);
		t->gone++;
	} else if (e == ESTALE) {
		ctl_err("%s changed hands since it was shown (fence %s is gone); left alone", key,
		        fence);
		t->failed++;
	} else {
		ctl_err("cannot release %s: %s; run as root or its holder's user, and see the "
		        "mount's lockfs log",
		        key, g_strerror(e));
		t->failed++;
	}
}

static int release_live(const char *mount, bool yes)
{
	g_autofree char *emount = ctl_escape(mount);
	int e;
	g_autoptr(GPtrArray) all = ctl_read_all(mount, &e);
	if (!all) {
		ctl_err("cannot read %s/.lockfs/status: %s; check that its lockfs process is "
		        "running",
		        emount, g_strerror(e));
		return CTL_EXIT_ERROR;
	}
	/* Only what this mount holds: another host's locks are its own. */
	g_autoptr(GPtrArray) mine = g_ptr_array_new();
	for (guint i = 0; i < all->len; i++)
		if (((ctl_lock *)all->pdata[i])->mine)
			g_ptr_array_add(mine, all->pdata[i]);
	guint others = all->len - mine->len;
	if (!mine->len) {
		printf("%s holds no lock; nothing to release", emount);
		if (others)
			printf(" (the %u held by other hosts are theirs)", others);
		printf("\n");
		return CTL_EXIT_OK;
	}
	printf("%s (mounted) holds %u lock%s:\n", emount, mine->len, mine->len == 1 ? "" : "s");
	for (guint i = 0; i < mine->len; i++)
		show_live(mine->pdata[i]);
	if (others)
		printf("(%u lock%s held by other hosts %s left alone)\n", others,
		       others == 1 ? "" : "s", others == 1 ? "is" : "are");
	fflush(stdout);
	if (!yes && !ask(mine->len)) {
		printf("nothing released\n");
		return CTL_EXIT_FAIL;
	}
	tally t = { 0 };
	for (guint i = 0; i < mine->len; i++)
		break_live(mount, mine->pdata[i], &t);
	return finish(&t);
}

/* ---------------------------------------------------------------- stopped mount */

static void show_rec(const lockfs_lockrec *r)
{
	const lockfs_holder *h = &r->holder;
	g_autofree char *key = ctl_escape(r->key);
	g_autofree char *fence = ctl_escape(r->fence);
	g_autofree char *host = ctl_escape(h->host ? h->host : "?");
	g_autofree char *user = ctl_escape(h->user ? h->user : "?");
	g_autofree char *since = ctl_iso(h->acquired_us / G_USEC_PER_SEC);
	printf("  %s  fence %s  held by %s:%" G_GINT64_FORMAT " (user %s) since %s\n", key, fence,
	       host, h->pid, user, since);
}

/* One recorded lock, adopted and released at BE; failed records the backend
 * may still hold go to KEEP, for the next try (or lockfs) to take back. */
static void release_rec(lockfs_backend *be, lockfs_lockrec *r, GPtrArray *keep, tally *t)
{
	g_autofree char *key = ctl_escape(r->key);
	g_autofree char *fence = ctl_escape(r->fence);
	lockfs_lease *lease = NULL;
	int e = be->adopt ? be->adopt(be, r->key, r->fence, r->token ? r->token : "", &r->holder,
	                              r->content, r->content_len, &lease)
	                  : -ENOTSUP;
	if (e == 0) {
		e = be->release(be, lease);
		be->lease_free(be, lease);
	}
	if (e == 0) {
		printf("released %s (fence %s)\n", key, fence);
		t->released++;
	} else if (e == -ESTALE || e == -ENOENT) {
		printf("%s: already gone (its lease ran out or it was broken)\n", key);
		t->gone++;
	} else if (e == -EIO) {
		ctl_err("cannot release %s: the %s backend did not answer; it stays recorded: run "
		        "lockfsctl release again once the backend answers",
		        key, be->name);
		g_ptr_array_add(keep, r);
		t->failed++;
	} else if (e == -ENOTSUP) {
		/* Nor could the next lockfs take it back: the record goes. */
		ctl_err("cannot release %s: the %s backend cannot take back a stopped lockfs's "
		        "lease; dropped from the record: it runs out with its lease (ttl)",
		        key, be->name);
		t->failed++;
	} else {
		ctl_err("cannot release %s: %s (not a lease the %s backend wrote); dropped from "
		        "the record: it runs out with its lease, if it has one",
		        key, g_strerror(-e), be->name);
		t->failed++;
	}
}

/* Every lock of FOUND released at BE (NULL: the local backend, whose locks
 * lived in the stopped lockfs and live on only in the record). */
static void release_recs(lockfs_backend *be, lockfs_lockstate_found *found, GPtrArray *keep,
                         tally *t)
{
	GPtrArray *locks = found->locks;
	int r = 0;
	if (be && found->session && be->resume)
		r = be->resume(be, found->session);
	for (guint i = 0; i < locks->len; i++) {
		lockfs_lockrec *rec = locks->pdata[i];
		g_autofree char *key = ctl_escape(rec->key);
		if (!be) {
			printf("released %s (fence %s)\n", key, rec->fence);
			t->released++;
		} else if (r == -ESTALE) {
			printf("%s: already gone (its session ran out)\n", key);
			t->gone++;
		} else if (r == -EIO) {
			ctl_err("cannot release %s: the %s backend did not answer; it stays "
			        "recorded: run lockfsctl release again once it answers",
			        key, be->name);
			g_ptr_array_add(keep, rec);
			t->failed++;
		} else if (r) {
			ctl_err("cannot release %s: the recorded session is not one the %s backend "
			        "wrote (%s); dropped from the record",
			        key, be->name, g_strerror(-r));
			t->failed++;
		} else {
			release_rec(be, rec, keep, t);
		}
	}
}

/* The backend the record's locks live in, as the configuration makes it;
 * NULL for the local backend (and on an error, *RC set). */
static lockfs_backend *open_backend(const lockfs_config *cfg, const char *mount, const char *file,
                                    const lockfs_lockstate_found *found, int *rc)
{
	const lockfs_settings *s = lockfs_config_settings(cfg);
	*rc = CTL_EXIT_ERROR;
	if (found->header[2] && strcmp(found->header[2], s->backend) != 0) {
		ctl_err("%s records locks of backend %s, not %s as configured: give the mount's "
		        "own configuration (--config FILE, -o backend=...)",
		        file, found->header[2], s->backend);
		return NULL;
	}
	*rc = CTL_EXIT_OK;
	if (!strcmp(s->backend, "local"))
		return NULL;
	g_autoptr(GError) err = NULL;
	/* What the backend says on its way reads like the rest of our lines. */
	lockfs_log_init(ctl_prog, true, "warning");
	lockfs_backend *be = lockfs_backend_new(cfg, mount, &err);
	if (!be) {
		ctl_err("backend %s: %s", s->backend, err->message);
		*rc = CTL_EXIT_ERROR;
		return NULL;
	}
	g_autofree char *server = be->identity ? be->identity(be) : g_strdup("");
	if (found->header[3] && strcmp(found->header[3], server) != 0) {
		ctl_err("%s records locks of server %s, not %s as configured: give the mount's "
		        "own configuration (--config FILE, -o ...)",
		        file, found->header[3], server);
		be->destroy(be);
		*rc = CTL_EXIT_ERROR;
		return NULL;
	}
	return be;
}

/* The record of MOUNT, opened and flock'ed (NULL, *RC set, on failure). */
static lockfs_lockstate *open_record(const char *dir, const char *mount,
                                     lockfs_lockstate_found *found, int *rc)
{
	g_autofree char *path = lockfs_lockstate_path(dir, mount);
	g_autofree char *emount = ctl_escape(mount);
	struct stat st;
	if (lstat(path, &st) != 0) {
		int e = errno;
		if (e == ENOENT)
			ctl_err("%s is not mounted, and there is no record of its locks (%s): it "
			        "holds none, or it was mounted with another state_dir: give its "
			        "configuration (--config FILE, -o state_dir=DIR)",
			        emount, path);
		else
			ctl_err("cannot look at %s: %s; run as the user lockfs runs as", path,
			        g_strerror(e));
		*rc = e == ENOENT ? CTL_EXIT_FAIL : CTL_EXIT_ERROR;
		return NULL;
	}
	/* Checked for the mount only: the record's own host, backend and
	 * server are what is released (the backend is checked against them). */
	lockfs_lockstate_id id = { mount, NULL, NULL, NULL };
	g_autoptr(GError) err = NULL;
	lockfs_lockstate *rec = lockfs_lockstate_open(dir, &id, 0, found, &err);
	if (rec)
		return rec;
	if (g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_EXIST)) {
		ctl_err("a lockfs of %s is running (it holds %s) although nothing is mounted "
		        "there (starting, or stuck): stop it, or run lockfsctl release once it "
		        "is mounted",
		        emount, path);
		*rc = CTL_EXIT_FAIL;
	} else {
		ctl_err("%s", err->message);
		*rc = CTL_EXIT_ERROR;
	}
	return NULL;
}

/* The record rewritten with KEEP only, under the header it had. */
static int rewrite_record(lockfs_lockstate *st, const lockfs_lockstate_found *found,
                          GPtrArray *keep)
{
	lockfs_lockstate_id id = { found->header[0], found->header[1], found->header[2],
		                   found->header[3] };
	lockfs_lockstate_set_id(st, &id);
	int r = lockfs_lockstate_rewrite(st, keep, keep->len ? found->session : NULL);
	if (r)
		ctl_err("cannot rewrite %s: %s; the next lockfs of the mount would try to take "
		        "its locks back: free space in state_dir, or remove the file",
		        lockfs_lockstate_file(st), g_strerror(-r));
	return r;
}

static int show_stopped(const char *mount, lockfs_lockstate *st,
                        const lockfs_lockstate_found *found)
{
	g_autofree char *emount = ctl_escape(mount);
	GPtrArray *locks = found->locks;
	printf("%s is not mounted; its record %s holds %u lock%s", emount,
	       lockfs_lockstate_file(st), locks->len, locks->len == 1 ? "" : "s");
	if (found->header[2])
		printf(" (backend %s, host %s)", found->header[2],
		       found->header[1] ? found->header[1] : "?");
	printf("%s\n", locks->len ? ":" : "; nothing to release");
	for (guint i = 0; i < locks->len; i++)
		show_rec(locks->pdata[i]);
	if (locks->len && found->other_boot)
		printf("(recorded before this host last started: lockfs would not take them "
		       "back, but their leases may live on; released all the same)\n");
	fflush(stdout);
	return locks->len;
}

static int release_stopped(const char *mount, const lockfs_config *cfg, bool yes)
{
	const lockfs_settings *s = lockfs_config_settings(cfg);
	lockfs_lockstate_found found;
	g_autoptr(GPtrArray) keep = g_ptr_array_new();
	int rc = CTL_EXIT_OK;
	lockfs_lockstate *st = open_record(s->state_dir, mount, &found, &rc);
	if (!st)
		return rc;
	lockfs_backend *be = NULL;
	if (show_stopped(mount, st, &found) == 0)
		goto out;
	be = open_backend(cfg, mount, lockfs_lockstate_file(st), &found, &rc);
	if (rc)
		goto out;
	if (!yes && !ask(found.locks->len)) {
		printf("nothing released\n");
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	tally t = { 0 };
	release_recs(be, &found, keep, &t);
	/* Released at the backend first, then forgotten: a failure between
	 * the two leaves records the next lockfs finds gone (lost), never a
	 * lock shown held that is not. */
	if (rewrite_record(st, &found, keep) != 0)
		rc = CTL_EXIT_ERROR;
	else
		rc = finish(&t);
out:
	if (be)
		be->destroy(be);
	lockfs_lockstate_found_clear(&found);
	lockfs_lockstate_close(st);
	return rc;
}

/* ---------------------------------------------------------------- command */

/* MOUNT made absolute as lockfs makes its mount point (realpath); a mount
 * whose lockfs was killed (ENOTCONN) by its parent's. */
static char *resolve_mount(const char *arg)
{
	char *real = realpath(arg, NULL);
	if (real || errno != ENOTCONN)
		return real;
	g_autofree char *dir = g_path_get_dirname(arg);
	g_autofree char *base = g_path_get_basename(arg);
	g_autofree char *up = realpath(dir, NULL);
	return up ? g_build_filename(up, base, NULL) : NULL;
}

int ctl_release(int argc, char **argv)
{
	bool yes = false, all = false, options = true;
	const char *arg = NULL, *file = NULL;
	g_autoptr(GPtrArray) opts = g_ptr_array_new();
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r;
		if (options && !strcmp(a, "--")) {
			options = false;
		} else if (options && (!strcmp(a, "--yes") || !strcmp(a, "-y"))) {
			yes = true;
		} else if (options && !strcmp(a, "--all")) {
			all = true;
		} else if (options && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
			usage();
			return CTL_EXIT_OK;
		} else if (options && (r = ctl_config_arg(argc, argv, &i, &file, opts))) {
			if (r < 0)
				return CTL_EXIT_USAGE;
		} else if (options && a[0] == '-' && a[1]) {
			return ctl_usage_error("unknown option '%s'", a);
		} else if (arg) {
			return ctl_usage_error("give one mount (got '%s' and '%s')", arg, a);
		} else {
			arg = a;
		}
	}
	if (!arg || !all)
		return ctl_usage_error("give --all and the mount: lockfsctl release --all [--yes] "
		                       "MOUNT (one lock: lockfsctl unlock PATH)");
	if (!yes && !isatty(STDIN_FILENO)) {
		ctl_err("%s: stdin is not a terminal, so nothing was released; to release "
		        "unattended, use --yes",
		        arg);
		return CTL_EXIT_FAIL;
	}
	g_autofree char *mount = resolve_mount(arg);
	if (!mount) {
		ctl_err("cannot reach the mount point %s: %s; check the path", arg,
		        g_strerror(errno));
		return CTL_EXIT_ERROR;
	}
	if (ctl_is_lockfs_mount(mount))
		return release_live(mount, yes);
	g_autoptr(GError) err = NULL;
	lockfs_config *cfg = ctl_config_load(file, opts, &err);
	if (!cfg) {
		ctl_err("%s", err->message);
		return CTL_EXIT_ERROR;
	}
	int rc = release_stopped(mount, cfg, yes);
	lockfs_config_free(cfg);
	return rc;
}
