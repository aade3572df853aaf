#include "log.h"
#include "view_format.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static bool log_stderr = true;
static GLogLevelFlags log_max = G_LOG_LEVEL_INFO;
static const char *log_ident = "lockfs";

static int level_rank(GLogLevelFlags l)
{
	if (l & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL))
		return 0;
	if (l & G_LOG_LEVEL_WARNING)
		return 1;
	if (l & (G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO))
		return 2;
	return 3;
}

static GLogWriterOutput writer(GLogLevelFlags level, const GLogField *fields, gsize n,
                               gpointer user)
{
	(void)user;
	if (level_rank(level) > level_rank(log_max))
		return G_LOG_WRITER_HANDLED;
	const char *raw = "";
	for (gsize i = 0; i < n; i++)
		if (strcmp(fields[i].key, "MESSAGE") == 0)
			raw = fields[i].value;
	/* Messages name locks and holders, which other hosts chose: escaped as
	 * in .lockfs/ (spaces kept), a message is one line and sends the
	 * terminal or log reader no control of its own. */
	g_autofree char *msg = lockfs_escape_text(raw);
	static const char *names[] = {"error", "warning", "info", "debug"};
	int rank = level_rank(level);
	if (log_stderr) {
		fprintf(stderr, "%s: %s: %s\n", log_ident, names[rank], msg);
	} else {
		static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
		syslog(prio[rank], "%s", msg);
	}
	return G_LOG_WRITER_HANDLED;
}

void lockfs_log_init(const char *ident, bool to_stderr, const char *level)
{
	log_ident = ident;
	log_stderr = to_stderr;
	if (level && strcmp(level, "error") == 0)
		log_max = G_LOG_LEVEL_CRITICAL;
	else if (level && strcmp(level, "warning") == 0)
		log_max = G_LOG_LEVEL_WARNING;
	else if (level && strcmp(level, "debug") == 0)
		log_max = G_LOG_LEVEL_DEBUG;
	else
		log_max = G_LOG_LEVEL_INFO;
	if (!to_stderr)
		openlog(ident, LOG_PID, LOG_DAEMON);
	g_log_set_writer_func(writer, NULL, NULL);
}

void lockfs_log(GLogLevelFlags level, const char *key, const char *fmt, ...)
{
	if (level_rank(level) > level_rank(log_max))
		return;
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	GLogField fields[] = {
		{"MESSAGE", msg, -1},
		{"GLIB_DOMAIN", "lockfs", -1},
		{"LOCKFS_LOCK", key ? key : "", -1},
	};
	g_log_structured_array(level, fields, G_N_ELEMENTS(fields));
}

/* ---- notifications ---- */

#define NOTIFY_QUEUE_MAX 256
#define NOTIFY_TIME_LIMIT_S 30

static char *notify_cmd;
static char *notify_mount;
static GAsyncQueue *notify_queue;
static GThread *notify_thread;

static char *holder_text(const lockfs_holder *h)
{
	if (!h)
		return g_strdup("");
	return g_strdup_printf("%s:%" G_GINT64_FORMAT " uid=%u user=%s", h->host ? h->host : "?",
	                       h->pid, h->uid, h->user ? h->user : "?");
}

/* Run one notification: fork, exec /bin/sh -c, wait at most the time limit. */
static void run_one(char **vars)
{
	/* Build the environment before fork: the child of a threaded process may
	 * only make async-signal-safe calls. */
	char **envp = g_get_environ();
	for (char **v = vars; *v; v++) {
		char *eq = strchr(*v, '=');
		g_autofree char *name = g_strndup(*v, eq - *v);
		envp = g_environ_setenv(envp, name, eq + 1, TRUE);
	}
	char *argv[] = {"sh", "-c", notify_cmd, NULL};
	pid_t pid = fork();
	if (pid < 0) {
		lockfs_log(G_LOG_LEVEL_WARNING, NULL, "notify: cannot fork: %s", g_strerror(errno));
		g_strfreev(envp);
		return;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0)
			dup2(devnull, 0);
		execve("/bin/sh", argv, envp);
		_exit(127);
	}
	g_strfreev(envp);
	int status = 0;
	for (int waited_ms = 0;; waited_ms += 50) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			return;
		if (waited_ms >= NOTIFY_TIME_LIMIT_S * 1000) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			lockfs_log(G_LOG_LEVEL_WARNING, NULL,
			           "notify command killed after %d s: %s", NOTIFY_TIME_LIMIT_S,
			           notify_cmd);
			return;
		}
		g_usleep(50 * 1000);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		lockfs_log(G_LOG_LEVEL_WARNING, NULL, "notify command failed (status %d): %s",
		           status, notify_cmd);
}

static gpointer notify_main(gpointer unused)
{
	(void)unused;
	for (;;) {
		char **env = g_async_queue_pop(notify_queue);
		if (env[0] == NULL) {
			g_strfreev(env);
			return NULL;
		}
		run_one(env);
		g_strfreev(env);
	}
}

void lockfs_notify_init(const char *command, const char *mount)
{
	if (!command || !*command || notify_thread)
		return;
	notify_cmd = g_strdup(command);
	notify_mount = g_strdup(mount ? mount : "");
	notify_queue = g_async_queue_new();
	notify_thread = g_thread_new("lockfs-notify", notify_main, NULL);
}

void lockfs_notify(const char *event, const char *key, const lockfs_holder *holder,
                   const lockfs_holder *breaker, const char *fence)
{
	lockfs_notify_detail(event, key, holder, breaker, fence, NULL);
}

void lockfs_notify_detail(const char *event, const char *key, const lockfs_holder *holder,
                          const lockfs_holder *breaker, const char *fence, const char *detail)
{
	if (!notify_thread)
		return;
	if (g_async_queue_length(notify_queue) >= NOTIFY_QUEUE_MAX) {
		lockfs_log(G_LOG_LEVEL_WARNING, key, "notify queue full; %s of %s not notified",
		           event, key);
		return;
	}
	g_autofree char *h = holder_text(holder);
	g_autofree char *b = holder_text(breaker);
	GPtrArray *env = g_ptr_array_new();
	g_ptr_array_add(env, g_strdup_printf("LOCKFS_EVENT=%s", event));
	g_ptr_array_add(env, g_strdup_printf("LOCKFS_LOCK=%s", key));
	g_ptr_array_add(env, g_strdup_printf("LOCKFS_MOUNT=%s", notify_mount));
	g_ptr_array_add(env, g_strdup_printf("LOCKFS_HOLDER=%s", h));
	g_ptr_array_add(env, g_strdup_printf("LOCKFS_BREAKER=%s", b));
	g_ptr_array_add(env, g_strdup_printf("LOCKFS_FENCE=%s", fence ? fence : ""));
	if (detail)
		g_ptr_array_add(env, g_strdup_printf("LOCKFS_DETAIL=%s", detail));
	g_ptr_array_add(env, NULL);
	g_async_queue_push(notify_queue, g_ptr_array_free(env, FALSE));
}

void lockfs_notify_shutdown(void)
{
	if (!notify_thread)
		return;
	g_async_queue_push(notify_queue, g_new0(char *, 1));
	g_thread_join(notify_thread);
	notify_thread = NULL;
}
