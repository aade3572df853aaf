/* lockfs [SOURCE] MOUNTPOINT [-f] [-d] [-s] [-o OPTIONS]... [--config FILE]
 * (see cmdline.h)
 *
 * Exit status: 0 unmounted cleanly (detached: mounted, the daemon runs on);
 * 1 bad usage or configuration; 2 the mount failed; 3 the backend could not
 * be set up.  A detaching lockfs exits with its daemon's status until that
 * is mounted (daemon.h). */
#include "cmdline.h"
#include "daemon.h"
#include "fs.h"
#include "holder.h"
#include "lockstate.h"
#include "log.h"
#include "service.h"

#include <errno.h>
#include <fcntl.h>
#include <lockfs/backends.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define EXIT_USAGE 1
#define EXIT_MOUNT 2
#define EXIT_BACKEND 3

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

/* Whether /proc/self/mounts has a fuse.lockfs mount on PATH (absolute;
 * mounts(5) writes a space as \040 and so on). */
static bool lockfs_mounted_on(const char *path)
{
	g_autofree char *text = NULL;
	if (!g_file_get_contents("/proc/self/mounts", &text, NULL, NULL))
		return false;
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		g_auto(GStrv) f = g_strsplit(*l, " ", 4);
		if (g_strv_length(f) < 3 || strcmp(f[2], "fuse.lockfs") != 0)
			continue;
		g_autofree char *dir = g_strcompress(f[1]);
		if (strcmp(dir, path) == 0)
			return true;
	}
	return false;
}

/* A lockfs that was killed (kill -9, a crash, the OOM killer) leaves its
 * mount behind, answering ENOTCONN: the next lockfs of the mount point,
 * started by hand or by systemd's Restart=, unmounts it (lazily, as
 * nothing can be waiting on it but errors) and mounts in its place. */
static void unmount_dead(const char *mountpoint)
{
	/* statfs(2) always asks the daemon; stat(2) may be answered from the
	 * kernel's attribute cache. */
	struct statfs sfs;
	if (statfs(mountpoint, &sfs) == 0 || errno != ENOTCONN)
		return;
	g_autofree char *base = g_path_get_basename(mountpoint);
	g_autofree char *dir = g_path_get_dirname(mountpoint);
	g_autofree char *real = realpath(dir, NULL);
	g_autofree char *path = real ? g_build_filename(real, base, NULL) : NULL;
	if (!path || !lockfs_mounted_on(path))
		return; /* not lockfs's: mounting fails and says so */
	lockfs_log(G_LOG_LEVEL_WARNING, NULL,
	           "%s: the mount of a lockfs that died is still there; unmounting it", path);
	if (geteuid() == 0 && umount2(path, MNT_DETACH) == 0)
		return;
	const char *argv[] = { "fusermount3", "-u", "-z", "--", path, NULL };
	int status = 0;
	g_autoptr(GError) err = NULL;
	if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL,
	                  &status, &err) ||
	    !g_spawn_check_wait_status(status, &err))
		lockfs_log(G_LOG_LEVEL_WARNING, NULL, "cannot unmount %s: %s", path, err->message);
}

/* SIGHUP reopens log_file, as logrotate's postrotate expects of a daemon,
 * and ends nothing (libfuse's handler would end the mount, and with it
 * nothing of the locks now, but every request until a restart).  open(2),
 * dup2(2) and close(2) are async-signal-safe; the path is fixed at start. */
static const char *hup_log_file;

static void on_hup(int sig)
{
	(void)sig;
	int saved = errno;
	if (hup_log_file) {
		int fd = open(hup_log_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
		              0640);
		if (fd >= 0) {
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
	}
	errno = saved;
}

static void hup_init(const char *log_file)
{
	hup_log_file = log_file;
	struct sigaction sa = { .sa_handler = on_hup, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGHUP, &sa, NULL);
}

int main(int argc, char **argv)
{
	lockfs_cmdline cl;
	switch (lockfs_cmdline_parse(argc, argv, &cl)) {
	case LOCKFS_CMDLINE_RUN:
		break;
	case LOCKFS_CMDLINE_DONE:
		return 0;
	case LOCKFS_CMDLINE_USAGE:
		return EXIT_USAGE;
	}
	const char *mountpoint = cl.mountpoint;
	bool foreground = cl.foreground, debug = cl.debug;

	lockfs_backends_register_config();
	lockfs_config *cfg = lockfs_config_new();
	g_autoptr(GError) err = NULL;
	if (cl.config_file && !lockfs_config_load_file(cfg, cl.config_file, &err))
		die(EXIT_USAGE, "%s", err->message);
	GString *fuse_opts = g_string_new("default_permissions,fsname=lockfs,subtype=lockfs");
	if (!lockfs_cmdline_apply(&cl, cfg, fuse_opts, &err) || !lockfs_config_finish(cfg, &err))
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

	unmount_dead(mountpoint);
	g_autofree char *abs = realpath(mountpoint, NULL);
	if (!abs)
		die(EXIT_MOUNT, "cannot use mount point %s: %s", mountpoint, g_strerror(errno));
	/* Taken before mounting: the directory underneath stays reachable. */
	int under_fd = open(abs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (under_fd < 0)
		die(EXIT_MOUNT, "cannot open mount point %s: %s", abs, g_strerror(errno));
	/* Lock names made on the disk here while no lockfs was mounted: they
	 * do not make the directory one to pass through. */
	g_autoptr(GPtrArray) gap = restart_gap_find(under_fd, set->suffix);
	bool passthrough =
	        set->passthrough == LOCKFS_PASSTHROUGH_YES ||
	        (set->passthrough == LOCKFS_PASSTHROUGH_AUTO && !restart_gap_only(under_fd, gap));
	/* The gap's files are removed once taken: lfs_new keeps UNDER_FD only
	 * when passing through. */
	int gap_fd = gap->len ? fcntl(under_fd, F_DUPFD_CLOEXEC, 3) : -1;

	/* The record of this mount's locks, before the backend: a previous
	 * lockfs of the mount may still be exiting, holding it (and the local
	 * backend's fence counter). */
	lockfs_lockstate_id id = { abs, lockfs_holder_host(), set->backend, NULL };
	lockfs_lockstate_found found;
	int wait_ms = 2 * (int)set->network_timeout_ms + 2000;
	lockfs_lockstate *state = lockfs_lockstate_open(set->state_dir, &id, wait_ms, &found, &err);
	if (!state)
		die(EXIT_BACKEND, "%s", err->message);
	lockfs_backend *be = lockfs_backend_new(cfg, abs, &err);
	if (!be)
		die(EXIT_BACKEND, "%s", err->message);
	g_autofree char *server = be->identity ? be->identity(be) : g_strdup("");
	id.server = server;
	if (!lockfs_lockstate_check(lockfs_lockstate_file(state), &found, &id, &err))
		die(EXIT_BACKEND, "%s", err->message);
	lockfs_lockstate_set_id(state, &id);
	lfs *fs = lfs_new(set, be, abs, under_fd, passthrough);
	record_attach(fs, state);
	lockfs_notify_init(set->notify, abs);

	char *fargv[] = { argv[0], "-o", fuse_opts->str, debug ? "-d" : NULL, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(debug ? 4 : 3, fargv);
	struct fuse_session *se = fuse_session_new(&args, &lfs_ops, sizeof(lfs_ops), fs);
	if (!se)
		die(EXIT_MOUNT, "cannot start a FUSE session with options %s", fuse_opts->str);
	lfs_attach_session(fs, se);
	if (fuse_set_signal_handlers(se) != 0)
		die(EXIT_MOUNT, "cannot install signal handlers");
	hup_init(set->log_file);
	if (fuse_session_mount(se, abs) != 0)
		die(EXIT_MOUNT,
		    "cannot mount on %s; is /dev/fuse usable and, for allow_other as a user, "
		    "user_allow_other set in /etc/fuse.conf?",
		    abs);
	lockfs_log(G_LOG_LEVEL_INFO, NULL, "mounted %s (backend %s%s)", abs, be->name,
	           passthrough ? ", passthrough" : "");
	/* Mounted first, so the gap a restart leaves is as short as it can be
	 * (requests wait in the kernel meanwhile); answered only once the
	 * locks of the previous lockfs are back. */
	restart_reclaim(fs, &found);
	lockfs_lockstate_found_clear(&found);
	if (gap_fd >= 0) {
		restart_gap_close(fs, gap, gap_fd);
		close(gap_fd);
	}
	inval_start(fs);
	leases_start(fs);
	flock_start(fs);
	g_autofree char *status = service_status_text(fs);
	daemon_ready(status, log_fd);
	service_status_start(fs);

	struct fuse_loop_config *lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(lc, 0);
	fuse_loop_cfg_set_max_threads(lc, 16);
	/* -s: every request in this thread, one at a time. */
	int r = cl.single_thread ? fuse_session_loop(se) : fuse_session_loop_mt(se, lc);
	fuse_loop_cfg_destroy(lc);

	/* SIGTERM/SIGINT end the loop, as an unmount does: the locks belong
	 * to their holders, not to this process, so none is let go.  Their
	 * leases run out at the backend unless the next lockfs of this mount
	 * takes them back (fs_restart.c); lockfsctl release frees them. */
	service_stopping(fs);
	flock_stop(fs);
	leases_stop(fs);
	locks_stop(fs);
	inval_stop(fs);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	lockfs_notify_shutdown();
	be->destroy(be);
	lockfs_lockstate_close(state);
	lockfs_log(G_LOG_LEVEL_INFO, NULL, "unmounted %s", abs);
	g_string_free(fuse_opts, TRUE);
	lockfs_cmdline_clear(&cl);
	lockfs_config_free(cfg);
	return r < 0 ? EXIT_MOUNT : 0;
}
