/* lockfsctl check [--config FILE] [-o OPTIONS] [MOUNT...]: is the
 * configuration valid, the backend reachable, the clock sane, and is any lock
 * held past its stale limit?  Exit 0 ok, 1 warnings, 2 errors. */
#include "ctl.h"
#include "fence_store.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lockfs/backends.h>
#include <lockfs/config.h>
#include <lockfs/options.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
	int warnings;
	int errors;
} tally;

static void warn(tally *t, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void warn(tally *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	ctl_err("warning: %s", msg);
	t->warnings++;
}

static void error(tally *t, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void error(tally *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	ctl_err("error: %s", msg);
	t->errors++;
}

/* Can a file be made in DIR?  A real create: access() would not see a
 * read-only filesystem or an ACL, and root passes it anyway. */
static int try_create(const char *dir)
{
	g_autofree char *tmp = g_build_filename(dir, ".lockfsctl-check.XXXXXX", NULL);
	int fd = g_mkstemp_full(tmp, O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	close(fd);
	unlink(tmp);
	return 0;
}

/* STATE_DIR does not exist: lockfs creates it at mount, so the nearest
 * existing parent must allow it. */
static void check_missing_state_dir(tally *t, const char *dir)
{
	struct stat st;
	g_autofree char *up = g_path_get_dirname(dir);
	while (stat(up, &st) != 0 && strcmp(up, "/") != 0) {
		char *next = g_path_get_dirname(up);
		g_free(up);
		up = next;
	}
	int ce = try_create(up);
	if (ce)
		error(t,
		      "backend local: state_dir %s does not exist and cannot be created "
		      "(%s: %s); create it or set state_dir to a writable directory",
		      dir, up, g_strerror(ce));
	else
		printf("backend local: state_dir %s does not exist yet; lockfs creates it "
		       "at mount\n",
		       dir);
}

/* Every fence state file of the local backend in DIR must parse: the number
 * that does, or -1 when one does not (said as an error). */
static int check_fence_files(tally *t, const char *dir, DIR *d)
{
	int good = 0, bad = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!g_str_has_prefix(de->d_name, "local") ||
		    !g_str_has_suffix(de->d_name, ".fence"))
			continue;
		g_autofree char *path = g_build_filename(dir, de->d_name, NULL);
		g_autofree char *text = NULL;
		g_autoptr(GError) err = NULL;
		uint64_t reserved;
		if (!g_file_get_contents(path, &text, NULL, &err)) {
			error(t,
			      "backend local: cannot read the fence state file %s: %s; fix its "
			      "permissions (lockfs refuses to mount without it)",
			      path, err->message);
			bad++;
		} else if (!lockfs_fence_state_parse(text, &reserved)) {
			error(t,
			      "backend local: %s is not a lockfs fence state file; restore it from "
			      "backup (deleting it would let fences repeat)",
			      path);
			bad++;
		} else {
			good++;
		}
	}
	return bad ? -1 : good;
}

/* The local backend is its state_dir, checked here without opening it: a
 * directory lockfs can make or write, and fence state files that parse. */
static void check_local(tally *t, const lockfs_settings *s)
{
	const char *dir = s->state_dir;
	struct stat st;
	if (stat(dir, &st) != 0) {
		int e = errno;
		if (e != ENOENT)
			error(t,
			      "backend local: cannot reach state_dir %s: %s; fix its permissions "
			      "or set state_dir",
			      dir, g_strerror(e));
		else
			check_missing_state_dir(t, dir);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		error(t,
		      "backend local: state_dir %s is not a directory; set state_dir to a "
		      "directory",
		      dir);
		return;
	}
	int ce = try_create(dir);
	if (ce) {
		error(t,
		      "backend local: state_dir %s is not writable: %s; fix its permissions or "
		      "set state_dir to a writable directory",
		      dir, g_strerror(ce));
		return;
	}
	DIR *d = opendir(dir);
	if (!d) {
		error(t, "backend local: cannot list state_dir %s: %s; fix its permissions", dir,
		      g_strerror(errno));
		return;
	}
	int good = check_fence_files(t, dir, d);
	closedir(d);
	if (good >= 0)
		printf("backend local: state_dir %s is writable; %d fence state file%s parse%s\n",
		       dir, good, good == 1 ? "" : "s", good == 1 ? "s" : "");
}

static void check_lock(tally *t, const lockfs_settings *s, const ctl_lock *l, int64_t now)
{
	g_autofree char *host = ctl_escape(l->host ? l->host : "?");
	g_autofree char *user = ctl_escape(l->user ? l->user : "?");
	g_autofree char *path = ctl_escape(l->path);
	g_autofree char *holder =
	        g_strdup_printf("%s:%" G_GINT64_FORMAT " (user %s)", host, l->pid, user);
	g_autofree char *hb = ctl_format_age(l->heartbeat_age_s);
	int64_t ahead = MAX(l->acquired_s, l->heartbeat_s) - now;

	if (l->state && !strcmp(l->state, "lost")) {
		warn(t,
		     "%s: its holder %s lost it; if the holder is gone, run: lockfsctl unlock %s",
		     path, holder, path);
	} else if ((l->state && !strcmp(l->state, "stale")) ||
	           (s->stale_after_ms > 0 && l->heartbeat_age_s >= 0 &&
	            l->heartbeat_age_s * 1000 > s->stale_after_ms)) {
		g_autofree char *limit = ctl_format_ms(s->stale_after_ms);
		warn(t,
		     "%s: held by %s with no heartbeat for %s, past stale_after %s; if its "
		     "holder is no longer running, run: lockfsctl unlock %s",
		     path, holder, hb, limit, path);
	}
	if (ahead > CTL_SKEW_LIMIT_S) {
		g_autofree char *by = ctl_format_age(ahead);
		warn(t,
		     "%s: held by %s with times %s ahead of this host's clock (clock skew); fix "
		     "the clocks (NTP), and if the holder is gone, run: lockfsctl unlock %s",
		     path, holder, by, path);
	}
}

static void check_mount(tally *t, const lockfs_settings *s, const char *mount, bool configured)
{
	if (!ctl_is_lockfs_mount(mount)) {
		error(t, "%s is not a lockfs mount (no .lockfs/status there); give a mount point",
		      mount);
		return;
	}
	int err = 0;
	g_autoptr(GPtrArray) locks = ctl_read_all(mount, &err);
	if (!locks) {
		error(t,
		      "cannot read %s/.lockfs/status: %s; check that its lockfs process is "
		      "running",
		      mount, g_strerror(err));
		return;
	}
	int before = t->warnings;
	int64_t now = g_get_real_time() / G_USEC_PER_SEC;
	for (guint i = 0; i < locks->len; i++)
		check_lock(t, s, locks->pdata[i], now);
	printf("mount %s: %u lock%s held, %d warning%s\n", mount, locks->len,
	       locks->len == 1 ? "" : "s", t->warnings - before,
	       t->warnings - before == 1 ? "" : "s");
	/* Only a given configuration is meant to be the mount's own. */
	if (configured && !strcmp(s->backend, "local")) {
		g_autofree char *name = lockfs_local_state_name(mount);
		g_autofree char *state = g_build_filename(s->state_dir, name, NULL);
		if (!g_file_test(state, G_FILE_TEST_EXISTS))
			printf("mount %s: its fence state is not in %s (it was mounted with "
			       "another state_dir or configuration)\n",
			       mount, s->state_dir);
	}
}

static void usage(void)
{
	printf("usage: lockfsctl check [--config FILE] [-o OPTIONS] [MOUNT...]\n"
	       "Validates the configuration (FILE, then mount options OPTIONS; the defaults\n"
	       "without either), reaches the backend, measures clock skew, and warns about\n"
	       "locks of MOUNT (default: every lockfs mount) held past stale_after or with\n"
	       "clock skew.  Exit status: 0 ok, 1 warnings, 2 errors, 64 usage.\n");
}

static void count_lock(const lockfs_lock_info *info, void *user)
{
	int *n = user;
	(void)info;
	(*n)++;
}

/* "0.012 s", "4m00s" of the magnitude of US. */
static char *offset_text(int64_t us)
{
	int64_t a = us < 0 ? -us : us;
	if (a < 60 * G_USEC_PER_SEC)
		return g_strdup_printf("%.3f s", a / 1e6);
	return ctl_format_age((a + G_USEC_PER_SEC / 2) / G_USEC_PER_SEC);
}

/* This host's clock against the backend's, as a mount here would measure it:
 * beyond the backend's bound its mounts break no other host's lock. */
static void check_clock(tally *t, lockfs_backend *be, const lockfs_settings *s)
{
	lockfs_clock_info c;
	int r = be->clock ? be->clock(be, &c) : -ENOSYS;
	if (r == -ENOSYS) {
		printf("clock skew: judged per lock below (times more than 5 minutes ahead of "
		       "this host)\n");
		return;
	}
	if (r != 0) {
		warn(t,
		     "clock: the %s server's clock cannot be read from the stamps of a write; "
		     "mounts here break no other host's lock until it can (let the bind user "
		     "read modifyTimestamp and entryCSN)",
		     s->backend);
		return;
	}
	g_autofree char *off = offset_text(c.offset_us);
	g_autofree char *unc = offset_text(c.uncertainty_us);
	g_autofree char *bound = offset_text(c.bound_us);
	const char *dir = c.offset_us > 0 ? "behind" : "ahead of";
	int64_t a = c.offset_us < 0 ? -c.offset_us : c.offset_us;
	if (c.bound_us && a > c.bound_us)
		warn(t,
		     "clock: this host's clock is %s %s the %s server's (+/- %s), more than "
		     "max_clock_offset %s: its mounts take and keep locks but break no other "
		     "host's; fix the clock (NTP)",
		     off, dir, s->backend, unc, bound);
	else if (!c.bound_us) /* etcd: holders judged on the server's clock alone */
		printf("clock: this host's clock is %s %s the %s server's (+/- %s); "
		       "no bound: hosts' clocks break no lock\n",
		       off, dir, s->backend, unc);
	else
		printf("clock: this host's clock is %s %s the %s server's (+/- %s); "
		       "max_clock_offset %s\n",
		       off, dir, s->backend, unc, bound);
}

/* A shared backend: make it as a mount would (connect, TLS, bind or proof,
 * base) and list its locks; the time that takes is reported, and holders'
 * clocks are judged per lock by check_mount. */
static void check_shared(tally *t, const lockfs_config *cfg, const lockfs_settings *s)
{
	g_autoptr(GError) err = NULL;
	/* What the backend says on its way (a certificate left unchecked, a
	 * clock too far off) reads like the rest of check's lines. */
	lockfs_log_init(ctl_prog, true, "warning");
	gint64 t0 = g_get_monotonic_time();
	lockfs_backend *be = lockfs_backend_new(cfg, "lockfsctl-check", &err);
	if (!be) {
		error(t, "backend %s: %s", s->backend, err->message);
		return;
	}
	int n = 0;
	int r = be->list(be, "", count_lock, &n);
	gint64 ms = (g_get_monotonic_time() - t0) / 1000;
	if (r != 0)
		error(t,
		      "backend %s: listing the locks failed (%s); check the server and the "
		      "network_timeout",
		      s->backend, g_strerror(-r));
	else
		printf("backend %s: reached in %" G_GINT64_FORMAT " ms; %d lock%s held\n",
		       s->backend, ms, n, n == 1 ? "" : "s");
	check_clock(t, be, s);
	be->destroy(be);
}

int ctl_check(int argc, char **argv)
{
	const char *file = NULL;
	g_autoptr(GPtrArray) opts = g_ptr_array_new();
	g_autoptr(GPtrArray) mounts = g_ptr_array_new_with_free_func(g_free);
	bool options = true;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r;
		if (options && !strcmp(a, "--")) {
			options = false;
		} else if (options && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
			usage();
			return CTL_EXIT_OK;
		} else if (options && (r = ctl_config_arg(argc, argv, &i, &file, opts))) {
			if (r < 0)
				return CTL_EXIT_USAGE;
		} else if (options && a[0] == '-' && a[1]) {
			return ctl_usage_error("unknown option '%s'", a);
		} else {
			g_ptr_array_add(mounts, g_strdup(a));
		}
	}

	tally t = { 0, 0 };
	g_autoptr(GError) err = NULL;
	lockfs_config *cfg = ctl_config_load(file, opts, &err);
	if (!cfg) {
		error(&t, "%s", err->message);
		return CTL_EXIT_ERROR;
	}
	const lockfs_settings *s = lockfs_config_settings(cfg);
	g_autofree char *ttl = ctl_format_ms(s->ttl_ms);
	g_autofree char *renew = ctl_format_ms(s->renew_ms ? s->renew_ms : s->ttl_ms / 3);
	g_autofree char *net = ctl_format_ms(s->network_timeout_ms);
	g_autofree char *stale =
	        s->stale_after_ms ? ctl_format_ms(s->stale_after_ms) : g_strdup("0 (never)");
	printf("config %s: ok (backend %s, ttl %s, renew every %s, network_timeout %s, "
	       "stale_after %s)\n",
	       file ? file : "(defaults)", s->backend, ttl, renew, net, stale);

	if (!strcmp(s->backend, "local")) {
		check_local(&t, s);
		printf("clock skew: none (local backend)\n");
	} else {
		check_shared(&t, cfg, s);
	}

	bool all = mounts->len == 0;
	if (all) {
		g_ptr_array_unref(mounts);
		mounts = ctl_list_mounts();
	}
	for (guint i = 0; i < mounts->len; i++) {
		g_autofree char *real = realpath(mounts->pdata[i], NULL);
		check_mount(&t, s, real ? real : mounts->pdata[i], file != NULL);
	}
	if (all && !mounts->len)
		printf("no lockfs mounts to check\n");
	lockfs_config_free(cfg);

	if (t.errors) {
		printf("check: %d error%s, %d warning%s\n", t.errors, t.errors == 1 ? "" : "s",
		       t.warnings, t.warnings == 1 ? "" : "s");
		return CTL_EXIT_ERROR;
	}
	if (t.warnings) {
		printf("check: %d warning%s\n", t.warnings, t.warnings == 1 ? "" : "s");
		return CTL_EXIT_FAIL;
	}
	printf("check: ok\n");
	return CTL_EXIT_OK;
}

int ctl_config_arg(int argc, char **argv, int *i, const char **file, GPtrArray *opts)
{
	const char *a = argv[*i], *v;
	int r;
	if ((r = ctl_opt_value(argc, argv, i, "--config", &v))) {
		if (r > 0 && *file) {
			ctl_usage_error("--config given twice; give one file");
			return -1;
		}
		if (r > 0)
			*file = v;
		return r;
	}
	if ((r = ctl_opt_value(argc, argv, i, "-o", &v))) {
		if (r > 0)
			g_ptr_array_add(opts, (char *)v);
		return r;
	}
	if (!strncmp(a, "-o", 2) && a[2]) {
		/* -oOPTIONS, as lockfs and every libfuse program take it. */
		g_ptr_array_add(opts, (char *)a + 2);
		return 1;
	}
	return 0;
}

lockfs_config *ctl_config_load(const char *file, GPtrArray *opts, GError **err)
{
	lockfs_backends_register_config();
	lockfs_config *cfg = lockfs_config_new();
	bool good = !file || lockfs_config_load_file(cfg, file, err);
	/* Split as lockfs splits its -o: "\," is a comma in a value. */
	g_autoptr(GPtrArray) items = g_ptr_array_new_with_free_func(g_free);
	for (guint i = 0; i < opts->len; i++)
		lockfs_options_split(opts->pdata[i], items);
	for (guint i = 0; good && i < items->len; i++) {
		bool for_fuse;
		good = lockfs_config_set_option(cfg, items->pdata[i], &for_fuse, err);
	}
	if (good)
		good = lockfs_config_finish(cfg, err);
	if (!good) {
		lockfs_config_free(cfg);
		return NULL;
	}
	return cfg;
}
