/* lockfs MOUNTPOINT [-f] [-d] [-o OPTIONS] [--config FILE]
 *
 * Exit status: 0 unmounted cleanly (detached: mounted, the daemon runs on);
 * 1 bad usage or configuration; 2 the mount failed; 3 the backend could not
 * be set up.  A detaching lockfs exits with its daemon's status until that
 * is mounted (daemon.h). */
#include "daemon.h"
#include "fs.h"
#include "holder.h"
#include "log.h"
#include "service.h"

#include <errno.h>
#include <fcntl.h>
#include <lockfs/backends.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXIT_USAGE 1
#define EXIT_MOUNT 2
#define EXIT_BACKEND 3

static void usage(FILE *to)
{
	fprintf(to,
	        "usage: lockfs MOUNTPOINT [-f] [-d] [-o KEY=VALUE[,...]] [--config FILE]\n"
	        "       lockfs --version\n"
	        "Mounts a directory in which creating NAME.lock takes a lock.\n"
	        "  -f            stay in the foreground, log to stderr\n"
	        "  -d            foreground with FUSE debug output\n"
	        "  -o OPTIONS    configuration keys and mount options (see lockfs.conf(5))\n"
	        "  --config FILE read the configuration from FILE (a GLib key file)\n");
}

static void die(int code, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("lockfs: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(code);
}

/* Options mount(8) and systemd read from fstab lines, not for the kernel. */
static bool fstab_only(const char *opt)
{
	static const char *const words[] = {"defaults", "default_permissions", "_netdev", "nofail",
	                                    "noauto", "auto", "user", "users", "nouser", "owner",
	                                    "group"};
	for (size_t i = 0; i < G_N_ELEMENTS(words); i++)
		if (strcmp(opt, words[i]) == 0)
			return true;
	return g_str_has_prefix(opt, "x-") || g_str_has_prefix(opt, "comment=");
}

/* Split -o's value at commas into OUT; "\," is a comma inside a value (an
 * LDAP DN) and "\\" a backslash, as libfuse's own option parser has them. */
static void split_options(const char *s, GPtrArray *out)
{
	GString *cur = g_string_new(NULL);
	for (;; s++) {
		if (*s == '\\' && (s[1] == ',' || s[1] == '\\')) {
			g_string_append_c(cur, *++s);
		} else if (*s == ',' || !*s) {
			if (cur->len)
				g_ptr_array_add(out, g_strdup(cur->str));
			g_string_truncate(cur, 0);
			if (!*s)
				break;
		} else {
			g_string_append_c(cur, *s);
		}
	}
	g_string_free(cur, TRUE);
}

int main(int argc, char **argv)
{
	const char *mountpoint = NULL, *config_file = NULL;
	GPtrArray *options = g_ptr_array_new_with_free_func(g_free);
	const char *positional[2] = {NULL, NULL};
	int npos = 0;
	bool foreground = false, debug = false;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf("lockfs %s\n", LOCKFS_VERSION);
			return 0;
		} else if (!strcmp(a, "-f")) {
			foreground = true;
		} else if (!strcmp(a, "-d")) {
			debug = foreground = true;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--config")) {
			if (i + 1 >= argc)
				die(EXIT_USAGE, "%s needs a value; see lockfs --help", a);
			if (a[1] == 'o') {
				split_options(argv[++i], options);
			} else {
				config_file = argv[++i];
			}
		} else if (g_str_has_prefix(a, "--config=")) {
			config_file = a + strlen("--config=");
		} else if (a[0] == '-' && a[1]) {
			usage(stderr);
			die(EXIT_USAGE, "unknown option '%s'", a);
		} else if (npos < 2) {
			positional[npos++] = a;
		} else {
			die(EXIT_USAGE, "too many arguments ('%s'); see lockfs --help", a);
		}
	}
	/* mount(8) runs "lockfs SOURCE MOUNTPOINT -o ..." for fstab lines. */
	mountpoint = npos == 2 ? positional[1] : positional[0];
	if (!mountpoint) {
		usage(stderr);
		return EXIT_USAGE;
	}

	lockfs_backends_register_config();
	lockfs_config *cfg = lockfs_config_new();
	g_autoptr(GError) err = NULL;
	if (config_file && !lockfs_config_load_file(cfg, config_file, &err))
		die(EXIT_USAGE, "%s", err->message);
	GString *fuse_opts = g_string_new("default_permissions,fsname=lockfs,subtype=lockfs");
	for (guint i = 0; i < options->len; i++) {
		bool for_fuse = false;
		if (!lockfs_config_set_option(cfg, options->pdata[i], &for_fuse, &err))
			die(EXIT_USAGE, "%s", err->message);
		if (for_fuse && !fstab_only(options->pdata[i])) {
			g_string_append_c(fuse_opts, ',');
			for (const char *c = options->pdata[i]; *c; c++) {
				if (*c == ',' || *c == '\\')
					g_string_append_c(fuse_opts, '\\');
				g_string_append_c(fuse_opts, *c);
			}
		}
	}
	if (foreground)
		{
		bool ignored;
		lockfs_config_set_option(cfg, "foreground", &ignored, NULL);
	}
	if (!lockfs_config_finish(cfg, &err))
		die(EXIT_USAGE, "%s", err->message);
	const lockfs_settings *set = lockfs_config_settings(cfg);
	foreground = foreground || set->foreground;
	debug = debug || set->debug;
	if (set->allow_other)
		g_string_append(fuse_opts, ",allow_other");

	/* Opened here, where a relative path and a bad one are still the
	 * caller's to hear about; it is stderr once mounted. */
	int log_fd = -1;
	if (set->log_file) {
		log_fd = open(set->log_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
		              0640);
		if (log_fd < 0)
			die(EXIT_USAGE, "cannot open log_file %s: %s; name a file lockfs may write",
			    set->log_file, g_strerror(errno));
	}
	lockfs_log_init("lockfs", foreground || debug || log_fd >= 0, set->log_level);
	lockfs_holder_set_host(set->host);
	/* Detach now, before any thread or connection exists (daemon.h); the
	 * parent exits with this process's status or once it is mounted. */
	if (!foreground)
		daemon_fork();

	g_autofree char *abs = realpath(mountpoint, NULL);
	if (!abs)
		die(EXIT_MOUNT, "cannot use mount point %s: %s", mountpoint, g_strerror(errno));
	/* Taken before mounting: the directory underneath stays reachable. */
	int under_fd = open(abs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (under_fd < 0)
		die(EXIT_MOUNT, "cannot open mount point %s: %s", abs, g_strerror(errno));
	bool passthrough = set->passthrough == LOCKFS_PASSTHROUGH_YES ||
	                   (set->passthrough == LOCKFS_PASSTHROUGH_AUTO && !dir_is_empty(under_fd));

	lockfs_backend *be = lockfs_backend_new(cfg, abs, &err);
	if (!be)
		die(EXIT_BACKEND, "%s", err->message);
	lfs *fs = lfs_new(set, be, abs, under_fd, passthrough);
	lockfs_notify_init(set->notify, abs);

	char *fargv[] = {argv[0], "-o", fuse_opts->str, debug ? "-d" : NULL, NULL};
	struct fuse_args args = FUSE_ARGS_INIT(debug ? 4 : 3, fargv);
	struct fuse_session *se = fuse_session_new(&args, &lfs_ops, sizeof(lfs_ops), fs);
	if (!se)
		die(EXIT_MOUNT, "cannot start a FUSE session with options %s", fuse_opts->str);
	fs->se = se;
	if (fuse_set_signal_handlers(se) != 0)
		die(EXIT_MOUNT, "cannot install signal handlers");
	if (fuse_session_mount(se, abs) != 0)
		die(EXIT_MOUNT,
		    "cannot mount on %s; is /dev/fuse usable and, for allow_other as a user, "
		    "user_allow_other set in /etc/fuse.conf?",
		    abs);
	lockfs_log(G_LOG_LEVEL_INFO, NULL, "mounted %s (backend %s%s)", abs, be->name,
	           passthrough ? ", passthrough" : "");
	inval_start(fs);
	leases_start(fs);
	g_autofree char *status = service_status_text(fs);
	daemon_ready(status, log_fd);
	service_status_start(fs);

	struct fuse_loop_config *lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(lc, 0);
	fuse_loop_cfg_set_max_threads(lc, 16);
	int r = fuse_session_loop_mt(se, lc);
	fuse_loop_cfg_destroy(lc);

	/* SIGTERM/SIGINT end the loop: let go of this mount's locks, unmount. */
	service_stopping(fs);
	leases_stop(fs);
	pthread_mutex_lock(&fs->mu);
	locks_release_all(fs);
	pthread_mutex_unlock(&fs->mu);
	inval_stop(fs);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	lockfs_notify_shutdown();
	be->destroy(be);
	lockfs_log(G_LOG_LEVEL_INFO, NULL, "unmounted %s", abs);
	g_string_free(fuse_opts, TRUE);
	g_ptr_array_free(options, TRUE);
	lockfs_config_free(cfg);
	return r < 0 ? EXIT_MOUNT : 0;
}
