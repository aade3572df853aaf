/* .lockfs/metrics (see metrics.h).  The text format's rules: a # HELP and a
 * # TYPE line before each family, counters named *_total, histogram buckets
 * cumulative with le="+Inf" equal to _count, label values with \\, \" and
 * \n escaped.  Every sample carries mount="MOUNTPOINT", so the files of
 * several mounts can sit side by side in node_exporter's textfile directory
 * without clashing. */
#include "metrics.h"
#include "holder.h"

#include <errno.h>
#include <string.h>

_Atomic uint64_t lockfs_metrics_counters[M_COUNTERS];

/* Whether the last backend call got an answer.  1 to start with: the
 * start-up check reached the backend before the mount existed. */
static _Atomic int backend_up = 1;
static _Atomic int64_t backend_failed_mono; /* when a call last failed (EIO) */

typedef enum {
	OP_ACQUIRE,
	OP_RELEASE,
	OP_RENEW,
	OP_HEARTBEAT,
	OP_BREAK,
	OP_GET,
	OP_LIST,
	OP_CONFIRM,
	OP_LOOK,
	OPS
} backend_op;

static const char *const op_names[OPS] = { "acquire", "release", "renew",   "heartbeat", "break",
	                                   "get",     "list",    "confirm", "look" };

/* From the in-process table (microseconds) to network_timeout (seconds). */
static const int64_t bucket_us[] = { 10,     25,      50,      100,     250,     500,    1000,
	                             2500,   5000,    10000,   25000,   50000,   100000, 250000,
	                             500000, 1000000, 2500000, 5000000, 10000000 };
#define BUCKETS G_N_ELEMENTS(bucket_us)

typedef struct {
	_Atomic uint64_t in[BUCKETS + 1]; /* per bucket, not cumulative; last: > 10 s */
	_Atomic uint64_t sum_us;
} histogram;

static histogram hist[OPS];
/* Calls of each operation that got no answer (EIO): in an outage most
 * attempts fail at the lookup (get), before any acquisition is tried. */
static _Atomic uint64_t failed[OPS];

static bool answered(int r)
{
	return r == 0 || r == -EEXIST || r == -ENOENT || r == -ESTALE || r == -EINVAL ||
	       r == -ENAMETOOLONG;
}

static int observe(backend_op op, int64_t t0, int r)
{
	int64_t us = lockfs_mono_us() - t0;
	if (us < 0)
		us = 0;
	size_t i = 0;
	while (i < BUCKETS && us > bucket_us[i])
		i++;
	atomic_fetch_add_explicit(&hist[op].in[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&hist[op].sum_us, (uint64_t)us, memory_order_relaxed);
	bool ok = answered(r);
	if (!ok) {
		atomic_fetch_add_explicit(&failed[op], 1, memory_order_relaxed);
		atomic_store_explicit(&backend_failed_mono, t0 + us, memory_order_relaxed);
	}
	atomic_store_explicit(&backend_up, ok, memory_order_relaxed);
	return r;
}

bool metrics_backend_down_lately(int64_t within_us)
{
	int64_t at = atomic_load_explicit(&backend_failed_mono, memory_order_relaxed);
	return !atomic_load_explicit(&backend_up, memory_order_relaxed) && at &&
	       lockfs_mono_us() - at < within_us;
}

/* ---- the timing backend ---- */

typedef struct {
	lockfs_backend pub;
	lockfs_backend *in;
} timed_backend;

#define IN(be) (((timed_backend *)(void *)(be))->in)
#define TIMED(op, call)                         \
	({                                      \
		int64_t t0_ = lockfs_mono_us(); \
		observe((op), t0_, (call));     \
	})

static int t_acquire(lockfs_backend *be, const char *key, const lockfs_holder *who,
                     const void *content, size_t content_len, lockfs_lease **out,
                     lockfs_acquire_result *res)
{
	return TIMED(OP_ACQUIRE, IN(be)->acquire(IN(be), key, who, content, content_len, out, res));
}

static int t_heartbeat(lockfs_backend *be, lockfs_lease *lease, const lockfs_beat *beat)
{
	return TIMED(OP_HEARTBEAT, IN(be)->heartbeat(IN(be), lease, beat));
}

static int t_renew(lockfs_backend *be, lockfs_lease *lease)
{
	return TIMED(OP_RENEW, IN(be)->renew(IN(be), lease));
}

static int t_release(lockfs_backend *be, lockfs_lease *lease)
{
	return TIMED(OP_RELEASE, IN(be)->release(IN(be), lease));
}

static int t_break(lockfs_backend *be, const char *key, const char *fence,
                   const lockfs_holder *breaker, lockfs_lock_info *broken)
{
	return TIMED(OP_BREAK, IN(be)->break_lock(IN(be), key, fence, breaker, broken));
}

static int t_inspect(lockfs_backend *be, const char *key, lockfs_lock_info *out)
{
	return TIMED(OP_GET, IN(be)->inspect(IN(be), key, out));
}

static int t_list(lockfs_backend *be, const char *prefix, lockfs_list_cb cb, void *user)
{
	return TIMED(OP_LIST, IN(be)->list(IN(be), prefix, cb, user));
}

static int t_confirm(lockfs_backend *be, lockfs_lease *lease, char *fence)
{
	return TIMED(OP_CONFIRM, IN(be)->confirm(IN(be), lease, fence));
}

static int t_held(lockfs_backend *be, const char *key, unsigned mine)
{
	return TIMED(OP_LOOK, IN(be)->held(IN(be), key, mine));
}

static int t_clock(lockfs_backend *be, lockfs_clock_info *out)
{
	return IN(be)->clock(IN(be), out);
}

/* Not timed: a watch lasts as long as it is asked to. */
static int t_watch(lockfs_backend *be, const char *prefix, int timeout_ms, lockfs_watch_cb changed,
                   void *user)
{
	return IN(be)->watch(IN(be), prefix, timeout_ms, changed, user);
}

/* Not timed either: it waits as long as the key is held. */
static int t_wait_free(lockfs_backend *be, const char *key, int timeout_ms)
{
	return IN(be)->wait_free(IN(be), key, timeout_ms);
}

static char *t_identity(lockfs_backend *be)
{
	return IN(be)->identity(IN(be));
}

static int t_session_token(lockfs_backend *be, GString *out)
{
	return IN(be)->session_token(IN(be), out);
}

/* A resumed session and an adopted lease are renewed: timed as renewals. */
static int t_resume(lockfs_backend *be, const char *token)
{
	return TIMED(OP_RENEW, IN(be)->resume(IN(be), token));
}

static int t_lease_token(lockfs_backend *be, const lockfs_lease *lease, GString *out)
{
	return IN(be)->lease_token(IN(be), lease, out);
}

static int t_adopt(lockfs_backend *be, const char *key, const char *fence, const char *token,
                   const lockfs_holder *who, const void *content, size_t content_len,
                   lockfs_lease **out)
{
	return TIMED(OP_RENEW,
	             IN(be)->adopt(IN(be), key, fence, token, who, content, content_len, out));
}

static void t_lease_free(lockfs_backend *be, lockfs_lease *lease)
{
	IN(be)->lease_free(IN(be), lease);
}

static void t_destroy(lockfs_backend *be)
{
	IN(be)->destroy(IN(be));
	g_free(be);
}

lockfs_backend *metrics_wrap_backend(lockfs_backend *inner)
{
	timed_backend *t = g_new0(timed_backend, 1);
	t->in = inner;
	/* A table of this lockfs's interface around one the registry checked. */
	t->pub = (lockfs_backend){
		LOCKFS_BACKEND_INIT(inner->name, inner->flags),
		.acquire = t_acquire,
		.heartbeat = t_heartbeat,
		.renew = t_renew,
		.release = t_release,
		.break_lock = t_break,
		.inspect = t_inspect,
		.list = t_list,
		/* NULL stays NULL: the filesystem asks whether a backend has them. */
		.confirm = inner->confirm ? t_confirm : NULL,
		.clock = inner->clock ? t_clock : NULL,
		.watch = inner->watch ? t_watch : NULL,
		.held = inner->held ? t_held : NULL,
		.wait_free = inner->wait_free ? t_wait_free : NULL,
		.identity = inner->identity ? t_identity : NULL,
		.session_token = inner->session_token ? t_session_token : NULL,
		.resume = inner->resume ? t_resume : NULL,
		.lease_token = inner->lease_token ? t_lease_token : NULL,
		.adopt = inner->adopt ? t_adopt : NULL,
		.lease_free = t_lease_free,
		.destroy = t_destroy,
	};
	return &t->pub;
}

/* ---- the text ---- */

static void label_value(GString *out, const char *v)
{
	g_autofree char *valid = g_utf8_make_valid(v, -1);
	for (const char *c = valid; *c; c++) {
		if (*c == '\\' || *c == '"')
			g_string_append_c(out, '\\');
		if (*c == '\n')
			g_string_append(out, "\\n");
		else
			g_string_append_c(out, *c);
	}
}

static void family(GString *out, const char *name, const char *type, const char *help)
{
	g_string_append_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* NAME{mount="M"[,EXTRA]} VALUE */
static void sample(GString *out, const metrics_gauges *g, const char *name, const char *extra,
                   const char *value)
{
	g_string_append_printf(out, "%s{mount=\"", name);
	label_value(out, g->mountpoint);
	g_string_append_printf(out, "\"%s%s} %s\n", extra ? "," : "", extra ? extra : "", value);
}

static void counter_sample(GString *out, const metrics_gauges *g, const char *name,
                           const char *extra, metrics_counter c)
{
	char v[32];
	g_snprintf(
	        v, sizeof(v), "%" G_GUINT64_FORMAT,
	        (guint64)atomic_load_explicit(&lockfs_metrics_counters[c], memory_order_relaxed));
	sample(out, g, name, extra, v);
}

static void counter(GString *out, const metrics_gauges *g, const char *name, const char *help,
                    metrics_counter c)
{
	family(out, name, "counter", help);
	counter_sample(out, g, name, NULL, c);
}

static void seconds_text(char *buf, size_t len, double s)
{
	g_ascii_formatd(buf, len, "%.6f", s);
}

/* The mount's identity: backend and version. */
static void render_info(const metrics_gauges *g, GString *out)
{
	g_autoptr(GString) extra = g_string_new(NULL);
	family(out, "lockfs_info", "gauge", "This mount's backend and lockfs version (always 1).");
	g_string_append(extra, "backend=\"");
	label_value(extra, g->backend);
	g_string_append(extra, "\",version=\"" LOCKFS_VERSION "\"");
	sample(out, g, "lockfs_info", extra->str, "1");
}

/* What happened to locks: the counters of metrics_count. */
static void render_lock_counters(const metrics_gauges *g, GString *out)
{
	family(out, "lockfs_acquisitions_total", "counter",
	       "Lock acquisitions by result: granted, held (refused, another holder has it), "
	       "error (the backend failed: EIO).");
	counter_sample(out, g, "lockfs_acquisitions_total", "result=\"granted\"", M_ACQ_GRANTED);
	counter_sample(out, g, "lockfs_acquisitions_total", "result=\"held\"", M_ACQ_HELD);
	counter_sample(out, g, "lockfs_acquisitions_total", "result=\"error\"", M_ACQ_ERROR);
	counter(out, g, "lockfs_releases_total",
	        "Locks of this mount let go by their holder (unlink, or at unmount).", M_RELEASES);
	family(out, "lockfs_breaks_total", "counter",
	       "Locks broken through this mount: by a user's request (unlink by another uid, "
	       ".lockfs/break) or as stale.");
	counter_sample(out, g, "lockfs_breaks_total", "reason=\"request\"", M_BREAK_REQUEST);
	counter_sample(out, g, "lockfs_breaks_total", "reason=\"stale\"", M_BREAK_STALE);
	counter(out, g, "lockfs_losses_total",
	        "Locks of this mount lost: the lease was gone or could not be renewed in time.",
	        M_LOSSES);
	counter(out, g, "lockfs_renewals_total", "Lease renewals that succeeded.", M_RENEWALS);
	counter(out, g, "lockfs_renewal_failures_total", "Lease renewals that failed.",
	        M_RENEW_FAILED);
	counter(out, g, "lockfs_heartbeats_sent_total",
	        "Heartbeats and lock file changes sent to the backend.", M_HB_SENT);
	counter(out, g, "lockfs_heartbeats_skipped_total",
	        "Heartbeats held back by heartbeat_min_interval (sent later with the renewals).",
	        M_HB_SKIPPED);
	counter(out, g, "lockfs_lock_waits_woken_total",
	        "Waiting flock/fcntl requests tried again at once because the backend reported "
	        "a change of their lock (etcd's watch, tinystore's wait in line).",
	        M_WAIT_WATCHED);
}

/* The gauges: locks held, the backend's reachability, renewal age. */
static void render_gauges(const metrics_gauges *g, GString *out)
{
	char v[G_ASCII_DTOSTR_BUF_SIZE];
	family(out, "lockfs_locks_held", "gauge", "Locks held through this mount now.");
	g_snprintf(v, sizeof(v), "%u", g->locks_held);
	sample(out, g, "lockfs_locks_held", NULL, v);
	family(out, "lockfs_backend_reachable", "gauge",
	       "1 when the backend answered its last call, 0 when that call failed (EIO).");
	sample(out, g, "lockfs_backend_reachable", NULL,
	       atomic_load_explicit(&backend_up, memory_order_relaxed) ? "1" : "0");
	family(out, "lockfs_last_renewal_age_seconds", "gauge",
	       "Seconds since the least recently renewed lease held here was renewed or granted "
	       "(0 when none is held, or the backend has no leases); a lease is lost at ttl.");
	seconds_text(v, sizeof(v), g->renewal_age_s);
	sample(out, g, "lockfs_last_renewal_age_seconds", NULL, v);
}

/* Backend calls: failures, and the duration histogram, by operation. */
static void render_backend_calls(const metrics_gauges *g, GString *out)
{
	char v[G_ASCII_DTOSTR_BUF_SIZE];
	g_autoptr(GString) extra = g_string_new(NULL);
	family(out, "lockfs_backend_call_failures_total", "counter",
	       "Backend calls that failed (EIO: unreachable, timed out or refused), by operation.");
	for (int op = 0; op < OPS; op++) {
		g_string_truncate(extra, 0);
		g_string_append_printf(extra, "op=\"%s\"", op_names[op]);
		g_snprintf(v, sizeof(v), "%" G_GUINT64_FORMAT,
		           (guint64)atomic_load_explicit(&failed[op], memory_order_relaxed));
		sample(out, g, "lockfs_backend_call_failures_total", extra->str, v);
	}

	const char *h = "lockfs_backend_call_duration_seconds";
	family(out, h, "histogram", "How long backend calls took, by operation.");
	for (int op = 0; op < OPS; op++) {
		uint64_t cum = 0;
		for (size_t i = 0; i <= BUCKETS; i++) {
			cum += atomic_load_explicit(&hist[op].in[i], memory_order_relaxed);
			char le[G_ASCII_DTOSTR_BUF_SIZE];
			if (i < BUCKETS)
				g_ascii_formatd(le, sizeof(le), "%g", bucket_us[i] / 1e6);
			else
				g_strlcpy(le, "+Inf", sizeof(le));
			g_string_truncate(extra, 0);
			g_string_append_printf(extra, "op=\"%s\",le=\"%s\"", op_names[op], le);
			g_snprintf(v, sizeof(v), "%" G_GUINT64_FORMAT, (guint64)cum);
			g_autofree char *name = g_strconcat(h, "_bucket", NULL);
			sample(out, g, name, extra->str, v);
		}
		g_string_truncate(extra, 0);
		g_string_append_printf(extra, "op=\"%s\"", op_names[op]);
		g_autofree char *sum = g_strconcat(h, "_sum", NULL);
		g_autofree char *count = g_strconcat(h, "_count", NULL);
		seconds_text(v, sizeof(v),
		             atomic_load_explicit(&hist[op].sum_us, memory_order_relaxed) / 1e6);
		sample(out, g, sum, extra->str, v);
		/* From the buckets, so _count equals the +Inf bucket however the
		 * reads interleave with calls. */
		g_snprintf(v, sizeof(v), "%" G_GUINT64_FORMAT, (guint64)cum);
		sample(out, g, count, extra->str, v);
	}
}

void metrics_render(const metrics_gauges *g, GString *out)
{
	render_info(g, out);
	render_lock_counters(g, out);
	render_gauges(g, out);
	render_backend_calls(g, out);
}
