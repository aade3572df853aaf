/* Force-included (-include) in a ThreadSanitizer build only (meson.build:
 * b_sanitize=thread).  GLib's GMutex and GCond sit on raw futexes, which
 * ThreadSanitizer does not intercept, so it would take data guarded by a
 * GMutex for racy.  These wrappers tell it that each GMutex is a lock:
 * acquire after taking it, release before letting it go (a condition wait
 * lets go and takes back).  g_once_init_leave's store happens inside GLib,
 * uninstrumented, so it is paired the same way.  Normal builds never see
 * this file. */
#ifndef LOCKFS_TSAN_GLIB_H
#define LOCKFS_TSAN_GLIB_H

#include <glib.h>

void __tsan_acquire(void *addr);
void __tsan_release(void *addr);

static inline void lockfs_tsan_mutex_lock(GMutex *m)
{
	(g_mutex_lock)(m);
	__tsan_acquire(m);
}

static inline gboolean lockfs_tsan_mutex_trylock(GMutex *m)
{
	gboolean got = (g_mutex_trylock)(m);

	if (got)
		__tsan_acquire(m);
	return got;
}

static inline void lockfs_tsan_mutex_unlock(GMutex *m)
{
	__tsan_release(m);
	(g_mutex_unlock)(m);
}

static inline void lockfs_tsan_cond_wait(GCond *c, GMutex *m)
{
	__tsan_release(m);
	(g_cond_wait)(c, m);
	__tsan_acquire(m);
}

static inline gboolean lockfs_tsan_cond_wait_until(GCond *c, GMutex *m, gint64 end)
{
	gboolean woken;

	__tsan_release(m);
	woken = (g_cond_wait_until)(c, m, end);
	__tsan_acquire(m);
	return woken;
}

static inline void lockfs_tsan_rec_mutex_lock(GRecMutex *m)
{
	(g_rec_mutex_lock)(m);
	__tsan_acquire(m);
}

static inline void lockfs_tsan_rec_mutex_unlock(GRecMutex *m)
{
	__tsan_release(m);
	(g_rec_mutex_unlock)(m);
}

#define g_mutex_lock(m) lockfs_tsan_mutex_lock(m)
#define g_mutex_trylock(m) lockfs_tsan_mutex_trylock(m)
#define g_mutex_unlock(m) lockfs_tsan_mutex_unlock(m)
#define g_cond_wait(c, m) lockfs_tsan_cond_wait((c), (m))
#define g_cond_wait_until(c, m, e) lockfs_tsan_cond_wait_until((c), (m), (e))
#define g_rec_mutex_lock(m) lockfs_tsan_rec_mutex_lock(m)
#define g_rec_mutex_unlock(m) lockfs_tsan_rec_mutex_unlock(m)

/* The initialiser's writes happen before g_once_init_leave publishes the
 * value; a later g_once_init_enter that finds it set reads it with an
 * (instrumented) atomic load, which has no release to pair with. */
#undef g_once_init_enter
#define g_once_init_enter(location)                                                    \
	({                                                                             \
		gboolean lockfs_tsan_first_ = (g_once_init_enter)((void *)(location)); \
		if (!lockfs_tsan_first_)                                               \
			__tsan_acquire((void *)(location));                            \
		lockfs_tsan_first_;                                                    \
	})
#undef g_once_init_leave
#define g_once_init_leave(location, result)                       \
	({                                                        \
		__tsan_release((void *)(location));               \
		(g_once_init_leave)((location), (gsize)(result)); \
	})

/* GLib's queues hand data between threads under GLib's own lock.  A push
 * releases the queue inside that lock (after GLib's writes), so the thread
 * whose pop it feeds acquires everything written before the push. */
static inline void lockfs_tsan_async_queue_push(GAsyncQueue *q, gpointer data)
{
	g_async_queue_lock(q);
	__tsan_acquire(q);
	g_async_queue_push_unlocked(q, data);
	__tsan_release(q);
	g_async_queue_unlock(q);
}

static inline gpointer lockfs_tsan_async_queue_pop(GAsyncQueue *q)
{
	gpointer data = (g_async_queue_pop)(q);

	__tsan_acquire(q);
	return data;
}

#define g_async_queue_push(q, d) lockfs_tsan_async_queue_push((q), (d))
#define g_async_queue_pop(q) lockfs_tsan_async_queue_pop(q)

/* A thread pool's worker runs lockfs_tsan_pool_run, which acquires what
 * each push released and releases, when done, what g_thread_pool_free
 * (waiting) acquires.  The struct lives as long as the process (TSan builds
 * only). */
typedef struct {
	GFunc func;
	gpointer user_data;
} lockfs_tsan_pool;

/* What a push releases to the worker, and what the workers release when
 * done: per file, as are the pools' run and free here.  Not in the pool,
 * nor found through it: its last worker frees the GThreadPool inside
 * g_thread_pool_free, and any read of it here would be (to TSan) racy. */
__attribute__((unused)) static char lockfs_tsan_pool_pushed;
__attribute__((unused)) static char lockfs_tsan_pool_done;

static inline void lockfs_tsan_pool_run(gpointer data, gpointer user_data)
{
	lockfs_tsan_pool *p = user_data;

	__tsan_acquire(&lockfs_tsan_pool_pushed);
	p->func(data, p->user_data);
	__tsan_release(&lockfs_tsan_pool_done);
}

static inline GThreadPool *lockfs_tsan_pool_new(GFunc func, gpointer user_data, gint max,
                                                gboolean excl, GError **error)
{
	lockfs_tsan_pool *p = g_new0(lockfs_tsan_pool, 1);

	p->func = func;
	p->user_data = user_data;
	return (g_thread_pool_new)(lockfs_tsan_pool_run, p, max, excl, error);
}

static inline gboolean lockfs_tsan_pool_push(GThreadPool *pool, gpointer data, GError **error)
{
	__tsan_release(&lockfs_tsan_pool_pushed);
	return (g_thread_pool_push)(pool, data, error);
}

static inline void lockfs_tsan_pool_free(GThreadPool *pool, gboolean now, gboolean wait)
{
	(g_thread_pool_free)(pool, now, wait);
	if (wait)
		__tsan_acquire(&lockfs_tsan_pool_done);
}

#define g_thread_pool_new(f, u, m, e, err) lockfs_tsan_pool_new((f), (u), (m), (e), (err))
#define g_thread_pool_push(p, d, err) lockfs_tsan_pool_push((p), (d), (err))
#define g_thread_pool_free(p, n, w) lockfs_tsan_pool_free((p), (n), (w))

/* G_DEFINE_QUARK's getter sets its static without synchronisation (two
 * threads may both set it, to the same value): an atomic here. */
#undef G_DEFINE_QUARK
#define G_DEFINE_QUARK(QN, q_n)                                    \
	GQuark q_n##_quark(void)                                   \
	{                                                          \
		static GQuark q;                                   \
		GQuark v = __atomic_load_n(&q, __ATOMIC_ACQUIRE);  \
		if (G_UNLIKELY(v == 0)) {                          \
			v = g_quark_from_static_string(#QN);       \
			__atomic_store_n(&q, v, __ATOMIC_RELEASE); \
		}                                                  \
		return v;                                          \
	}

#endif
