/* lockfs [SOURCE] MOUNTPOINT [-f] [-d] [-s] [-o OPTIONS]... [--config FILE]
 * (see cmdline.h)
 *
 * Exit status: 0 unmounted cleanly (detached: mounted, the daemon runs on);
 * 1 bad usage or configuration; 2 the mount failed; 3 the backend could not
 * be set up.  A detaching lockfs exits with its daemon's status until that
 * is mounted (daemon.h). */
#include "cmdline.h"
#include "daemon.h"
#include "fs_flock.h"
#include "fs_inval.h"
#include "fs_leases.h"
#include "fs_locks.h"
#include "fs_ops.h"
#include "fs_record.h"
#include "fs_remote.h"
#include "fs_restart.h"
#include "holder.h"
#include "lockstate.h"
#include "log.h"
#include "metrics_file.h"
#include "service.h"

#include <errno.h>
#include <fcntl.h>
#include <lockfs/backends.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
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

/* What main sets up, step by step, and tears down at the end. */
typedef struct {
	lockfs_cmdline cl;
	bool foreground, debug;
	lockfs_config *cfg;
	const lockfs_settings *set;
	GString *fuse_opts;
	int log_fd;
	char *abs;      /* the mount point's absolute path */
	int under_fd;   /* the directory underneath */
	GPtrArray *gap; /* restart_gap_find's */
	int gap_fd;
	bool passthrough;
	lockfs_lockstate_id id;
	char *server;
	lockfs_lockstate_found found;
	lockfs_lockstate *state;
	lockfs_backend *be;
	lfs *fs;
	char *fargv[5];
	struct fuse_session *se;
	char *status;
} lockfs_main;

/* The command line and the configuration: -1 to go on, else the exit
 * status (--help, --version, bad usage). */
static int configure(lockfs_main *m, int argc, char **argv)
{
	switch (lockfs_cmdline_parse(argc, argv, &m->cl)) {
	case LOCKFS_CMDLINE_RUN:
		break;
	case LOCKFS_CMDLINE_DONE:
		return 0;
	case LOCKFS_CMDLINE_USAGE:
		return EXIT_USAGE;
	}
	m->foreground = m->cl.foreground;
	m->debug = m->cl.debug;

	lockfs_backends_register_config();
	m->cfg = lockfs_config_new();
	g_autoptr(GError) err = NULL;
	if (m->cl.config_file && !lockfs_config_load_file(m->cfg, m->cl.config_file, &err))
		die(EXIT_USAGE, "%s", err->message);
	m->fuse_opts = g_string_new("default_permissions,fsname=lockfs,subtype=lockfs");
	if (!lockfs_cmdline_apply(&m->cl, m->cfg, m->fuse_opts, &err) ||
	    !lockfs_config_finish(m->cfg, &err))
		die(EXIT_USAGE, "%s", err->message);
	m->set = lockfs_config_settings(m->cfg);
	m->foreground = m->foreground || m->set->foreground;
	m->debug = m->debug || m->set->debug;
	if (m->set->allow_other)
		g_string_append(m->fuse_opts, ",allow_other");
	return -1;
}

/* The log, and detaching. */
static void start_logging(lockfs_main *m)
{
	const lockfs_settings *set = m->set;
	/* Opened here, where a relative path and a bad one are still the
	 * caller's to hear about; it is stderr once mounted. */
	m->log_fd = -1;
	if (set->log_file) {
		m->log_fd = open(set->log_file,
		                 O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
		if (m->log_fd < 0)
			die(EXIT_USAGE, "cannot open log_file %s: %s; name a file lockfs may write",
			    set->log_file, g_strerror(errno));
	}
	lockfs_log_init("lockfs", m->foreground || m->debug || m->log_fd >= 0, set->log_level);
	lockfs_holder_set_host(set->host);
	/* Detach now, before any thread or connection exists (daemon.h); the
	 * parent exits with this process's status or once it is mounted. */
	if (!m->foreground)
		daemon_fork();
}

/* lockfs keeps a descriptor for every disk file the kernel knows and one
 * for each open one: a spool of a few hundred mailboxes passes the usual
 * soft limit of 1024, and EMFILE would reach the clients as an error of
 * open, stat or create (a take's temp file: dotlockfile's exit 2).  The
 * soft limit goes up to the hard one, as libfuse's passthrough_hp does. */
static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	rlim_t was = rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		lockfs_log(G_LOG_LEVEL_WARNING, NULL,
		           "cannot raise the limit of open files from %llu to %llu: %s",
		           (unsigned long long)was, (unsigned long long)rl.rlim_max,
		           g_strerror(errno));
	else
		lockfs_log(G_LOG_LEVEL_DEBUG, NULL,
		           "raised the limit of open files from %llu to %llu",
		           (unsigned long long)was, (unsigned long long)rl.rlim_max);
}

/* A metrics_file inside the mount would be written through lockfs itself,
 * at start and at exit when nothing answers: lockfs would wait for itself. */
static void check_metrics_file(const char *path, const char *abs)
{
	if (!path)
		return;
	g_autofree char *dir = g_path_get_dirname(path);
	g_autofree char *real = realpath(dir, NULL);
	g_autofree char *canon = g_canonicalize_filename(real ? real : dir, "/");
	size_t n = strlen(abs);
	if (strncmp(canon, abs, n) == 0 && (canon[n] == '\0' || canon[n] == '/'))
		die(EXIT_USAGE,
		    "metrics_file %s is inside the mount point %s; name a file outside it, "
		    "in node_exporter's textfile directory",
		    path, abs);
}

/* The mount point and the directory underneath, and what a previous
 * lockfs's absence left on it (the gap). */
static void open_mount_point(lockfs_main *m)
{
	const char *mountpoint = m->cl.mountpoint;
	unmount_dead(mountpoint);
	m->abs = realpath(mountpoint, NULL);
	if (!m->abs)
		die(EXIT_MOUNT, "cannot use mount point %s: %s", mountpoint, g_strerror(errno));
	check_metrics_file(m->set->metrics_file, m->abs);
	/* Taken before mounting: the directory underneath stays reachable. */
	m->under_fd = open(m->abs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (m->under_fd < 0)
		die(EXIT_MOUNT, "cannot open mount point %s: %s", m->abs, g_strerror(errno));
	/* Lock names made on the disk here while no lockfs was mounted: they
	 * do not make the directory one to pass through. */
	m->gap = restart_gap_find(m->under_fd, m->set->suffix);
	m->passthrough = m->set->passthrough == LOCKFS_PASSTHROUGH_YES ||
	                 (m->set->passthrough == LOCKFS_PASSTHROUGH_AUTO &&
	                  !restart_gap_only(m->under_fd, m->gap));
	/* The gap's files are removed once taken: lfs_new keeps UNDER_FD only
	 * when passing through. */
	m->gap_fd = m->gap->len ? fcntl(m->under_fd, F_DUPFD_CLOEXEC, 3) : -1;
}

/* The record of this mount's locks, the backend, and the model. */
static void open_model(lockfs_main *m)
{
	g_autoptr(GError) err = NULL;
	/* The record before the backend: a previous lockfs of the mount may
	 * still be exiting, holding it (and the local backend's fence
	 * counter). */
	m->id = (lockfs_lockstate_id){ m->abs, lockfs_holder_host(), m->set->backend, NULL };
	int wait_ms = 2 * (int)m->set->network_timeout_ms + 2000;
	m->state = lockfs_lockstate_open(m->set->state_dir, &m->id, wait_ms, &m->found, &err);
	if (!m->state)
		die(EXIT_BACKEND, "%s", err->message);
	m->be = lockfs_backend_new(m->cfg, m->abs, &err);
	if (!m->be)
		die(EXIT_BACKEND, "%s", err->message);
	m->server = m->be->identity ? m->be->identity(m->be) : g_strdup("");
	m->id.server = m->server;
	if (!lockfs_lockstate_check(lockfs_lockstate_file(m->state), &m->found, &m->id, &err))
		die(EXIT_BACKEND, "%s", err->message);
	lockfs_lockstate_set_id(m->state, &m->id);
	m->fs = lfs_new(m->set, m->be, m->abs, m->under_fd, m->passthrough);
	record_attach(m->fs, m->state);
	lockfs_notify_init(m->set->notify, m->abs);
}

/* The FUSE session, mounted. */
static void mount_session(lockfs_main *m, const char *argv0)
{
	m->fargv[0] = (char *)argv0;
	m->fargv[1] = "-o";
	m->fargv[2] = m->fuse_opts->str;
	m->fargv[3] = m->debug ? "-d" : NULL;
	m->fargv[4] = NULL;
	struct fuse_args args = FUSE_ARGS_INIT(m->debug ? 4 : 3, m->fargv);
	m->se = fuse_session_new(&args, &lfs_ops, sizeof(lfs_ops), m->fs);
	fuse_opt_free_args(&args); /* the copy fuse_session_new's parse made */
	if (!m->se)
		die(EXIT_MOUNT, "cannot start a FUSE session with options %s", m->fuse_opts->str);
	lfs_attach_session(m->fs, m->se);
	if (fuse_set_signal_handlers(m->se) != 0)
		die(EXIT_MOUNT, "cannot install signal handlers");
	hup_init(m->set->log_file);
	if (fuse_session_mount(m->se, m->abs) != 0)
		die(EXIT_MOUNT,
		    "cannot mount on %s; is /dev/fuse usable and, for allow_other as a user, "
		    "user_allow_other set in /etc/fuse.conf?",
		    m->abs);
	lockfs_log(G_LOG_LEVEL_INFO, NULL, "mounted %s (backend %s%s)", m->abs, m->be->name,
	           m->passthrough ? ", passthrough" : "");
}

/* Mounted first, so the gap a restart leaves is as short as it can be
 * (requests wait in the kernel meanwhile); answered only once the locks of
 * the previous lockfs are back.  Then the threads, and ready. */
static void take_back_and_start(lockfs_main *m)
{
	lfs *fs = m->fs;
	restart_reclaim(fs, &m->found);
	lockfs_lockstate_found_clear(&m->found);
	if (m->gap_fd >= 0) {
		restart_gap_close(fs, m->gap, m->gap_fd);
		close(m->gap_fd);
	}
	inval_start(fs);
	leases_start(fs);
	flock_start(fs);
	remote_watch_start(fs);
	/* Every renew interval: the effective one, ttl/3 when the key is 0. */
	if (m->set->metrics_file)
		metrics_file_start(fs, m->set->metrics_file, m->set->renew_ms);
	m->status = service_status_text(fs);
	daemon_ready(m->status, m->log_fd);
	service_status_start(fs);
}

/* Serve requests until an unmount or a signal ends the loop. */
static int serve(lockfs_main *m)
{
	struct fuse_loop_config *lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(lc, 0);
	fuse_loop_cfg_set_max_threads(lc, 16);
	/* -s: every request in this thread, one at a time. */
	int r = m->cl.single_thread ? fuse_session_loop(m->se) : fuse_session_loop_mt(m->se, lc);
	fuse_loop_cfg_destroy(lc);
	return r;
}

/* SIGTERM/SIGINT end the loop, as an unmount does: the locks belong to
 * their holders, not to this process, so none is let go.  Their leases run
 * out at the backend unless the next lockfs of this mount takes them back
 * (fs_restart.c); lockfsctl release frees them. */
static void stop(lockfs_main *m)
{
	lfs *fs = m->fs;
	service_stopping(fs);
	remote_watch_stop(fs);
	flock_stop(fs);
	leases_stop(fs);
	locks_stop(fs);
	inval_stop(fs);
	metrics_file_stop(); /* written once more, with the model at rest */
	fuse_session_unmount(m->se);
	fuse_remove_signal_handlers(m->se);
	fuse_session_destroy(m->se);
	lockfs_notify_shutdown();
	lfs_free(fs); /* and the backend instance: nothing is let go */
	lockfs_lockstate_close(m->state);
	lockfs_log(G_LOG_LEVEL_INFO, NULL, "unmounted %s", m->abs);
	g_string_free(m->fuse_opts, TRUE);
	lockfs_cmdline_clear(&m->cl);
	lockfs_config_free(m->cfg);
}

int main(int argc, char **argv)
{
	lockfs_main m = { 0 };
	int code = configure(&m, argc, argv);
	if (code >= 0)
		return code;
	start_logging(&m);
	raise_nofile();
	open_mount_point(&m);
	open_model(&m);
	mount_session(&m, argv[0]);
	take_back_and_start(&m);
	int r = serve(&m);
	stop(&m);
	/* What main's own variables held until it returned. */
	g_free(m.status);
	g_free(m.server);
	g_ptr_array_unref(m.gap);
	g_free(m.abs);
	return r < 0 ? EXIT_MOUNT : 0;
}
