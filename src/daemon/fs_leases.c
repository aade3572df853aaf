/* Renewing the leases of backends whose grants are leases: a thread wakes
 * often enough to renew each lease every renew interval and to declare a
 * lease lost before the backend could give the lock to anyone else. */
#include "fs_leases.h"
#include "fs_locks.h"
#include "holder.h"

static gpointer renew_main(gpointer data)
{
	lfs *fs = data;
	/* Renewals are queued every tick, a quarter of the renew interval
	 * (at most a second) ... */
	int64_t tick = MIN(fs->set->renew_ms * 1000 / 4, G_USEC_PER_SEC);
	int64_t due = 0;
	g_mutex_lock(&fs->renew_mu);
	while (!fs->renew_stop) {
		/* ... and wakes at the next deadline itself when that comes
		 * sooner: a loss is then declared as it falls due, not up to a
		 * tick later (which a loaded machine only lengthens). */
		int64_t now = lockfs_mono_us();
		int64_t until = MIN(now + tick, MAX(due, now + 1000));
		while (!fs->renew_stop &&
		       lockfs_cond_wait_until(&fs->renew_cond, &fs->renew_mu, until))
			;
		if (fs->renew_stop)
			break;
		g_mutex_unlock(&fs->renew_mu);
		pthread_mutex_lock(&fs->mu);
		due = locks_renew_due(fs);
		pthread_mutex_unlock(&fs->mu);
		g_mutex_lock(&fs->renew_mu);
	}
	g_mutex_unlock(&fs->renew_mu);
	return NULL;
}

void leases_start(lfs *fs)
{
	if (!(fs->be->flags & LOCKFS_BACKEND_LEASES) || fs->renew_thread)
		return;
	fs->renew_thread = g_thread_new("lockfs-renew", renew_main, fs);
}

void leases_stop(lfs *fs)
{
	if (!fs->renew_thread)
		return;
	g_mutex_lock(&fs->renew_mu);
	fs->renew_stop = true;
	g_cond_broadcast(&fs->renew_cond);
	g_mutex_unlock(&fs->renew_mu);
	g_thread_join(fs->renew_thread);
	fs->renew_thread = NULL;
	locks_renew_stop(fs);
}
