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

/* Where lines go: stderr as text (-f), the journal with fields (stderr is
 * the journal's stream at start-up: a systemd unit, or mount(8) run by one),
 * or syslog (detached elsewhere). */
typedef enum {
	OUT_STDERR,
	OUT_JOURNAL,
	OUT_SYSLOG
} log_output;

static log_output log_out = OUT_STDERR;
static bool log_ready; /* lockfs_log_init has installed the writer */
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

int lockfs_log_priority(GLogLevelFlags l)
{
	if (l & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL))
		return LOG_ERR;
	if (l & G_LOG_LEVEL_WARNING)
		return LOG_WARNING;
	if (l & G_LOG_LEVEL_MESSAGE)
		return LOG_NOTICE;
	if (l & G_LOG_LEVEL_INFO)
		return LOG_INFO;
	return LOG_DEBUG;
}

gsize lockfs_log_journal_fields(GLogLevelFlags level, const GLogField *in, gsize n,
                                const char *ident, GLogField *out, gsize max, char prio[2],
                                char **msg)
{
	const char *raw = "";
	bool has_ident = false;
	gsize k = 0;
	for (gsize i = 0; i < n; i++) {
		if (strcmp(in[i].key, "MESSAGE") == 0) {
			raw = in[i].value;
			continue;
		}
		if (strcmp(in[i].key, "PRIORITY") == 0)
			continue; /* ours below: GLib's maps critical to warning */
		if (strcmp(in[i].key, "SYSLOG_IDENTIFIER") == 0)
			has_ident = true;
		if (k + 3 < max)
			out[k++] = in[i];
	}
	/* MESSAGE is read as text: escaped like every text output.  The
	 * LOCKFS_* fields keep the exact bytes (journald stores any). */
	*msg = lockfs_escape_text(raw);
	prio[0] = (char)('0' + lockfs_log_priority(level));
	prio[1] = '\0';
	out[k++] = (GLogField){ "MESSAGE", *msg, -1 };
	out[k++] = (GLogField){ "PRIORITY", prio, -1 };
	if (!has_ident)
		out[k++] = (GLogField){ "SYSLOG_IDENTIFIER", ident, -1 };
	return k;
}

#define FIELDS_MAX 32

static GLogWriterOutput writer(GLogLevelFlags level, const GLogField *fields, gsize n,
                               gpointer user)
{
	(void)user;
	if (level_rank(level) > level_rank(log_max))
		return G_LOG_WRITER_HANDLED;
	if (log_out == OUT_JOURNAL) {
		GLogField out[FIELDS_MAX];
		char prio[2];
		g_autofree char *msg = NULL;
		gsize k = lockfs_log_journal_fields(level, fields, n, log_ident, out, FIELDS_MAX,
		                                    prio, &msg);
		if (g_log_writer_journald(level, out, k, NULL) == G_LOG_WRITER_HANDLED)
			return G_LOG_WRITER_HANDLED;
		/* The journal went away: the line goes to stderr as text. */
	}
	const char *raw = "";
	for (gsize i = 0; i < n; i++)
		if (strcmp(fields[i].key, "MESSAGE") == 0)
			raw = fields[i].value;
	/* Messages name locks and holders, which other hosts chose: escaped as
	 * in .lockfs/ (spaces kept), a message is one line and sends the
	 * terminal or log reader no control of its own. */
	static const char *names[] = { "error", "warning", "info", "debug" };
	int rank = level_rank(level);
	if (log_out == OUT_SYSLOG) {
		g_autofree char *msg = lockfs_escape_text(raw);
		syslog(lockfs_log_priority(level), "%s", msg);
		return G_LOG_WRITER_HANDLED;
	}
	/* "IDENT: LEVEL: MESSAGE\n" made here and written at once (stderr is
	 * unbuffered: one write(2), as fprintf made it, without its cost). */
	g_autoptr(GString) line = g_string_sized_new(strlen(raw) + 32);
	g_string_append(line, log_ident);
	g_string_append(line, ": ");
	g_string_append(line, names[rank]);
	g_string_append(line, ": ");
	lockfs_escape_append(line, raw, strlen(raw), LOCKFS_ESCAPE_KEEP_SPACE);
	g_string_append_c(line, '\n');
	fwrite(line->str, 1, line->len, stderr);
	return G_LOG_WRITER_HANDLED;
}

void lockfs_log_init(const char *ident, bool to_stderr, const char *level)
{
	log_ident = ident;
	if (level && strcmp(level, "error") == 0)
		log_max = G_LOG_LEVEL_CRITICAL;
	else if (level && strcmp(level, "warning") == 0)
		log_max = G_LOG_LEVEL_WARNING;
	else if (level && strcmp(level, "debug") == 0)
		log_max = G_LOG_LEVEL_DEBUG;
	else
		log_max = G_LOG_LEVEL_INFO;
	/* Decided before a detaching daemon's stderr becomes /dev/null: the
	 * journal's socket is its own, and survives the fork. */
	if (g_log_writer_is_journald(fileno(stderr)))
		log_out = OUT_JOURNAL;
	else if (to_stderr)
		log_out = OUT_STDERR;
	else
		log_out = OUT_SYSLOG;
	if (log_out == OUT_SYSLOG)
		openlog(ident, LOG_PID, LOG_DAEMON);
	g_log_set_writer_func(writer, NULL, NULL);
	log_ready = true;
}

bool lockfs_log_enabled(GLogLevelFlags level)
{
	return level_rank(level) <= level_rank(log_max);
}

static void log_fields(GLogLevelFlags level, const char *event, const char *key,
                       const lockfs_holder *holder, const lockfs_holder *breaker, const char *fence,
                       const char *msg)
{
	/* Holders as fields only where fields are kept: a grant line per lock
	 * cycle should cost no more than it must. */
	bool journal = log_out == OUT_JOURNAL || !log_ready;
	g_autofree char *h = holder && journal ? lockfs_holder_text(holder) : NULL;
	g_autofree char *b = breaker && journal ? lockfs_holder_text(breaker) : NULL;
	GLogField fields[8];
	gsize n = 0;
	fields[n++] = (GLogField){ "MESSAGE", msg, -1 };
	fields[n++] = (GLogField){ "GLIB_DOMAIN", "lockfs", -1 };
	/* Empty fields are left out: journalctl LOCKFS_LOCK=x finds them. */
	if (event && *event)
		fields[n++] = (GLogField){ "LOCKFS_EVENT", event, -1 };
	if (key && *key)
		fields[n++] = (GLogField){ "LOCKFS_LOCK", key, -1 };
	if (fence && *fence)
		fields[n++] = (GLogField){ "LOCKFS_FENCE", fence, -1 };
	if (h)
		fields[n++] = (GLogField){ "LOCKFS_HOLDER", h, -1 };
	if (b)
		fields[n++] = (GLogField){ "LOCKFS_BREAKER", b, -1 };
	/* Straight to the writer once it is ours: GLib's dispatch adds nothing
	 * for lines this file made. */
	if (log_ready)
		writer(level, fields, n, NULL);
	else
		g_log_structured_array(level, fields, n);
}

void lockfs_log(GLogLevelFlags level, const char *key, const char *fmt, ...)
{
	if (!lockfs_log_enabled(level))
		return;
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	log_fields(level, NULL, key, NULL, NULL, NULL, msg);
}

void lockfs_log_event(GLogLevelFlags level, const char *event, const char *key,
                      const lockfs_holder *holder, const lockfs_holder *breaker, const char *fence,
                      const char *fmt, ...)
{
	if (!lockfs_log_enabled(level))
		return;
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	log_fields(level, event, key, holder, breaker, fence, msg);
}

void lockfs_log_event_msg(GLogLevelFlags level, const char *event, const char *key,
                          const lockfs_holder *holder, const lockfs_holder *breaker,
                          const char *fence, const char *msg)
{
	if (lockfs_log_enabled(level))
		log_fields(level, event, key, holder, breaker, fence, msg);
}

/* ---- notifications ---- */

#define NOTIFY_QUEUE_MAX 256
#define NOTIFY_TIME_LIMIT_S 30

static char *notify_cmd;
static char *notify_mount;
static GAsyncQueue *notify_queue;
static GThread *notify_thread;

char *lockfs_holder_text(const lockfs_holder *h)
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
	char *argv[] = { "sh", "-c", notify_cmd, NULL };
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
	g_autofree char *h = lockfs_holder_text(holder);
	g_autofree char *b = lockfs_holder_text(breaker);
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
