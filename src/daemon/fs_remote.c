/* Locks held through other mounts of a shared backend.  What the backend
 * said of a key is kept for at most list_cache (200 ms by default) so that
 * `ls -l` and `stat` do not ask it once per system call; acquisition never
 * looks here, it always asks the backend.
 *
 * An answer is kept only if it was asked for after this mount last changed
 * the key (took, released or broke it): an inspect sent while this mount
 * held a lock and answered after its release would otherwise be believed
 * for list_cache, showing the lock still held by its old holder here.  A
 * library that decides "mine" by what it reads back (python lockfile's
 * SymlinkLockFile: its own unique name in readlink) would then take that
 * ghost for a grant after its next create's EEXIST, and its release would
 * break whoever really held the name. */
#include "fs_remote.h"
#include "fs_nodes.h"
#include "holder.h"

#include <errno.h>
#include <string.h>

/* A backend that may hold a key before it can describe it
 * (LOCKFS_BACKEND_UNDESCRIBED: tinystore writes a holder record 50 ms after
 * the grant) would have a name refused here look free, or held by nobody,
 * right after the refusal: liblockfile's lstat() after EEXIST, getfattr,
 * .lockfs/.  So for this long after a refusal, an inspect that finds no
 * record asks again, every RECORD_POLL_US, until the record is there; a
 * lock let go before its record was written never gets one, and is free
 * once the window has passed.  The window is the record's delay and the
 * time its write takes on a loaded host. */
#define REFUSED_WINDOW_US (250 * 1000)
#define RECORD_POLL_US (10 * 1000)

typedef struct {
	lockfs_lock_info info; /* valid when r == 0 */
	int r;                 /* 0 held, -ENOENT free, NOTHING: believe nothing */
	int64_t until_mono;    /* believed until then */
	int64_t changed_mono;  /* when this mount last changed the key, or 0 */
	int64_t asked_mono;    /* when the answer was asked */
	int64_t heard_mono;    /* when the backend last said it changed, or 0 */
	int64_t refused_mono;  /* when a take here was last refused, or 0 */
} remote_entry;

#define NOTHING 1
#define CACHE_MAX 100000

static void entry_free(gpointer p)
{
	remote_entry *e = p;
	lockfs_lock_info_clear(&e->info);
	g_free(e);
}

void remote_info_free(gpointer p)
{
	if (!p)
		return;
	lockfs_lock_info_clear(p);
	g_free(p);
}

void remote_info_copy(lockfs_lock_info *dst, const lockfs_lock_info *src)
{
	*dst = *src;
	dst->key = g_strdup(src->key);
	lockfs_holder_copy(&dst->holder, &src->holder);
	dst->content = src->content ? g_memdup2(src->content, src->content_len + 1) : NULL;
}

static void view_free(gpointer p);

void remote_init(lfs *fs)
{
	g_mutex_init(&fs->remote_mu);
	g_cond_init(&fs->remote_watch_cond);
	fs->remote = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, entry_free);
	fs->remote_cleared_mono = 0;
	fs->remote_views = g_ptr_array_new_with_free_func(view_free);
}

void remote_fini(lfs *fs)
{
	g_hash_table_destroy(fs->remote);
	fs->remote = NULL;
	g_ptr_array_free(fs->remote_views, TRUE);
	fs->remote_views = NULL;
	g_clear_pointer(&fs->remote_wait_key, g_free);
	g_mutex_clear(&fs->remote_mu);
	g_cond_clear(&fs->remote_watch_cond);
}

/* Keep what the backend answered to a question asked at ASKED (mono µs):
 * R and INFO, believed for FOR_US.  CHANGED (not 0): this mount changed
 * the key now, which any answer asked before it may not know of. */
static void store_locked(lfs *fs, const char *key, int r, const lockfs_lock_info *info,
                         int64_t for_us, int64_t asked, bool changed)
{
	int64_t now = lockfs_mono_us();
	remote_entry *old = g_hash_table_lookup(fs->remote, key);
	int64_t last_change = old ? old->changed_mono : fs->remote_cleared_mono;
	int64_t heard = MAX(old ? old->heard_mono : 0, fs->remote_heard_mono);
	if (!changed && asked <= MAX(last_change, heard))
		return; /* asked before a change of the key: it may predate it */
	remote_entry *e = g_new0(remote_entry, 1);
	e->r = r;
	e->until_mono = now + for_us;
	e->changed_mono = changed ? now : last_change;
	e->asked_mono = changed ? now : asked;
	e->heard_mono = old ? old->heard_mono : 0;
	e->refused_mono = old ? old->refused_mono : 0;
	if (r == 0)
		remote_info_copy(&e->info, info);
	if (!old && g_hash_table_size(fs->remote) >= CACHE_MAX) {
		/* Bounded: start afresh, and from now on believe no answer asked
		 * before this (the changes it remembered are gone with it). */
		g_hash_table_remove_all(fs->remote);
		fs->remote_cleared_mono = now;
		e->changed_mono = MAX(e->changed_mono, now);
	}
	g_hash_table_replace(fs->remote, g_strdup(key), e);
}

static void store(lfs *fs, const char *key, int r, const lockfs_lock_info *info, int64_t for_us,
                  int64_t asked, bool changed)
{
	g_mutex_lock(&fs->remote_mu);
	store_locked(fs, key, r, info, for_us, asked, changed);
	g_mutex_unlock(&fs->remote_mu);
}

void remote_forget(lfs *fs, const char *key)
{
	if (!fs->shared)
		return;
	store(fs, key, NOTHING, NULL, 0, 0, true);
}

/* ---- the backend's notifications ----
 * A release elsewhere is seen here when the table forgets the key: until
 * then a lookup answers from it, and the kernel's lookup before an O_EXCL
 * create or a link() refuses the name for up to list_cache.  etcd's watch
 * reports a change within one notification.  tinystore has no watch, but a
 * hold that stands in line (wait_free()) is granted the moment a key is let
 * go: the key last refused here or found held by another is waited on for
 * list_cache, as a waiter in line would be (one key: the next takes its
 * place).  LDAP has nothing lockfs can use (lockfs.conf(5), list_cache)
 * and keeps to list_cache.
 * A watch is made again every VIEW_WATCH_MS (so that exit waits no longer
 * than that); what changed between two watches is covered by forgetting
 * everything when the new one is in place. */
#define VIEW_WATCH_MS 1000
#define VIEW_WATCH_PAUSE_US G_USEC_PER_SEC

/* What the table says of KEY (NULL: of every key) is not believed any
 * more, nor any answer asked before now.  Unlike this mount's own changes
 * (changed_mono), a change elsewhere leaves the listings their readers
 * believe alone (remote_view_get): they were true when listed. */
static void on_view_change(const char *key, void *user)
{
	lfs *fs = user;
	int64_t now = lockfs_mono_us();
	g_mutex_lock(&fs->remote_mu);
	if (!key) {
		fs->remote_heard_mono = now;
	} else {
		remote_entry *e = g_hash_table_lookup(fs->remote, key);
		if (!e && g_hash_table_size(fs->remote) < CACHE_MAX) {
			e = g_new0(remote_entry, 1);
			e->changed_mono = fs->remote_cleared_mono;
			g_hash_table_replace(fs->remote, g_strdup(key), e);
		}
		if (e) {
			if (e->r == 0)
				lockfs_lock_info_clear(&e->info);
			e->r = NOTHING;
			e->heard_mono = now;
		} else {
			fs->remote_heard_mono = now; /* the table is full: all of it */
		}
	}
	g_mutex_unlock(&fs->remote_mu);
}

static gpointer view_watch_main(gpointer data)
{
	lfs *fs = data;
	g_mutex_lock(&fs->remote_mu);
	while (!fs->remote_watch_stop) {
		g_mutex_unlock(&fs->remote_mu);
		int64_t began = lockfs_mono_us();
		int r = fs->be->watch(fs->be, "", VIEW_WATCH_MS, on_view_change, fs);
		g_mutex_lock(&fs->remote_mu);
		/* Broken, or ended by the server well before its time: made
		 * again at once, it could spin. */
		if (r || lockfs_mono_us() - began < VIEW_WATCH_MS * 1000 / 2)
			g_cond_wait_until(&fs->remote_watch_cond, &fs->remote_mu,
			                  g_get_monotonic_time() + VIEW_WATCH_PAUSE_US);
	}
	g_mutex_unlock(&fs->remote_mu);
	return NULL;
}

/* KEY, refused here or found held by another at NOW, is the one the view's
 * waiter waits on (view_wait_main).  remote_mu held. */
static void wait_on_locked(lfs *fs, const char *key, int64_t now)
{
	if (!fs->remote_watcher || fs->be->watch)
		return;
	fs->remote_wait_until = now + fs->set->list_cache_ms * 1000;
	/* The same key: the waiter is on it, and sees the new time when its
	 * wait ends (at most VIEW_WATCH_MS); no wake-up per lookup. */
	if (g_strcmp0(fs->remote_wait_key, key) == 0)
		return;
	g_free(fs->remote_wait_key);
	fs->remote_wait_key = g_strdup(key);
	g_cond_signal(&fs->remote_watch_cond);
}

/* The key refused or found held last, until it is found free or
 * list_cache has passed (the view asks the backend again then anyway). */
static gpointer view_wait_main(gpointer data)
{
	lfs *fs = data;
	g_mutex_lock(&fs->remote_mu);
	while (!fs->remote_watch_stop) {
		int64_t now = lockfs_mono_us();
		if (!fs->remote_wait_key || now >= fs->remote_wait_until) {
			g_clear_pointer(&fs->remote_wait_key, g_free);
			g_cond_wait(&fs->remote_watch_cond, &fs->remote_mu);
			continue;
		}
		char *key = g_strdup(fs->remote_wait_key);
		int ms = (int)MIN((fs->remote_wait_until - now) / 1000 + 1, VIEW_WATCH_MS);
		g_mutex_unlock(&fs->remote_mu);
		int r = fs->be->wait_free(fs->be, key, ms);
		if (r == 1)
			on_view_change(key, fs);
		g_mutex_lock(&fs->remote_mu);
		if (r == 1 && g_strcmp0(key, fs->remote_wait_key) == 0)
			g_clear_pointer(&fs->remote_wait_key, g_free);
		if (r < 0)
			g_cond_wait_until(&fs->remote_watch_cond, &fs->remote_mu,
			                  g_get_monotonic_time() + VIEW_WATCH_PAUSE_US);
		g_free(key);
	}
	g_mutex_unlock(&fs->remote_mu);
	return NULL;
}

void remote_watch_start(lfs *fs)
{
	if (!fs->shared || fs->set->list_cache_ms <= 0)
		return;
	if (fs->be->watch)
		fs->remote_watcher = g_thread_new("lockfs-view", view_watch_main, fs);
	else if (fs->be->wait_free && (fs->be->flags & LOCKFS_BACKEND_UNDESCRIBED))
		fs->remote_watcher = g_thread_new("lockfs-view", view_wait_main, fs);
}

void remote_watch_stop(lfs *fs)
{
	if (!fs->remote_watcher)
		return;
	g_mutex_lock(&fs->remote_mu);
	fs->remote_watch_stop = true;
	g_cond_signal(&fs->remote_watch_cond);
	g_mutex_unlock(&fs->remote_mu);
	g_thread_join(fs->remote_watcher);
	fs->remote_watcher = NULL;
}

/* A key held, but nobody says by whom (the tinystore CLI's locks, a holder
 * record not written in time): a fresh lock of an unknown holder, with no
 * age to break it by.  Shown only where nothing better can be said: held
 * past the window with no record, or a create that must open what it
 * found taken (lfs_create). */
static void unknown_holder(lockfs_lock_info *info, const char *key)
{
	memset(info, 0, sizeof(*info));
	info->key = g_strdup(key);
	info->state = LOCKFS_STATE_HELD;
	info->lease_left_ms = -1;
	info->holder.mode = S_IFREG | 0644;
	info->holder.acquired_us = info->holder.heartbeat_us = lockfs_now_us();
}

/* KEY was found free after a refusal: no record is waited for any more. */
static void end_refused(lfs *fs, const char *key)
{
	g_mutex_lock(&fs->remote_mu);
	remote_entry *e = g_hash_table_lookup(fs->remote, key);
	if (e)
		e->refused_mono = 0;
	g_mutex_unlock(&fs->remote_mu);
}

/* Until when an inspect of KEY that finds no record must ask again (mono
 * µs; 0: it need not), see REFUSED_WINDOW_US. */
static int64_t refused_until(lfs *fs, const char *key)
{
	if (!(fs->be->flags & LOCKFS_BACKEND_UNDESCRIBED))
		return 0;
	g_mutex_lock(&fs->remote_mu);
	remote_entry *e = g_hash_table_lookup(fs->remote, key);
	int64_t at = e ? e->refused_mono : 0;
	g_mutex_unlock(&fs->remote_mu);
	return at ? at + REFUSED_WINDOW_US : 0;
}

int remote_get(lfs *fs, const char *key, bool fresh, lockfs_lock_info *out)
{
	if (!fs->shared)
		return -ENOENT;
	if (!fresh) {
		int r = 1;
		g_mutex_lock(&fs->remote_mu);
		remote_entry *e = g_hash_table_lookup(fs->remote, key);
		if (e && e->r != NOTHING && lockfs_mono_us() < e->until_mono &&
		    e->asked_mono > fs->remote_heard_mono) {
			r = e->r;
			if (r == 0)
				remote_info_copy(out, &e->info);
		}
		g_mutex_unlock(&fs->remote_mu);
		if (r != 1)
			return r;
	}
	lockfs_lock_info info;
	memset(&info, 0, sizeof(info));
	int64_t asked, until = refused_until(fs, key), for_us = fs->set->list_cache_ms * 1000;
	int r;
	for (;;) {
		asked = lockfs_mono_us();
		r = fs->be->inspect(fs->be, key, &info);
		if (r != -ENOENT || asked >= until)
			break;
		/* No record yet, a moment after a refusal here: held, not yet
		 * described, or let go?  The lock service itself says
		 * (held(): tinystore's look stands in line for the key, so a
		 * release is known the moment it happens); else ask the record
		 * again shortly.  Both bounded by the window. */
		int h = fs->be->held ? fs->be->held(fs->be, key, 0) : 1;
		if (h < 0) {
			r = -EIO;
			break;
		}
		if (h == 0) { /* free: no record will come */
			end_refused(fs, key);
			break;
		}
		if (lockfs_mono_us() + RECORD_POLL_US >= until) {
			/* Held all this time and still no record (its write
			 * failed, or a client without records holds it): held
			 * by someone nobody names, believed only briefly. */
			unknown_holder(&info, key);
			r = 0;
			for_us = MIN(for_us, RECORD_POLL_US);
			break;
		}
		if (!fs->be->held)
			g_usleep(RECORD_POLL_US);
	}
	if (r != 0 && r != -ENOENT)
		return -EIO;
	g_mutex_lock(&fs->remote_mu);
	store_locked(fs, key, r, &info, for_us, asked, false);
	if (r == 0)
		wait_on_locked(fs, key, asked);
	g_mutex_unlock(&fs->remote_mu);
	if (r == 0)
		*out = info;
	return r;
}

void remote_note_free(lfs *fs, const char *key)
{
	if (fs->shared)
		store(fs, key, -ENOENT, NULL, fs->set->list_cache_ms * 1000, 0, true);
}

void remote_note_refused(lfs *fs, const char *key)
{
	if (!fs->shared || !(fs->be->flags & LOCKFS_BACKEND_UNDESCRIBED))
		return;
	/* Every inspection from now on waits for the holder's record rather
	 * than show the name free or held by nobody (REFUSED_WINDOW_US): the
	 * tool's lstat() right after EEXIST must find the lock it waits for
	 * (liblockfile gives up after six ENOENTs in a row, and unlinks a
	 * name whose stat fails).  Nothing is believed of the key until then:
	 * an answer asked before the refusal may predate the grant. */
	g_mutex_lock(&fs->remote_mu);
	store_locked(fs, key, NOTHING, NULL, 0, 0, true);
	remote_entry *e = g_hash_table_lookup(fs->remote, key);
	int64_t now = lockfs_mono_us();
	if (e)
		e->refused_mono = now;
	wait_on_locked(fs, key, now);
	g_mutex_unlock(&fs->remote_mu);
}

lfs_node *remote_node_refused(lfs *fs, const char *key)
{
	lockfs_lock_info info;
	unknown_holder(&info, key);
	lfs_node *n = remote_node_new(fs, &info);
	lockfs_lock_info_clear(&info);
	return n;
}

static void collect(const lockfs_lock_info *info, void *user)
{
	lockfs_lock_info *copy = g_new0(lockfs_lock_info, 1);
	remote_info_copy(copy, info);
	g_ptr_array_add(user, copy);
}

GPtrArray *remote_list(lfs *fs, const char *prefix, int *err)
{
	GPtrArray *out = g_ptr_array_new_with_free_func(remote_info_free);
	if (err)
		*err = 0;
	if (!fs->shared)
		return out;
	int64_t asked = lockfs_mono_us();
	if (fs->be->list(fs->be, prefix, collect, out) != 0) {
		/* Nothing of a listing that failed: a name it named, which no
		 * lookup could then confirm, would show as `?` in ls -l. */
		g_ptr_array_set_size(out, 0);
		if (err)
			*err = -EIO;
		return out;
	}
	g_mutex_lock(&fs->remote_mu);
	for (guint i = 0; i < out->len;) {
		lockfs_lock_info *info = out->pdata[i];
		store_locked(fs, info->key, 0, info, fs->set->list_cache_ms * 1000, asked, false);
		/* Asked before this mount let the lock go: lookups believe
		 * that release now (remote_note_free), so the listing leaves
		 * it out rather than name what they deny. */
		remote_entry *e = g_hash_table_lookup(fs->remote, info->key);
		if (e && e->r == -ENOENT && e->changed_mono >= asked &&
		    lockfs_mono_us() < e->until_mono)
			g_ptr_array_remove_index(out, i);
		else
			i++;
	}
	g_mutex_unlock(&fs->remote_mu);
	return out;
}

/* What one listing (readdir) showed the process that read it: that
 * process's lookups of those names believe it while its directory handle is
 * open and for list_cache after the close, so that `ls -l` never stats a
 * name it was just shown into ENOENT, however long the listing takes or
 * however late the lister is scheduled; at most VIEW_MAX_US after the
 * listing, and never past a change this mount made of the key since (what
 * remote_get would not believe either).  Other processes go on
 * with list_cache: a take elsewhere still sees a release within it. */
#define VIEW_MAX_US (5 * G_USEC_PER_SEC)

struct remote_view {
	pid_t tgid;
	int64_t asked_mono; /* when the listing was asked for */
	int64_t until_mono; /* once closed: believed until then */
	bool closed;        /* its directory handle is gone: freed once past until */
	GHashTable *infos;  /* key -> lockfs_lock_info * */
};

static void view_free(gpointer p)
{
	remote_view *v = p;
	g_hash_table_destroy(v->infos);
	g_free(v);
}

/* Drop the views of closed handles that nobody believes any more.
 * remote_mu held. */
static void views_prune(lfs *fs, int64_t now)
{
	for (guint i = 0; i < fs->remote_views->len;) {
		remote_view *v = fs->remote_views->pdata[i];
		if (v->closed && (now >= v->until_mono || now >= v->asked_mono + VIEW_MAX_US))
			g_ptr_array_remove_index_fast(fs->remote_views, i);
		else
			i++;
	}
}

remote_view *remote_view_new(lfs *fs, pid_t tgid, int64_t asked, const GPtrArray *infos)
{
	if (!fs->shared || !infos->len)
		return NULL;
	remote_view *v = g_new0(remote_view, 1);
	v->tgid = tgid;
	v->asked_mono = asked;
	v->infos = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, remote_info_free);
	for (guint i = 0; i < infos->len; i++) {
		const lockfs_lock_info *info = infos->pdata[i];
		lockfs_lock_info *copy = g_new0(lockfs_lock_info, 1);
		remote_info_copy(copy, info);
		g_hash_table_replace(v->infos, copy->key, copy);
	}
	int64_t now = lockfs_mono_us();
	g_mutex_lock(&fs->remote_mu);
	views_prune(fs, now);
	g_ptr_array_add(fs->remote_views, v);
	g_mutex_unlock(&fs->remote_mu);
	return v;
}

void remote_view_close(lfs *fs, remote_view *v)
{
	if (!v)
		return;
	g_mutex_lock(&fs->remote_mu);
	v->until_mono = lockfs_mono_us() + fs->set->list_cache_ms * 1000;
	v->closed = true;
	g_mutex_unlock(&fs->remote_mu);
}

int remote_view_get(lfs *fs, pid_t tgid, const char *key, lockfs_lock_info *out)
{
	if (!fs->shared)
		return -ENOENT;
	int r = -ENOENT;
	int64_t now = lockfs_mono_us();
	g_mutex_lock(&fs->remote_mu);
	remote_entry *e = g_hash_table_lookup(fs->remote, key);
	int64_t changed = e ? e->changed_mono : fs->remote_cleared_mono;
	for (guint i = fs->remote_views->len; r && i-- > 0;) {
		remote_view *v = fs->remote_views->pdata[i];
		const lockfs_lock_info *info;
		if (v->tgid != tgid || (v->closed && now >= v->until_mono) ||
		    now >= v->asked_mono + VIEW_MAX_US || v->asked_mono <= changed ||
		    !(info = g_hash_table_lookup(v->infos, key)))
			continue;
		remote_info_copy(out, info);
		r = 0;
	}
	g_mutex_unlock(&fs->remote_mu);
	return r;
}

uint64_t remote_ino(const char *key)
{
	/* FNV-1a: a stable number per key, so readdir and stat agree; the top
	 * bit keeps it clear of memory and disk inode numbers. */
	uint64_t h = 0xcbf29ce484222325ull;
	for (const unsigned char *p = (const unsigned char *)key; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return h | (1ull << 63);
}

static struct timespec ts_of(int64_t us)
{
	int64_t s = us / G_USEC_PER_SEC, rest = us % G_USEC_PER_SEC;
	if (rest < 0) {
		s--;
		rest += G_USEC_PER_SEC;
	}
	return (struct timespec){ s, rest * 1000 };
}

lfs_node *remote_node_new(lfs *fs, const lockfs_lock_info *info)
{
	mode_t mode = info->holder.mode ? info->holder.mode : (S_IFREG | 0644);
	/* A holder nobody names (unknown_holder) is shown as the mount's
	 * own user's, not root's: an unprivileged mount's users may open it, as
	 * they could once its record names them. */
	bool named = info->holder.host != NULL;
	lfs_node *n = node_new(fs, NODE_MEM, mode, named ? info->holder.uid : getuid(),
	                       named ? info->holder.gid : getgid());
	n->st_ino = remote_ino(info->key);
	n->remote = g_new0(lockfs_lock_info, 1);
	remote_info_copy(n->remote, info);
	n->nlink = S_ISDIR(mode) ? 2 : 1;
	if (info->content) {
		n->data = g_memdup2(info->content, info->content_len + 1);
		n->size = n->cap = info->content_len;
	}
	/* The times its holder's mount shows: set ones where recorded, else
	 * the last heartbeat (mtime, ctime) and the acquisition (atime). */
	const lockfs_holder *h = &info->holder;
	n->mtime = ts_of(h->mtime_us ? h->mtime_us : h->heartbeat_us);
	n->ctime = ts_of(h->ctime_us ? h->ctime_us : h->heartbeat_us);
	n->atime = ts_of(h->atime_us ? h->atime_us : h->acquired_us);
	return n;
}
