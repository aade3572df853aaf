/* The record of this mount's locks in state_dir (lockstate.h), kept as
 * grants, heartbeats and releases happen, for a restart of lockfs to take
 * them back (fs_restart.c).  It owns fs->state, fs->state_failing and
 * fs->session, all under fs->mu. */
#include "fs_record.h"
#include "lockstate.h"
#include "log.h"

#include <string.h>

static int64_t us_of(struct timespec ts)
{
	return (int64_t)ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

/* D's record as it stands (fs->mu held); the strings are borrowed from D. */
static void rec_of(lfs *fs, lfs_dentry *d, lockfs_lockrec *rec)
{
	(void)fs;
	lfs_node *n = d->node;
	memset(rec, 0, sizeof(*rec));
	rec->serial = d->serial;
	rec->key = d->lease->key;
	g_strlcpy(rec->fence, d->lease->fence, sizeof(rec->fence));
	rec->token = d->token;
	rec->holder = d->holder;
	rec->holder.heartbeat_us = d->heartbeat_us;
	rec->holder.mode = n->mode;
	rec->holder.uid = n->uid;
	rec->holder.gid = n->gid;
	rec->holder.mtime_us = us_of(n->mtime);
	rec->holder.atime_us = us_of(n->atime);
	rec->holder.ctime_us = us_of(n->ctime);
	rec->ppid = d->holder_ppid;
	rec->start = d->holder_start;
	if (n->kind == NODE_MEM && (S_ISREG(n->mode) || S_ISLNK(n->mode)) && n->size) {
		rec->content = n->data;
		rec->content_len = MIN(n->size, (size_t)LOCKFS_CONTENT_MAX);
	}
}

/* A write of the record failed, or worked again: said once each way. */
static void state_failed(lfs *fs, int r)
{
	if (r && !fs->state_failing)
		lockfs_log(G_LOG_LEVEL_WARNING, NULL,
		           "cannot write the lock record %s: %s; a restart of lockfs would not "
		           "take back the locks granted meanwhile (free space in state_dir)",
		           lockfs_lockstate_file(fs->state), g_strerror(-r));
	else if (!r && fs->state_failing)
		lockfs_log(G_LOG_LEVEL_INFO, NULL, "the lock record %s is written again",
		           lockfs_lockstate_file(fs->state));
	fs->state_failing = r != 0;
}

/* Rewrite the record whole, from what is held now (fs->mu held). */
void record_rewrite(lfs *fs)
{
	g_autoptr(GPtrArray) recs = g_ptr_array_new_with_free_func(g_free);
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, fs->held);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		lockfs_lockrec *rec = g_new(lockfs_lockrec, 1);
		rec_of(fs, v, rec);
		g_ptr_array_add(recs, rec);
	}
	state_failed(fs, lockfs_lockstate_rewrite(fs->state, recs, fs->session));
}

/* ... once the appended lines outgrow the locks they describe. */
static void maybe_rewrite(lfs *fs)
{
	if (lockfs_lockstate_wants_rewrite(fs->state, g_hash_table_size(fs->held)))
		record_rewrite(fs);
}

int record_lock(lfs *fs, lfs_dentry *d)
{
	if (!fs->state || !d->lease)
		return 0;
	lockfs_lockrec rec;
	rec_of(fs, d, &rec);
	int r = lockfs_lockstate_grant(fs->state, &rec);
	state_failed(fs, r);
	if (!r)
		maybe_rewrite(fs);
	return r;
}

void record_forget(lfs *fs, lfs_dentry *d)
{
	if (!fs->state || !d->serial)
		return;
	state_failed(fs, lockfs_lockstate_release(fs->state, d->serial));
	maybe_rewrite(fs);
}

/* After a grant, without fs->mu: LEASE's token, and the session's if it is
 * new (a backend makes its session at its first grant). */
char *record_token(lfs *fs, lockfs_lease *lease, char **session)
{
	*session = NULL;
	if (!fs->state || !fs->be->lease_token)
		return NULL;
	g_autoptr(GString) t = g_string_new(NULL);
	if (fs->be->lease_token(fs->be, lease, t) != 0)
		return NULL;
	if (fs->be->session_token) {
		g_autoptr(GString) s = g_string_new(NULL);
		if (fs->be->session_token(fs->be, s) == 0)
			*session = g_strdup(s->str);
	}
	return g_strdup(t->str);
}

/* The session SESSION (record_token's, owned) is recorded (fs->mu held). */
void record_session(lfs *fs, char *session)
{
	if (!session || (fs->session && strcmp(fs->session, session) == 0)) {
		g_free(session);
		return;
	}
	g_free(fs->session);
	fs->session = session;
	state_failed(fs, lockfs_lockstate_session(fs->state, session));
}

/* The record STATE (NULL: none kept) is this mount's, before the mount. */
void record_attach(lfs *fs, struct lockfs_lockstate *state)
{
	fs->state = state;
}

/* The file of the record, for the log. */
const char *record_file(lfs *fs)
{
	return lockfs_lockstate_file(fs->state);
}

/* The record starts anew, with this lockfs's header and no lock (fs->mu held). */
void record_start_anew(lfs *fs)
{
	state_failed(fs, lockfs_lockstate_rewrite(fs->state, NULL, NULL));
}

/* The previous lockfs's session SESSION carries on here: the next
 * rewrite records it (fs->mu held). */
void record_session_resumed(lfs *fs, const char *session)
{
	fs->session = g_strdup(session);
}
