/* Renewing the leases of backends whose grants are leases: a thread wakes
 * often enough to renew each lease every renew interval and to declare a
 * lease lost before the backend could give the lock to anyone else. */
#include "fs.h"
#include "holder.h"

static gpointer renew_main(gpointer data)
{
	lfs *fs = data;
	/* A quarter of the renew interval, at most a second: the lost deadline
	 * (ttl less a fifth) is then never missed by more than that. */
	int64_t tick = MIN(fs->set->renew_ms * 1000 / 4, G_USEC_PER_SEC);
	g_mutex_lock(&fs->renew_mu);
	while (!fs->renew_stop) {
		int64_t until = g_get_monotonic_time() + tick;
		while (!fs->renew_stop && g_cond_wait_until(&fs->renew_cond, &fs->renew_mu, until))
			;
		if (fs->renew_stop)
			break;
		g_mutex_unlock(&fs->renew_mu);
		pthread_mutex_lock(&fs->mu);
		locks_renew_due(fs);
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
