/* The FUSE low-level operations.  Each takes fs->mu, works on the model
 * (fs_nodes.c), hands lock names to fs_locks.c and disk names to the
 * directory underneath, and replies after letting go of the mutex. */
#include "fs_ops.h"
#include "fs_break.h"
#include "fs_caller.h"
#include "fs_control.h"
#include "fs_disk.h"
#include "fs_flock.h"
#include "fs_inval.h"
#include "fs_locks.h"
#include "fs_nodes.h"
#include "fs_remote.h"
#include "fs_rules.h"
#include "fs_xattr.h"
#include "holder.h"
#include "log.h"
#include "metrics.h"
#include "view_format.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

/* Ordinary in-memory files are bounded so a runaway writer cannot eat the
 * host's memory; lock files hold what tools write (a pid). */
#define MEM_FILE_MAX (64u << 20)

/* An explicit mtime at most this far behind now is a heartbeat (utimes
 * with the current time, read a moment earlier). */
#define EXPLICIT_BEAT_US (5 * G_USEC_PER_SEC)

typedef struct {
	lfs_node *n;
	int fd;     /* disk nodes */
	char *snap; /* control files: content rendered at open */
	size_t snap_len;
	/* Made by this open, without O_EXCL, a lock name (flock(1)'s open):
	 * the grant's serial.  It goes with the flock or POSIX lock taken
	 * through it. */
	uint64_t made_serial;
	/* A POSIX lock was asked for through this handle (under fs->mu). */
	bool posix_asked;
	/* Opened for writing by a create that found the lock name taken: the
	 * content is the holder's, not this opener's (lfs_create). */
	bool found_taken;
	/* References (atomic): the open file description's, and one for each
	 * request using the handle right now.  A process killed during a
	 * read leaves the READ in a worker while its close sends the RELEASE:
	 * the handle, its descriptor and its node stay until both are done. */
	gint refs;
} lfs_handle;

/* A directory listing, made at opendir so that offsets stay meaningful
 * while names come and go.  Memory nodes are pinned (opens) until
 * releasedir so readdirplus can hand them to the kernel. */
typedef struct {
	char *name;
	uint64_t ino;
	mode_t mode; /* type bits */
	lfs_node *node;
} lfs_dirent;

typedef struct {
	GArray *ents;      /* lfs_dirent */
	lfs_node *dir;     /* pinned too */
	remote_view *view; /* other mounts' locks listed, as its reader saw them */
} lfs_dirlist;

#define LOCK(fs) pthread_mutex_lock(&(fs)->mu)
#define UNLOCK(fs) pthread_mutex_unlock(&(fs)->mu)

static lfs *F(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Whether the kernel leaves the caller's umask to lockfs (FUSE_DONT_MASK):
 * then the modes of MKNOD, MKDIR and CREATE come unmasked, with the umask
 * beside them, so that a disk file is made as the disk itself would make
 * it -- the umask where the directory has no default ACL, the ACL where it
 * has one (the kernel cannot tell from here which applies). */
static bool dont_mask;

/* The caller's umask for a create, fs->mu held. */
static mode_t umask_of(fuse_req_t req)
{
	return dont_mask ? fuse_req_ctx(req)->umask & 0777 : 0;
}

/* Make this thread's umask its own (CLONE_FS), once: a create sets it to
 * the caller's while it runs, and lockfs's own (022 from a root shell or
 * systemd) must not be applied on top of the caller's; other threads of
 * lockfs (state files, logs) keep the process's. */
static bool own_umask(void)
{
	static __thread int own; /* 0 not tried, 1 own, -1 failed */
	if (!own) {
		own = unshare(CLONE_FS) == 0 ? 1 : -1;
		if (own < 0)
			g_warning("unshare(CLONE_FS): %s; files made through passthrough get "
			          "lockfs's umask too",
			          g_strerror(errno));
	}
	return own > 0;
}

/* Count a kernel reference and fill the reply; every timeout is 0. */
static int make_entry(lfs *fs, lfs_node *n, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	int r = node_getattr(fs, n, &e->attr);
	if (r)
		return r;
	e->ino = node_id(fs, n);
	e->generation = 1;
	e->attr_timeout = n->kind == NODE_CONTROL ? 0 : fs->attr_timeout;
	/* A file that kept its other name when a lock name of it went is
	 * looked up at every path to it: the kernel's own link count of it
	 * may be one short (inval_other_name), and only a lookup mends it before
	 * the next link(2) from that name (ln TMP L.lock, again and again). */
	e->entry_timeout = n->kind == NODE_CONTROL || n->relinked ? 0 : fs->entry_timeout;
	n->nlookup++;
	return 0;
}

/* Reply with an entry; a reply that did not reach the kernel (interrupted)
 * gives back the reference make_entry counted. */
static void reply_entry(fuse_req_t req, lfs *fs, lfs_node *n, const struct fuse_entry_param *e)
{
	if (fuse_reply_entry(req, e) != 0) {
		LOCK(fs);
		n->nlookup--;
		node_maybe_free(fs, n);
		UNLOCK(fs);
	}
}

static double attr_timeout_of(lfs *fs, lfs_node *n)
{
	return n->kind == NODE_CONTROL ? 0 : fs->attr_timeout;
}

static int check_name(const char *name)
{
	size_t len = strlen(name);
	if (len > NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* Whether KEY, found held as INFO, is not shown to C because C is the
 * holder this mount lost it from (lookup_remote says why); fs->mu held. */
static bool lost_holder_blind(lfs *fs, const char *key, const lockfs_lock_info *info,
                              const struct lfs_caller *c)
{
	const lockfs_lock_info *lost = locks_late_info(fs, key);
	if (!lost || !rules_is_holder(c, lost->holder.uid))
		return false;
	return (lost->fence[0] && strcmp(lost->fence, info->fence) == 0) ||
	       locks_lost_by_family(fs, key, c);
}

/* A lock name not held here: held through another mount?  A stale one is
 * not shown, so that the acquisition that follows reaches the backend,
 * which breaks it by its own protocol.
 *
 * A name whose lock this mount lost lately, asked about by its holder's uid,
 * is not shown when it was taken here again while the lookup waited (for
 * the key's acquisition, or for the backend): the lookup began while the
 * name was free here and may take effect then, before the grant.  It comes
 * from the holder's late release -- the rm after its critical section,
 * retried while the backend was away -- and answering with the new lock
 * would have that rm release the next holder's lock.  For the same reason
 * such a lookup is ENOENT, not EIO, while the backend does not answer: the
 * unlink would answer ENOENT anyway (break_unlink_remote), and an EIO has the rm
 * retried until the name has a new holder here.
 *
 * C asks; with VIEW, what a listing its process is reading showed answers
 * first. */
static int lookup_remote(lfs *fs, lfs_node *dir, const char *name, const struct lfs_caller *c,
                         bool view, lfs_node **out)
{
	if (!fs->shared)
		return -ENOENT;
	g_autofree char *key = node_key(fs, dir, name);
	lockfs_lock_info info;
	bool late = locks_lost_by(fs, key, c->uid);
	/* The name of a lock this mount lost is gone for its holder's uid
	 * (ENOENT), whatever the backend says.  While the backend does not
	 * answer, asking it would only wait network_timeout to say so: the
	 * holder's stat or getfattr must learn at once (the etcd fault run saw
	 * one take 3.8 s, after a loss in a server outage). */
	if (late && metrics_backend_down_lately(fs->set->network_timeout_ms * 1000))
		return -ENOENT;
	dir->nlookup++;
	if (!locks_wait_idle(fs, key)) { /* as when the backend does not answer */
		dir->nlookup--;
		return late ? -ENOENT : -EIO;
	}
	lfs_dentry *d = dentry_find(dir, name);
	if (d) {
		dir->nlookup--;
		if (late)
			return -ENOENT;
		*out = d->node;
		return 0;
	}
	pthread_mutex_unlock(&fs->mu);
	/* What a listing this process is reading showed it, else what the
	 * backend says (list_cache). */
	int r = view ? remote_view_get(fs, c->pid, key, &info) : -ENOENT;
	if (r)
		r = remote_get(fs, key, false, &info);
	pthread_mutex_lock(&fs->mu);
	dir->nlookup--;
	d = dentry_find(dir, name);
	if (d) { /* taken here meanwhile */
		if (r == 0)
			lockfs_lock_info_clear(&info);
		if (late)
			return -ENOENT;
		*out = d->node;
		return 0;
	}
	if (r)
		return r == -ENOENT || (late && locks_lost_by(fs, key, c->uid)) ? -ENOENT : -EIO;
	if (info.state == LOCKFS_STATE_STALE) {
		lockfs_lock_info_clear(&info);
		return -ENOENT;
	}
	/* The backend still holds the very lease this mount lost (a renewal
	 * given up on reached it late; etcd extends leases across a restart),
	 * and will be told to let it go.  To its holder's uid it is gone, as
	 * that holder was told: shown with its fence, a client checking its
	 * fence by path would take it for still its own (the etcd long run saw
	 * a section go on 54 ms into the next holder's).
	 *
	 * Nor is a new holder's lock shown to the lost holder's family within
	 * the minute late_guard keeps it: a holder that reads its fence by
	 * path after its mount stalled past the lease (its getfattr waiting
	 * out the stall) would be handed the next holder's fence, which a
	 * fenced resource accepts (the etcd long run of session 27).  Anyone
	 * else, root's other processes included, sees the name as it is. */
	if (late && lost_holder_blind(fs, key, &info, c)) {
		lockfs_lock_info_clear(&info);
		return -ENOENT;
	}
	lockfs_log(G_LOG_LEVEL_DEBUG, key,
	           "lookup %s: held elsewhere (host %s pid %" G_GINT64_FORMAT ", fence %s)", key,
	           info.holder.host ? info.holder.host : "-", info.holder.pid, info.fence);
	*out = remote_node_new(fs, &info);
	lockfs_lock_info_clear(&info);
	return 0;
}

/* TGID found NAME in DIR free (or could not look) at AT. */
static void locks_saw_free_name(lfs *fs, pid_t tgid, lfs_node *dir, const char *name, int64_t at,
                                bool failed)
{
	g_autofree char *key = node_key(fs, dir, name);
	locks_saw_free(fs, tgid, key, at, failed);
}

static void lfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	lfs *fs = F(req);
	struct fuse_entry_param e;
	int r = check_name(name);
	if (r) {
		fuse_reply_err(req, -r);
		return;
	}
	LOCK(fs);
	lfs_node *dir = node_of(fs, parent), *n = NULL;
	if (dir->kind == NODE_CONTROL) {
		r = control_lookup(fs, dir, name, &n);
	} else if (dir == fs->root && strcmp(name, LOCKFS_VIEW_DIR) == 0) {
		n = fs->control;
	} else {
		int64_t asked = lockfs_mono_us();
		lfs_dentry *d = locks_find_live(fs, dir, name);
		if (d && d->lost) {
			/* Shown while a call on its key runs (find_live).  When
			 * that call grants the name anew, the unlink this lookup
			 * may be for (the lost holder's late rm) must not
			 * release the new lock: to this process the name was
			 * free, as for locks_unseen_by. */
			n = d->node;
			locks_saw_free_name(fs, lockfs_tgid(fuse_req_ctx(req)->pid), dir, name,
			                    asked, false);
		} else if (d)
			n = d->node;
		else if (!name_is_lock(fs, name))
			r = dir->kind == NODE_DISK ? node_lookup_disk(fs, dir, name, &n) : -ENOENT;
		else {
			struct lfs_caller c = caller_of(req);
			r = lookup_remote(fs, dir, name, &c, true, &n);
			/* A failed look shows no lock either: liblockfile
			 * unlinks a name whose stat() fails (locks_unseen_by). */
			if (r == -ENOENT || r == -EIO)
				locks_saw_free_name(fs, c.pid, dir, name, asked, r == -EIO);
		}
	}
	if (!r)
		r = make_entry(fs, n, &e);
	UNLOCK(fs);
	if (r)
		fuse_reply_err(req, -r);
	else
		reply_entry(req, fs, n, &e);
}

static void forget_one(lfs *fs, fuse_ino_t ino, uint64_t nlookup)
{
	lfs_node *n = node_of(fs, ino);
	n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
	node_maybe_free(fs, n);
}

static void lfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	lfs *fs = F(req);
	LOCK(fs);
	forget_one(fs, ino, nlookup);
	UNLOCK(fs);
	fuse_reply_none(req);
}

static void lfs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	lfs *fs = F(req);
	LOCK(fs);
	for (size_t i = 0; i < count; i++)
		forget_one(fs, forgets[i].ino, forgets[i].nlookup);
	UNLOCK(fs);
	fuse_reply_none(req);
}

static void lfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	lfs *fs = F(req);
	struct stat st;
	LOCK(fs);
	lfs_node *n = node_of(fs, ino);
	int r = node_getattr(fs, n, &st);
	double timeout = attr_timeout_of(fs, n);
	UNLOCK(fs);
	if (r)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, timeout);
}

static struct timespec time_of(const struct stat *attr, int which, int to_set)
{
	bool now = which == FUSE_SET_ATTR_ATIME ? (to_set & FUSE_SET_ATTR_ATIME_NOW)
	                                        : (to_set & FUSE_SET_ATTR_MTIME_NOW);
	struct timespec ts;
	if (now)
		clock_gettime(CLOCK_REALTIME, &ts);
	else
		ts = which == FUSE_SET_ATTR_ATIME ? attr->st_atim : attr->st_mtim;
	return ts;
}

static int setattr_disk(lfs_node *n, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	g_autofree char *path = disk_proc_path(n);
	if ((to_set & FUSE_SET_ATTR_MODE) && chmod(path, attr->st_mode & 07777) != 0)
		return -errno;
	if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t u = (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
		gid_t g = (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;
		if (fchownat(n->fd, "", u, g, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
			return -errno;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		int r = fi ? ftruncate(((lfs_handle *)(uintptr_t)fi->fh)->fd, attr->st_size)
		           : truncate(path, attr->st_size);
		if (r != 0)
			return -errno;
	}
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
		struct timespec tv[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };
		if (to_set & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (to_set & FUSE_SET_ATTR_ATIME)
			tv[0] = attr->st_atim;
		if (to_set & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (to_set & FUSE_SET_ATTR_MTIME)
			tv[1] = attr->st_mtim;
		if (S_ISLNK(n->mode))
			return 0;
		if (utimensat(AT_FDCWD, path, tv, 0) != 0)
			return -errno;
	}
	return 0;
}

/* A memory node's attributes, as setattr asks: 0 or a negative errno. */
static int setattr_mem(lfs_node *n, const struct stat *attr, int to_set)
{
	if (to_set & FUSE_SET_ATTR_MODE)
		n->mode = (n->mode & S_IFMT) | (attr->st_mode & 07777);
	if (to_set & FUSE_SET_ATTR_UID)
		n->uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		n->gid = attr->st_gid;
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (!S_ISREG(n->mode))
			return S_ISDIR(n->mode) ? -EISDIR : -EINVAL;
		if ((size_t)attr->st_size > MEM_FILE_MAX)
			return -EFBIG;
		int r = node_set_size(n, attr->st_size);
		if (r)
			return r;
		node_touch(n, true, true);
	}
	if (to_set & FUSE_SET_ATTR_ATIME)
		n->atime = time_of(attr, FUSE_SET_ATTR_ATIME, to_set);
	if (to_set & FUSE_SET_ATTR_MTIME)
		n->mtime = time_of(attr, FUSE_SET_ATTR_MTIME, to_set);
	node_touch(n, false, true);
	return 0;
}

/* setattr of N (no control file) by C: checked against its locks, done,
 * and, on a lock file, a heartbeat when it is one. */
static int setattr_node(lfs *fs, lfs_node *n, struct stat *attr, int to_set,
                        struct fuse_file_info *fi, const struct lfs_caller *c)
{
	/* fi comes with ftruncate(2), on a regular file's handle. */
	if (n->remote || (fi && S_ISREG(n->mode) && ((lfs_handle *)(uintptr_t)fi->fh)->found_taken))
		return -EPERM; /* heartbeats come from the holder (lfs_create) */
	bool times = to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME);
	bool size = to_set & FUSE_SET_ATTR_SIZE;
	bool mode = to_set & FUSE_SET_ATTR_MODE;
	/* utimensat(NULL), truncation, and explicit times that are not in the
	 * past (utimes(now, now), as lock libraries refresh; flufl.lock's
	 * expiry ahead) are heartbeats; an mtime set back (touch -d) only sets
	 * what is shown. */
	bool beat =
	        (to_set & FUSE_SET_ATTR_MTIME_NOW) || size ||
	        ((to_set & FUSE_SET_ATTR_MTIME) &&
	         (int64_t)attr->st_mtim.tv_sec * G_USEC_PER_SEC + attr->st_mtim.tv_nsec / 1000 >=
	                 lockfs_now_us() - EXPLICIT_BEAT_US);
	if (n->lost && (times || size))
		return -ESTALE; /* its lock was broken or lost */
	if (n->locks && (times || size) && !locks_may_change(n, c))
		return -EPERM;
	if (size && n->locks && attr->st_size > LOCKFS_CONTENT_MAX)
		return -EFBIG;
	int r = n->kind == NODE_DISK ? setattr_disk(n, attr, to_set, fi)
	                             : setattr_mem(n, attr, to_set);
	if (r)
		return r;
	if (n->locks && (beat || times || mode))
		r = locks_heartbeat(fs, n, c,
		                    (beat ? BEAT_HEARTBEAT : 0) | (size ? BEAT_CONTENT : 0) |
		                            BEAT_ATTRS);
	return r;
}

static void lfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                        struct fuse_file_info *fi)
{
	lfs *fs = F(req);
	struct lfs_caller c = caller_of(req);
	struct stat st;
	int r = 0;
	LOCK(fs);
	lfs_node *n = node_of(fs, ino);
	if (n->kind == NODE_CONTROL) {
		/* "echo KEY > .lockfs/break" truncates first: nothing to do. */
		if (n->ctl_break && !(to_set & ~(FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_CTIME)))
			r = node_getattr(fs, n, &st);
		else
			r = -EROFS;
	} else {
		r = setattr_node(fs, n, attr, to_set, fi, &c);
		if (!r)
			r = node_getattr(fs, n, &st);
	}
	UNLOCK(fs);
	if (r)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, fs->attr_timeout);
}

static void lfs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	lfs *fs = F(req);
	char buf[PATH_MAX + 1];
	int r = 0;
	LOCK(fs);
	lfs_node *n = node_of(fs, ino);
	if (!S_ISLNK(n->mode)) {
		r = -EINVAL;
	} else if (n->kind == NODE_DISK) {
		ssize_t len = readlinkat(n->fd, "", buf, sizeof(buf) - 1);
		if (len < 0)
			r = -errno;
		else
			buf[len] = '\0';
	} else {
		size_t len = MIN(n->size, sizeof(buf) - 1);
		memcpy(buf, n->data, len);
		buf[len] = '\0';
	}
	UNLOCK(fs);
	if (r)
		fuse_reply_err(req, -r);
	else
		fuse_reply_readlink(req, buf);
}

/* NAME in DIR in memory, for C: a lock (taken from the backend first) or
 * a memory node. */
static int make_mem_node(lfs *fs, lfs_node *dir, const char *name, mode_t mode, mode_t um,
                         const char *target, const struct lfs_caller *c, bool lock, lfs_node **out)
{
	/* Memory nodes have no default ACL: the umask applies (a symlink's
	 * 0777 is never masked, as on disk). */
	if (!S_ISLNK(mode))
		mode &= ~um;
	lfs_node *n = node_new(fs, NODE_MEM, mode, c->uid, c->gid);
	if (dir->mode & S_ISGID) { /* BSD group semantics, as on disk */
		n->gid = dir->gid;
		if (S_ISDIR(mode))
			n->mode |= S_ISGID;
	}
	if (target) {
		n->data = g_strdup(target);
		n->size = n->cap = strlen(target);
	}
	if (lock) {
		int r = locks_acquire(fs, dir, name, n, c, NULL);
		if (r) {
			node_maybe_free(fs, n);
			return r;
		}
	} else {
		dentry_add(fs, dir, name, n);
	}
	node_touch(dir, true, true);
	*out = n;
	return 0;
}

/* Create NAME on the disk underneath DIR: 0 or an errno; *DFD an open
 * descriptor of a regular file.  The disk applies the caller's umask UM,
 * or the directory's default ACL instead, exactly as for the caller. */
static int create_on_disk(lfs_node *dir, const char *name, mode_t mode, mode_t um, dev_t rdev,
                          const char *target, int open_flags, int *dfd)
{
	mode_t old_um = 0;
	bool set_um = own_umask();
	if (set_um)
		old_um = umask(um);
	else
		mode &= ~um;
	int e = 0;
	if (S_ISREG(mode)) {
		int flags = (open_flags >= 0 ? open_flags : O_WRONLY) & ~(O_TRUNC | O_NOFOLLOW);
		*dfd = openat(dir->fd, name, flags | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
		if (*dfd < 0)
			e = errno;
	} else if (S_ISDIR(mode)) {
		if (mkdirat(dir->fd, name, mode & 07777) != 0)
			e = errno;
	} else if (S_ISLNK(mode)) {
		if (symlinkat(target, dir->fd, name) != 0)
			e = errno;
	} else {
		if (mknodat(dir->fd, name, mode, rdev) != 0)
			e = errno;
	}
	if (set_um)
		umask(old_um);
	return e;
}

/* An ordinary name in a directory of the disk underneath, for C. */
static int make_disk_node(lfs *fs, lfs_node *dir, const char *name, mode_t mode, mode_t um,
                          dev_t rdev, const char *target, const struct lfs_caller *c,
                          int open_flags, lfs_node **out, int *fd)
{
	bool chown_it = geteuid() == 0;
	/* In a setgid directory the file takes the directory's group, as the
	 * kernel gave it when lockfs made it (Debian's /var/mail is 2775
	 * root:mail): only the owner is the caller's. */
	struct stat dst;
	gid_t gid = c->gid;
	if (fstatat(dir->fd, "", &dst, AT_EMPTY_PATH) == 0 && (dst.st_mode & S_ISGID))
		gid = (gid_t)-1;
	int dfd = -1, r = 0;
	int e = create_on_disk(dir, name, mode, um, rdev, target, open_flags, &dfd);
	if (e)
		return -e;
	if (chown_it && S_ISREG(mode) && fchown(dfd, c->uid, gid) != 0)
		r = -errno;
	if (!r && chown_it && !S_ISREG(mode) &&
	    fchownat(dir->fd, name, c->uid, gid, AT_SYMLINK_NOFOLLOW) != 0)
		r = -errno;
	lfs_node *n = NULL;
	if (!r)
		r = node_lookup_disk(fs, dir, name, &n);
	if (r) {
		if (dfd >= 0)
			close(dfd);
		unlinkat(dir->fd, name, S_ISDIR(mode) ? AT_REMOVEDIR : 0);
		return r;
	}
	if (fd)
		*fd = dfd;
	else if (dfd >= 0)
		close(dfd);
	*out = n;
	return 0;
}

/* Make NAME in DIR: a lock (taken from the backend first), a memory node, or
 * a file of the directory underneath.  For regular files OPEN_FLAGS >= 0 asks
 * for an open descriptor of a disk file in *FD. */
static int make_node(lfs *fs, lfs_node *dir, const char *name, mode_t mode, mode_t um, dev_t rdev,
                     const char *target, const struct lfs_caller *c, int open_flags, lfs_node **out,
                     int *fd)
{
	int r = check_name(name);
	if (r)
		return r;
	if (dir->kind == NODE_CONTROL || (dir == fs->root && strcmp(name, LOCKFS_VIEW_DIR) == 0))
		return -EROFS;
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	if (locks_find_live(fs, dir, name))
		return -EEXIST;
	if (target && strlen(target) >= PATH_MAX)
		return -ENAMETOOLONG;

	bool lock = name_is_lock(fs, name);
	/* A device only on the disk underneath (the kernel let the caller
	 * make one: CAP_MKNOD); as a lock or in memory it serves no purpose. */
	if ((S_ISCHR(mode) || S_ISBLK(mode)) && (lock || dir->kind != NODE_DISK))
		return -EPERM;
	if (lock || dir->kind != NODE_DISK)
		return make_mem_node(fs, dir, name, mode, um, target, c, lock, out);
	return make_disk_node(fs, dir, name, mode, um, rdev, target, c, open_flags, out, fd);
}

static void reply_made(fuse_req_t req, lfs *fs, int r, lfs_node *n)
{
	struct fuse_entry_param e;
	if (!r)
		r = make_entry(fs, n, &e);
	UNLOCK(fs);
	if (r)
		fuse_reply_err(req, -r);
	else
		reply_entry(req, fs, n, &e);
}

static void lfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	lfs *fs = F(req);
	struct lfs_caller c = caller_of(req);
	lfs_node *n = NULL;
	int r = 0;
	if (!S_ISREG(mode) && !S_ISFIFO(mode) && !S_ISSOCK(mode) && !S_ISCHR(mode) &&
	    !S_ISBLK(mode))
		r = -EPERM;
	LOCK(fs);
	if (!r)
		r = make_node(fs, node_of(fs, parent), name, mode, umask_of(req), rdev, NULL, &c,
		              -1, &n, NULL);
	reply_made(req, fs, r, n);
}

static void lfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	lfs *fs = F(req);
	struct lfs_caller c = caller_of(req);
	lfs_node *n = NULL;
	LOCK(fs);
	int r = make_node(fs, node_of(fs, parent), name, S_IFDIR | (mode & 07777), umask_of(req), 0,
	                  NULL, &c, -1, &n, NULL);
	reply_made(req, fs, r, n);
}

static void lfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	lfs *fs = F(req);
	struct lfs_caller c = caller_of(req);
	lfs_node *n = NULL;
	LOCK(fs);
	int r = make_node(fs, node_of(fs, parent), name, S_IFLNK | 0777, 0, 0, link, &c, -1, &n,
	                  NULL);
	reply_made(req, fs, r, n);
}

static lfs_handle *handle_new(lfs_node *n, int fd)
{
	lfs_handle *h = g_new0(lfs_handle, 1);
	h->n = n;
	h->fd = fd;
	h->refs = 1;
	n->opens++;
	return h;
}

/* FI's handle, kept for the request (handle_unref when done). */
static lfs_handle *handle_ref(struct fuse_file_info *fi)
{
	lfs_handle *h = (lfs_handle *)(uintptr_t)fi->fh;
	g_atomic_int_inc(&h->refs);
	return h;
}

/* Without fs->mu. */
static void handle_unref(lfs *fs, lfs_handle *h)
{
	if (!g_atomic_int_dec_and_test(&h->refs))
		return;
	LOCK(fs);
	h->n->opens--;
	node_maybe_free(fs, h->n);
	UNLOCK(fs);
	if (h->fd >= 0)
		close(h->fd);
	g_free(h->snap);
	g_free(h);
}

/* Open N, which exists, with FLAGS (not a directory nor a control file):
 * the checks and O_TRUNC of open(2); *FD is a disk node's descriptor.
 *
 * Another host's lock opens for writing too, as any file its uid may write:
 * lock libraries open the file they flock or lockf with O_RDWR or 'a'
 * (filelock, fasteners, portalocker), and on a lock name their open made a
 * dot-lock that another host sees.  Its content stays the holder's: O_TRUNC
 * is not applied and a write answers EPERM (lfs_write), as heartbeats come
 * through the holder's mount. */
static int open_existing(lfs *fs, lfs_node *n, int flags, const struct lfs_caller *c, int *fd)
{
	bool writing = (flags & O_ACCMODE) != O_RDONLY;
	int r = 0;
	if (n->remote)
		return 0;
	if (writing && (n->locks || n->lost) && (r = locks_check_writable(fs, n)))
		return r; /* lost */
	if (writing && !locks_may_change(n, c))
		return -EPERM; /* before O_TRUNC could empty it */
	if (n->kind == NODE_DISK) {
		*fd = disk_open(n, flags);
		if (*fd < 0)
			return *fd;
		if ((flags & O_TRUNC) && n->locks)
			r = locks_heartbeat(fs, n, c, BEAT_HEARTBEAT | BEAT_ATTRS);
	} else if ((flags & O_TRUNC) && writing && n->size) {
		n->size = 0;
		node_touch(n, true, true);
		if (n->locks)
			r = locks_heartbeat(fs, n, c, BEAT_HEARTBEAT | BEAT_CONTENT | BEAT_ATTRS);
	}
	return r;
}

/* An open(O_CREAT) without O_EXCL of a lock name that was free at the
 * kernel's lookup and taken when lockfs came to create it (by another
 * process or host): it opens the lock now there, as on any filesystem, not
 * EEXIST (flock(1), python's filelock, fasteners and portalocker open the
 * file they lock so).  Opened for writing, the lock stays its holder's:
 * O_TRUNC is not applied and writes answer EPERM, so that a client that
 * creates with O_TRUNC and no O_EXCL to take a lock (LockFile::Simple) does
 * not write its pid into another's lock and think it its own; and to this
 * process the name stays one it found free, so the unlink such a client
 * makes of "its" file answers ENOENT and leaves the lock alone
 * (locks_unseen_by, break_unlink_remote). */
static int open_taken(lfs *fs, lfs_node *dir, const char *name, const struct lfs_caller *c,
                      lfs_node **out)
{
	lfs_dentry *d = locks_find_live(fs, dir, name);
	if (d) {
		*out = d->node;
		return 0;
	}
	return lookup_remote(fs, dir, name, c, false, out); /* (no listing's view) */
}

/* Make NAME for lfs_create, or find it taken: 0 with *MADE, 0 with the
 * node found taken (*MADE false), or a negative errno.
 *
 * A name taken and let go again between the create and the look at who
 * holds it: create again, a few times, then open it as the lock of whoever
 * the backend refused it for.  Not EEXIST, which an open without O_EXCL
 * never answers and lock libraries take for an error (filelock,
 * fasteners): on tinystore a lock held a few ms is never described (its
 * holder record comes after the grant), so a name taken in turn by short
 * holds on other hosts comes here. */
static int create_or_open_taken(lfs *fs, fuse_req_t req, lfs_node *dir, const char *name,
                                mode_t mode, int flags, const struct lfs_caller *c, lfs_node **n,
                                int *fd, bool *made)
{
	int r;
	for (int tries = 0;; tries++) {
		r = make_node(fs, dir, name, S_IFREG | (mode & 07777), umask_of(req), 0, NULL, c,
		              flags, n, fd);
		*made = r == 0;
		if (r != -EEXIST || (flags & O_EXCL) || !name_is_lock(fs, name))
			break;
		r = open_taken(fs, dir, name, c, n);
		if (r != -ENOENT)
			break;
		if (tries == 3) {
			/* (to a lost holder's uid too: its unlink of the name it
			 * found taken answers ENOENT, as lookup_remote's would) */
			if (fs->shared) {
				g_autofree char *key = node_key(fs, dir, name);
				*n = remote_node_refused(fs, key);
				r = 0;
			} else {
				r = -EIO; /* one process's own table: not seen to happen */
			}
			break;
		}
	}
	return r;
}

static void lfs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                       struct fuse_file_info *fi)
{
	lfs *fs = F(req);
	struct lfs_caller c = caller_of(req);
	struct fuse_entry_param e;
	lfs_node *n = NULL;
	int fd = -1;
	LOCK(fs);
	lfs_node *dir = node_of(fs, parent);
	bool writing = (fi->flags & O_ACCMODE) != O_RDONLY, made = false, found = false;
	int r = create_or_open_taken(fs, req, dir, name, mode, fi->flags, &c, &n, &fd, &made);
	if (!made && !r) { /* found taken */
		if (S_ISDIR(n->mode))
			r = -EISDIR;
		else if (writing && !caller_may_write(fs, req, n))
			r = -EACCES; /* the kernel checked the directory, not the file */
		else if (writing && n->kind == NODE_DISK && !n->remote)
			r = (fd = disk_open(n, fi->flags & ~O_TRUNC)) < 0 ? fd : 0;
		found = !r && writing;
		if (found)
			locks_saw_free_name(fs, lockfs_tgid(fuse_req_ctx(req)->pid), dir, name, 0,
			                    false); /* before any grant */
		else if (r)
			node_maybe_free(fs, n); /* another host's, which no name keeps */
	}
	if (!r)
		r = make_entry(fs, n, &e);
	if (!r) {
		lfs_handle *h = handle_new(n, fd);
		lfs_dentry *d = node_lock_dentry(fs, n);
		/* Only a lock this open made: one it found taken is another's. */
		if (made && d && d->lease && !(fi->flags & O_EXCL))
			h->made_serial = d->serial;
		h->found_taken = found;
		fi->fh = (uintptr_t)h;
	}
	UNLOCK(fs);
	if (r) {
		fuse_reply_err(req, -r);
	} else if (fuse_reply_create(req, &e, fi) != 0) {
		/* The kernel never saw it: drop the handle and the reference. */
		LOCK(fs);
		lfs_handle *h = (lfs_handle *)(uintptr_t)fi->fh;
		if (h->fd >= 0)
			close(h->fd);
		n->opens--;
		n->nlookup--;
		node_maybe_free(fs, n);
		UNLOCK(fs);
		g_free(h);
	}
}

static void lfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	lfs *fs = F(req);
	struct lfs_caller c = caller_of(req);
	int r = check_name(newname);
	bool other = false;
	fuse_ino_t other_dir = 0;
	g_autofree char *other_name = NULL;
	LOCK(fs);
	lfs_node *n = node_of(fs, ino), *dir = node_of(fs, newparent);
	if (r)
		goto out;
	if (n->kind == NODE_CONTROL || dir->kind == NODE_CONTROL ||
	    (dir == fs->root && strcmp(newname, LOCKFS_VIEW_DIR) == 0)) {
		r = -EROFS;
		goto out;
	}
	if (S_ISDIR(n->mode) || n->remote) {
		r = -EPERM;
		goto out;
	}
	if (locks_find_live(fs, dir, newname)) {
		r = -EEXIST;
		goto out;
	}
	if (name_is_lock(fs, newname)) {
		r = locks_acquire(fs, dir, newname, n, &c, NULL);
		/* A file linked again after its lock name went (lfs_unlink). */
		if (!r && n->relinked)
			other = inval_other_name(fs, dir, n, &other_dir, &other_name);
	} else if (n->kind == NODE_MEM && dir->kind == NODE_MEM) {
		dentry_add(fs, dir, newname, n);
	} else if (n->kind == NODE_DISK && dir->kind == NODE_DISK) {
		g_autofree char *path = disk_proc_path(n);
		if (linkat(AT_FDCWD, path, dir->fd, newname, AT_SYMLINK_FOLLOW) != 0)
			r = -errno;
	} else {
		r = -EXDEV;
	}
	if (!r) {
		node_touch(n, false, true);
		node_touch(dir, true, true);
	}
out:
	reply_made(req, fs, r, n);
	if (other)
		inval_entry_now(fs, other_dir, other_name);
}

static void lfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	lfs *fs = F(req);
	struct lfs_caller c = caller_of(req);
	int r = 0;
	bool other = false;
	fuse_ino_t other_dir = 0;
	g_autofree char *other_name = NULL;
	LOCK(fs);
	lfs_node *dir = node_of(fs, parent);
	lfs_dentry *d = dentry_find(dir, name);
	if (dir->kind == NODE_CONTROL || (dir == fs->root && strcmp(name, LOCKFS_VIEW_DIR) == 0))
		r = -EROFS;
	else if (d && S_ISDIR(d->node->mode))
		r = -EISDIR;
	else if (d && d->lease) {
		/* A file linked to the lock keeps its other name (inval_other_name). */
		lfs_node *n = d->node;
		n->nlookup++;
		if (!(r = locks_unlink(fs, d, &c)))
			other = n->relinked = inval_other_name(fs, dir, n, &other_dir, &other_name);
		n->nlookup--;
		node_maybe_free(fs, n);
	} else if (d)
		locks_remove_name(fs, d);
	else if (!name_is_lock(fs, name))
		r = dir->kind == NODE_DISK ? (unlinkat(dir->fd, name, 0) ? -errno : 0) : -ENOENT;
	else
		r = break_unlink_remote(fs, dir, name, &c);
	UNLOCK(fs);
	fuse_reply_err(req, -r);
	if (other)
		inval_entry_now(fs, other_dir, other_name);
}

static bool has_locks_in(lfs *fs, lfs_node *dir, const char *name);

static void lfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	lfs *fs = F(req);
	struct lfs_caller c = caller_of(req);
	int r = 0;
	LOCK(fs);
	lfs_node *dir = node_of(fs, parent);
	lfs_dentry *d = dentry_find(dir, name);
	if (dir->kind == NODE_CONTROL || (dir == fs->root && strcmp(name, LOCKFS_VIEW_DIR) == 0))
		r = -EROFS;
	else if (d && !S_ISDIR(d->node->mode))
		r = -ENOTDIR;
	else if (d && d->node->children && g_hash_table_size(d->node->children))
		r = -ENOTEMPTY;
	else if (d && d->node->kind == NODE_DISK)
		r = -EBUSY;
	else if (d && d->lease)
		r = locks_unlink(fs, d, &c);
	else if (!name_is_lock(fs, name) && has_locks_in(fs, dir, name))
		r = -ENOTEMPTY;
	else if (d && d != dentry_find(dir, name)) /* changed while the check waited */
		r = -EBUSY;
	else if (d)
		locks_remove_name(fs, d);
	else if (!name_is_lock(fs, name))
		r = dir->kind == NODE_DISK ? (unlinkat(dir->fd, name, AT_REMOVEDIR) ? -errno : 0)
		                           : -ENOENT;
	else
		r = break_unlink_remote(fs, dir, name, &c);
	UNLOCK(fs);
	fuse_reply_err(req, -r);
}

/* True when DIR is NODE or lies inside it (renaming a directory into itself). */
static bool is_inside(lfs_node *dir, lfs_node *node)
{
	for (lfs_node *p = dir; p; p = p->parent)
		if (p == node)
			return true;
	return false;
}

/* Rename D to NEWNAME in NEWDIR, both in memory. */
static void dentry_move(lfs *fs, lfs_dentry *d, lfs_node *newdir, const char *newname)
{
	lfs_node *n = d->node;
	n->nlookup++; /* keep the node while its name is re-made */
	locks_remove_name(fs, d);
	dentry_add(fs, newdir, newname, n);
	n->nlookup--;
}

static int rename_mem(lfs *fs, lfs_node *dir, const char *name, lfs_node *newdir,
                      const char *newname, unsigned flags)
{
	lfs_dentry *d = dentry_find(dir, name);
	if (!d)
		return -ENOENT;
	lfs_dentry *t = dentry_find(newdir, newname);
	if (t == d)
		return 0;
	if (S_ISDIR(d->node->mode) && is_inside(newdir, d->node))
		return -EINVAL;
	if (flags & RENAME_EXCHANGE) {
		if (!t)
			return -ENOENT;
		lfs_node *a = d->node, *b = t->node;
		a->nlookup++;
		b->nlookup++;
		locks_remove_name(fs, d);
		locks_remove_name(fs, t);
		dentry_add(fs, newdir, newname, a);
		dentry_add(fs, dir, name, b);
		a->nlookup--;
		b->nlookup--;
		return 0;
	}
	if (t) {
		if (flags & RENAME_NOREPLACE)
			return -EEXIST;
		if (S_ISDIR(t->node->mode) && !S_ISDIR(d->node->mode))
			return -EISDIR;
		if (!S_ISDIR(t->node->mode) && S_ISDIR(d->node->mode))
			return -ENOTDIR;
		if (t->node->children && g_hash_table_size(t->node->children))
			return -ENOTEMPTY;
		locks_remove_name(fs, t);
	}
	dentry_move(fs, d, newdir, newname);
	return 0;
}

/* An ordinary file renamed onto a free lock name takes the lock. */
static int rename_to_lock(lfs *fs, lfs_node *dir, const char *name, lfs_node *newdir,
                          const char *newname, const struct lfs_caller *c)
{
	if (locks_find_live(fs, newdir, newname))
		return -EEXIST;
	lfs_dentry *d = dentry_find(dir, name);
	lfs_node *n = NULL;
	int r = 0;
	if (d)
		n = d->node;
	else if (dir->kind == NODE_DISK)
		r = node_lookup_disk(fs, dir, name, &n);
	else
		r = -ENOENT;
	if (r)
		return r;
	if (S_ISDIR(n->mode) && n->kind == NODE_DISK)
		return -EXDEV;
	n->nlookup++;
	r = locks_acquire(fs, newdir, newname, n, c, NULL);
	if (!r) {
		if (d)
			locks_remove_name(fs, d);
		else if (unlinkat(dir->fd, name, 0) != 0)
			lockfs_log(G_LOG_LEVEL_WARNING, NULL,
			           "rename onto %s: cannot remove %s: %s", newname, name,
			           g_strerror(errno));
	}
	n->nlookup--;
	node_maybe_free(fs, n);
	return r;
}

/* Whether the directory NAME in DIR holds locks: a lock's key is its path,
 * so such a directory cannot move without moving the locks.  A lock being
 * taken or let go inside it is waited for first, so that its name and key
 * stay together (the key was made from the path before the backend call). */
static bool holds_locks(lfs *fs, lfs_node *dir, const char *name)
{
	g_autofree char *key = node_key(fs, dir, name);
	g_autofree char *prefix = g_strconcat(key, "/", NULL);
	if (!locks_wait_idle_under(fs, prefix))
		return true; /* bounded: a move or rmdir is refused, not a lock split */
	return locks_held_under(fs, prefix);
}

/* Whether the directory NAME in DIR has locks in it, here or held through
 * another mount: rmdir then answers ENOTEMPTY, as for a directory with a
 * file in it (`ls` shows those locks there). */
static bool has_locks_in(lfs *fs, lfs_node *dir, const char *name)
{
	if (holds_locks(fs, dir, name))
		return true;
	if (!fs->shared)
		return false;
	g_autofree char *key = node_key(fs, dir, name);
	g_autofree char *prefix = g_strconcat(key, "/", NULL);
	dir->nlookup++;
	pthread_mutex_unlock(&fs->mu);
	g_autoptr(GPtrArray) infos = remote_list(fs, prefix, NULL);
	pthread_mutex_lock(&fs->mu);
	dir->nlookup--;
	for (guint i = 0; i < infos->len; i++)
		if (((lockfs_lock_info *)infos->pdata[i])->state != LOCKFS_STATE_STALE)
			return true;
	return false;
}

static void lfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                       const char *newname, unsigned int flags)
{
	lfs *fs = F(req);
	struct lfs_caller c = caller_of(req);
	int r = check_name(newname);
	LOCK(fs);
	lfs_node *dir = node_of(fs, parent), *newdir = node_of(fs, newparent);
	if (r)
		goto out;
	if (dir->kind == NODE_CONTROL || newdir->kind == NODE_CONTROL ||
	    (dir == fs->root && strcmp(name, LOCKFS_VIEW_DIR) == 0) ||
	    (newdir == fs->root && strcmp(newname, LOCKFS_VIEW_DIR) == 0)) {
		r = -EROFS;
		goto out;
	}
	bool from_lock = name_is_lock(fs, name), to_lock = name_is_lock(fs, newname);
	if (from_lock || (to_lock && (flags & RENAME_EXCHANGE)) || holds_locks(fs, dir, name) ||
	    ((flags & RENAME_EXCHANGE) && holds_locks(fs, newdir, newname))) {
		/* A lock cannot move: mv falls back to copy + unlink, which take
		 * the new name and release the old one. */
		r = -EXDEV;
	} else if (to_lock) {
		r = rename_to_lock(fs, dir, name, newdir, newname, &c);
	} else if (dir->kind == NODE_MEM && newdir->kind == NODE_MEM) {
		r = rename_mem(fs, dir, name, newdir, newname, flags);
	} else if (dir->kind == NODE_DISK && newdir->kind == NODE_DISK && !dentry_find(dir, name)) {
		r = renameat2(dir->fd, name, newdir->fd, newname, flags) ? -errno : 0;
	} else {
		r = -EXDEV;
	}
	if (!r) {
		node_touch(dir, true, true);
		node_touch(newdir, true, true);
	}
out:
	UNLOCK(fs);
	fuse_reply_err(req, -r);
}

static void lfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	lfs *fs = F(req);
	struct lfs_caller c = caller_of(req);
	int r = 0, fd = -1;
	LOCK(fs);
	lfs_node *n = node_of(fs, ino);
	bool writing = (fi->flags & O_ACCMODE) != O_RDONLY;
	if (S_ISDIR(n->mode)) {
		r = -EISDIR;
	} else if (n->kind == NODE_CONTROL) {
		if (writing != n->ctl_break) {
			r = n->ctl_break ? -EACCES : -EROFS;
		} else {
			/* Fences are final before they are shown (the metrics
			 * show none, and cost the backend nothing). */
			if (!n->ctl_metrics)
				locks_confirm(fs, NULL, 0);
			size_t len;
			char *snap = control_render(fs, n, &len, &r);
			if (r) {
				g_free(snap); /* the backend could not say: EIO */
			} else {
				lfs_handle *h = handle_new(n, -1);
				h->snap = snap;
				h->snap_len = len;
				fi->fh = (uintptr_t)h;
				fi->direct_io = 1;
			}
		}
		UNLOCK(fs);
		if (r)
			fuse_reply_err(req, -r);
		else
			fuse_reply_open(req, fi);
		return;
	} else {
		r = open_existing(fs, n, fi->flags, &c, &fd);
	}
	if (!r)
		fi->fh = (uintptr_t)handle_new(n, fd);
	UNLOCK(fs);
	if (r)
		fuse_reply_err(req, -r);
	else
		fuse_reply_open(req, fi);
}

static void lfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
	(void)ino;
	lfs *fs = F(req);
	lfs_handle *h = handle_ref(fi);
	if (h->fd >= 0) {
		char *buf = g_malloc(size);
		ssize_t n = pread(h->fd, buf, size, off);
		if (n < 0)
			fuse_reply_err(req, errno);
		else
			fuse_reply_buf(req, buf, n);
		g_free(buf);
	} else if (h->snap) {
		size_t n = (size_t)off < h->snap_len ? MIN(size, h->snap_len - off) : 0;
		fuse_reply_buf(req, h->snap + off, n);
	} else {
		LOCK(fs);
		lfs_node *n = h->n;
		size_t len = (size_t)off < n->size ? MIN(size, n->size - off) : 0;
		char *buf = len ? g_memdup2(n->data + off, len) : NULL;
		UNLOCK(fs); /* reads never move atime: tools take a changed atime for "now" */
		fuse_reply_buf(req, buf, len);
		g_free(buf);
	}
	handle_unref(fs, h);
}

static void lfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                      struct fuse_file_info *fi)
{
	(void)ino;
	lfs *fs = F(req);
	struct lfs_caller c = caller_of(req);
	lfs_handle *h = handle_ref(fi);
	int r = 0;
	ssize_t done = size;
	LOCK(fs);
	lfs_node *n = h->n;
	if (n->kind == NODE_CONTROL) {
		r = n->ctl_break ? break_request(fs, req, buf, size) : -EBADF;
		goto out;
	}
	if (n->remote || h->found_taken) { /* another's: heartbeats come from its holder */
		r = -EPERM;
		goto out;
	}
	if (n->locks || n->lost) {
		if (n->lost) {
			r = -ESTALE;
			goto out;
		}
		if (!locks_may_change(n, &c)) {
			r = -EPERM;
			goto out;
		}
		if ((size_t)off + size > LOCKFS_CONTENT_MAX) {
			r = -EFBIG;
			goto out;
		}
	}
	if (h->fd >= 0) {
		done = pwrite(h->fd, buf, size, off);
		if (done < 0) {
			r = -errno;
			goto out;
		}
	} else {
		if ((size_t)off + size > MEM_FILE_MAX) {
			r = -EFBIG;
			goto out;
		}
		if ((size_t)off + size > n->size && (r = node_set_size(n, off + size)))
			goto out;
		memcpy(n->data + off, buf, size);
		node_touch(n, true, true);
	}
	if (n->locks)
		r = locks_heartbeat(fs, n, &c, BEAT_HEARTBEAT | BEAT_CONTENT | BEAT_ATTRS);
out:
	UNLOCK(fs);
	handle_unref(fs, h);
	if (r)
		fuse_reply_err(req, -r);
	else
		fuse_reply_write(req, done);
}

static void lfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	lfs *fs = F(req);
	lfs_handle *h = (lfs_handle *)(uintptr_t)fi->fh;
	/* Any close of the file by a process lets its POSIX locks go; a close
	 * on a mount that holds none takes no lock. */
	if (flock_posix_any(fs)) {
		LOCK(fs);
		flock_posix_flush(fs, h->n, fi->lock_owner);
		UNLOCK(fs);
	}
	fuse_reply_err(req, 0);
}

static void lfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	lfs *fs = F(req);
	lfs_handle *h = (lfs_handle *)(uintptr_t)fi->fh;
	LOCK(fs);
	/* The last close of an open file description lets its flock go, and
	 * the lock name its open made, if it still holds it, when a flock or a
	 * POSIX lock was taken through it: flock(1), python's filelock and
	 * fasteners create the file they lock (O_CREAT), and on a lock name
	 * that takes a lock they would never let go. */
	flock_posix_release_fh(fs, h->n, fi->fh);
	if (fi->flock_release)
		flock_release_owner(fs, h->n, fi->fh);
	if (fi->flock_release || h->posix_asked) {
		lfs_dentry *d = h->made_serial ? node_lock_dentry(fs, h->n) : NULL;
		if (d && d->lease && d->serial == h->made_serial) {
			inval_entry(fs, d->dir, d->name); /* the kernel did not remove it */
			locks_release(fs, d, LOCKS_BY_CLOSE);
		}
	}
	UNLOCK(fs);
	handle_unref(fs, h); /* the node and descriptor go with the last use */
	fuse_reply_err(req, 0);
}

static void lfs_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	lfs *fs = F(req);
	struct lfs_caller c = caller_of(req);
	/* The open file description a flock belongs to is its FUSE handle,
	 * not the kernel's lock owner: that is the struct file's address,
	 * which a new open may reuse before the old one's release arrives. */
	flock_request(fs, req, node_of(fs, ino), fi->fh, op, &c);
}

/* POSIX record locks (fcntl(2), lockf(3)): the process's, by FUSE's
 * lock_owner, held in the backend (fs_flock.c). */
static void lfs_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock)
{
	lfs *fs = F(req);
	LOCK(fs);
	lfs_node *n = node_of(fs, ino);
	n->opens++; /* kept while the backend answers unlocked */
	UNLOCK(fs);
	int r = flock_posix_getlk(fs, n, fi->lock_owner, lock);
	LOCK(fs);
	n->opens--;
	node_maybe_free(fs, n);
	UNLOCK(fs);
	if (r)
		fuse_reply_err(req, -r);
	else
		fuse_reply_lock(req, lock);
}

static void lfs_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
                      int sleep)
{
	lfs *fs = F(req);
	struct lfs_caller c = caller_of(req);
	lfs_handle *h = (lfs_handle *)(uintptr_t)fi->fh;
	if (h->made_serial && lock->l_type != F_UNLCK) {
		LOCK(fs);
		h->posix_asked = true;
		UNLOCK(fs);
	}
	flock_posix_setlk(fs, req, node_of(fs, ino), fi->lock_owner, fi->fh, lock, sleep != 0, &c);
}

static void lfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	lfs_handle *h = handle_ref(fi);
	int r = 0;
	if (h->fd >= 0 && (datasync ? fdatasync(h->fd) : fsync(h->fd)) != 0)
		r = errno;
	handle_unref(F(req), h);
	fuse_reply_err(req, r);
}

static void list_add(lfs_dirlist *l, const char *name, uint64_t ino, mode_t mode, lfs_node *n)
{
	lfs_dirent e = { g_strdup(name), ino, mode & S_IFMT, n };
	if (n)
		n->opens++;
	g_array_append_val(l->ents, e);
}

static void dirlist_free(lfs *fs, lfs_dirlist *l)
{
	LOCK(fs);
	for (guint i = 0; i < l->ents->len; i++) {
		lfs_dirent *e = &g_array_index(l->ents, lfs_dirent, i);
		if (e->node) {
			e->node->opens--;
			node_maybe_free(fs, e->node);
		}
		g_free(e->name);
	}
	if (l->dir) {
		l->dir->opens--;
		node_maybe_free(fs, l->dir);
	}
	UNLOCK(fs);
	remote_view_close(fs, l->view);
	g_array_free(l->ents, TRUE);
	g_free(l);
}

static void list_disk(lfs *fs, lfs_node *dir, lfs_dirlist *l)
{
	int fd = openat(dir->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	DIR *dp = fdopendir(fd);
	if (!dp) {
		close(fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(dp))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		/* lock names are the backend's; an old dot-lock left on disk is hidden */
		if (name_is_lock(fs, de->d_name) || dentry_find(dir, de->d_name))
			continue;
		if (dir == fs->root && !strcmp(de->d_name, LOCKFS_VIEW_DIR))
			continue;
		list_add(l, de->d_name, de->d_ino, (mode_t)DTTOIF(de->d_type), NULL);
	}
	closedir(dp);
}

/* Locks held through other mounts in DIR (stale ones are not shown, nor
 * what lookup_remote hides from a lost holder).  What is listed, the
 * process C that reads the listing is shown by lookups too while it reads
 * (remote_view_new): never a name, then `?` in ls -l. */
static void list_remote(lfs *fs, lfs_node *dir, lfs_dirlist *l, const struct lfs_caller *c)
{
	g_autofree char *prefix = node_key(fs, dir, "");
	dir->nlookup++;
	pthread_mutex_unlock(&fs->mu);
	int64_t asked = lockfs_mono_us();
	g_autoptr(GPtrArray) infos = remote_list(fs, prefix, NULL);
	pthread_mutex_lock(&fs->mu);
	dir->nlookup--;
	g_autoptr(GPtrArray) shown = g_ptr_array_new();
	for (guint i = 0; i < infos->len; i++) {
		const lockfs_lock_info *info = infos->pdata[i];
		const char *name = info->key + strlen(prefix);
		if (strchr(name, '/') || !*name || info->state == LOCKFS_STATE_STALE ||
		    dentry_find(dir, name) || lost_holder_blind(fs, info->key, info, c))
			continue;
		mode_t mode = info->holder.mode ? info->holder.mode : S_IFREG;
		list_add(l, name, remote_ino(info->key), mode, NULL);
		g_ptr_array_add(shown, infos->pdata[i]);
	}
	l->view = remote_view_new(fs, c->pid, asked, shown);
}

static void lfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	lfs *fs = F(req);
	lfs_dirlist *l = g_new0(lfs_dirlist, 1);
	l->ents = g_array_new(FALSE, FALSE, sizeof(lfs_dirent));
	LOCK(fs);
	lfs_node *dir = node_of(fs, ino);
	int r = 0;
	if (!S_ISDIR(dir->mode)) {
		r = -ENOTDIR;
	} else {
		l->dir = dir;
		dir->opens++;
		list_add(l, ".", dir->st_ino, S_IFDIR, NULL);
		list_add(l, "..", dir->parent ? dir->parent->st_ino : dir->st_ino, S_IFDIR, NULL);
		if (dir->kind == NODE_CONTROL) {
			GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
			GArray *types = g_array_new(FALSE, FALSE, sizeof(unsigned));
			control_readdir_names(fs, dir, names, types);
			/* Not inode 0: readdir(3) skips such entries, and
			 * ls .lockfs/ showed nothing. */
			for (guint i = 0; i < names->len; i++)
				list_add(l, names->pdata[i], remote_ino(names->pdata[i]),
				         g_array_index(types, unsigned, i) << 12, NULL);
			g_ptr_array_free(names, TRUE);
			g_array_free(types, TRUE);
		} else {
			if (dir->kind == NODE_DISK)
				list_disk(fs, dir, l);
			if (dir->children) {
				GHashTableIter it;
				gpointer k, v;
				g_hash_table_iter_init(&it, dir->children);
				while (g_hash_table_iter_next(&it, &k, &v)) {
					lfs_dentry *d = v;
					list_add(l, d->name, d->node->st_ino, d->node->mode,
					         d->node);
				}
			}
			if (fs->shared) {
				struct lfs_caller c = caller_of(req);
				list_remote(fs, dir, l, &c);
			}
		}
	}
	UNLOCK(fs);
	if (r) {
		dirlist_free(fs, l);
		fuse_reply_err(req, -r);
		return;
	}
	fi->fh = (uintptr_t)l;
	fuse_reply_open(req, fi);
}

static void lfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                        struct fuse_file_info *fi)
{
	(void)ino;
	lfs_dirlist *l = (lfs_dirlist *)(uintptr_t)fi->fh;
	char *buf = g_malloc(size);
	size_t used = 0;
	for (guint i = off; i < l->ents->len; i++) {
		const lfs_dirent *e = &g_array_index(l->ents, lfs_dirent, i);
		struct stat st = { .st_ino = e->ino, .st_mode = e->mode };
		size_t need = fuse_add_direntry(req, buf + used, size - used, e->name, &st, i + 1);
		if (need > size - used)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	g_free(buf);
}

/* Names with their attributes, so `ls -l` needs no LOOKUP per name where the
 * kernel may cache them (the local backend).  Names without a node here
 * (disk files, other hosts' locks) go as plain entries (node id 0). */
static void lfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                            struct fuse_file_info *fi)
{
	(void)ino;
	lfs *fs = F(req);
	lfs_dirlist *l = (lfs_dirlist *)(uintptr_t)fi->fh;
	char *buf = g_malloc(size);
	size_t used = 0;
	LOCK(fs);
	for (guint i = off; i < l->ents->len; i++) {
		lfs_dirent *e = &g_array_index(l->ents, lfs_dirent, i);
		struct fuse_entry_param ep = { .attr = { .st_ino = e->ino, .st_mode = e->mode } };
		/* Only a name that still leads to its node goes with attributes. */
		lfs_dentry *d = e->node ? dentry_find(l->dir, e->name) : NULL;
		bool live = d && d->node == e->node && fs->entry_timeout > 0;
		if (live && make_entry(fs, e->node, &ep) != 0)
			live = false;
		size_t need =
		        fuse_add_direntry_plus(req, buf + used, size - used, e->name, &ep, i + 1);
		if (need > size - used) {
			if (live) {
				e->node->nlookup--;
				node_maybe_free(fs, e->node);
			}
			break;
		}
		used += need;
	}
	UNLOCK(fs);
	fuse_reply_buf(req, buf, used);
	g_free(buf);
}

static void lfs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	dirlist_free(F(req), (lfs_dirlist *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void lfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	lfs *fs = F(req);
	struct statvfs sv;
	if (fs->root->kind != NODE_DISK || fstatvfs(fs->root->fd, &sv) != 0) {
		memset(&sv, 0, sizeof(sv));
		sv.f_bsize = sv.f_frsize = 4096;
		sv.f_blocks = sv.f_bfree = sv.f_bavail = 1 << 20;
		sv.f_files = sv.f_ffree = sv.f_favail = 1 << 20;
	}
	sv.f_namemax = NAME_MAX;
	fuse_reply_statfs(req, &sv);
}

/* "flock" or "posix" for the fence attribute of a file's flock or POSIX
 * lock held through this mount (flock_fence_key), else NULL. */
static const char *fence_kind(const char *name)
{
	if (!strcmp(name, LOCKFS_XATTR_PREFIX "flock.fence"))
		return "flock";
	if (!strcmp(name, LOCKFS_XATTR_PREFIX "posix.fence"))
		return "posix";
	return NULL;
}

static void lfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	lfs *fs = F(req);
	/* Only user attributes exist here.  Saying "not supported" of the
	 * others (ACLs, SELinux labels), not "none", lets `ls -l` stop asking
	 * for every other name of the mount (coreutils remembers it per
	 * device): two round trips per name fewer. */
	if (strncmp(name, "user.", 5) != 0) {
		fuse_reply_err(req, ENOTSUP);
		return;
	}
	g_autoptr(GString) v = g_string_new(NULL);
	const char *kind = fence_kind(name);
	pid_t tgid = kind ? lockfs_tgid(fuse_req_ctx(req)->pid) : 0;
	LOCK(fs);
	lfs_dentry *d = node_lock_dentry(fs, node_of(fs, ino));
	g_autofree char *fkey = kind ? flock_fence_key(fs, node_of(fs, ino), kind, tgid) : NULL;
	if (kind)
		d = fkey ? locks_find(fs, fkey) : NULL;
	/* As at a lookup: a lease that may have run out is lost now. */
	int r = kind && (!d || locks_lost_if_expired(fs, d)) ? -ENODATA : 0;
	/* Only the fence waits for its confirmation; the rest is at hand. */
	if (d && d->lease && !d->fence_final && (kind || !strcmp(name, "user.lockfs.fence"))) {
		g_autofree char *key = g_strdup(d->lease->key);
		uint64_t serial = d->serial;
		locks_confirm(fs, key, 0);
		/* A fence the backend could not confirm (it did not answer) may
		 * be older than another holder's since: never shown, EIO. */
		d = kind ? locks_find(fs, key) : node_lock_dentry(fs, node_of(fs, ino));
		if (kind && (!d || d->serial != serial || !d->lease || d->lost))
			r = -ENODATA; /* lost meanwhile, or another's grant by now */
		else if (d && d->lease && !d->fence_final && !d->lost)
			r = -EIO;
	}
	if (!r && kind)
		g_string_append(v, d->lease->fence);
	else if (!r)
		r = xattr_get(fs, node_of(fs, ino), name, v);
	UNLOCK(fs);
	if (r)
		fuse_reply_err(req, -r);
	else if (size == 0)
		fuse_reply_xattr(req, v->len);
	else if (size < v->len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, v->str, v->len);
}

static void lfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	lfs *fs = F(req);
	g_autoptr(GString) v = g_string_new(NULL);
	LOCK(fs);
	lfs_node *n = node_of(fs, ino);
	xattr_list(fs, n, v);
	for (const char *const *k = (const char *const[]){ "flock", "posix", NULL }; *k; k++) {
		g_autofree char *key = flock_fence_key(fs, n, *k, 0);
		if (key)
			g_string_append_printf(v, "%s%s.fence%c", LOCKFS_XATTR_PREFIX, *k, '\0');
	}
	UNLOCK(fs);
	if (size == 0)
		fuse_reply_xattr(req, v->len);
	else if (size < v->len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, v->str, v->len);
}

/* "user.lockfs.break" on a lock file: the same request as .lockfs/break,
 * where the kernel lets the caller set user attributes on the file. */
static void lfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                         size_t size, int flags)
{
	(void)flags;
	lfs *fs = F(req);
	if (strcmp(name, "user.lockfs.break") != 0) {
		fuse_reply_err(req, ENOTSUP);
		return;
	}
	g_autofree char *fence = size ? g_strndup(value, size) : NULL;
	g_autofree char *bname = NULL;
	fuse_ino_t parent = 0;
	LOCK(fs);
	lfs_node *n = node_of(fs, ino);
	lfs_dentry *d = node_lock_dentry(fs, n);
	int r;
	if (!(d && d->lease) && n->remote) {
		g_autofree char *key = g_strdup(n->remote->key);
		r = break_remote_for(fs, req, key, fence);
	} else {
		r = break_for(fs, req, d, fence, &parent, &bname);
		if (!r) /* the caller holds the file's inode lock: tell the kernel later */
			inval_entry(fs, node_of(fs, parent), bname);
	}
	UNLOCK(fs);
	fuse_reply_err(req, -r);
}

static void lfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)ino;
	(void)name;
	fuse_reply_err(req, ENOTSUP);
}

static void lfs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	/* default_permissions makes the kernel decide; this answers only if it
	 * asks anyway. */
	(void)ino;
	(void)mask;
	fuse_reply_err(req, 0);
}

static void lfs_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* Content and attributes change behind the kernel's back (other
	 * holders, expiry): never cache writes. */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* flock(2) comes here (.flock), to be held in the backend. */
	if (conn->capable & FUSE_CAP_FLOCK_LOCKS)
		conn->want |= FUSE_CAP_FLOCK_LOCKS;
	/* And fcntl(2)/lockf(3) record locks (.getlk, .setlk). */
	if (conn->capable & FUSE_CAP_POSIX_LOCKS)
		conn->want |= FUSE_CAP_POSIX_LOCKS;
	/* The caller's umask comes here, to be applied as the disk would
	 * (make_node): lockfs's own must not be added to it. */
	if (conn->capable & FUSE_CAP_DONT_MASK) {
		conn->want |= FUSE_CAP_DONT_MASK;
		dont_mask = true;
	}
}

const struct fuse_lowlevel_ops lfs_ops = {
	.init = lfs_init,
	.lookup = lfs_lookup,
	.forget = lfs_forget,
	.forget_multi = lfs_forget_multi,
	.getattr = lfs_getattr,
	.setattr = lfs_setattr,
	.readlink = lfs_readlink,
	.mknod = lfs_mknod,
	.mkdir = lfs_mkdir,
	.symlink = lfs_symlink,
	.link = lfs_link,
	.unlink = lfs_unlink,
	.rmdir = lfs_rmdir,
	.rename = lfs_rename,
	.create = lfs_create,
	.open = lfs_open,
	.read = lfs_read,
	.write = lfs_write,
	.flush = lfs_flush,
	.release = lfs_release,
	.fsync = lfs_fsync,
	.flock = lfs_flock,
	.getlk = lfs_getlk,
	.setlk = lfs_setlk,
	.opendir = lfs_opendir,
	.readdir = lfs_readdir,
	.readdirplus = lfs_readdirplus,
	.releasedir = lfs_releasedir,
	.statfs = lfs_statfs,
	.getxattr = lfs_getxattr,
	.listxattr = lfs_listxattr,
	.setxattr = lfs_setxattr,
	.removexattr = lfs_removexattr,
	.access = lfs_access,
};

lfs *lfs_new(const lockfs_settings *set, lockfs_backend *be, const char *mountpoint, int under_fd,
             bool passthrough)
{
	lfs *fs = g_new0(lfs, 1);
	pthread_mutex_init(&fs->mu, NULL);
	fs->set = set;
	fs->be = metrics_wrap_backend(be); /* times every call: .lockfs/metrics */
	fs->mountpoint = g_strdup(mountpoint);
	fs->suffix_len = strlen(set->suffix);
	fs->disk_nodes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	locks_init(fs);
	/* Claims are waited for with deadlines (locks_claim_bounded), which a
	 * wall clock step must not stretch. */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fs->cond, &ca);
	pthread_condattr_destroy(&ca);
	fs->shared = be->flags & LOCKFS_BACKEND_SHARED;
	remote_init(fs);
	/* Memory inode numbers stay clear of the disk's when both are shown. */
	fs->next_ino = passthrough ? (1ull << 62) : 2;
	fs->stale_after_us = set->stale_after_ms * 1000;
	fs->attr_timeout = (be->flags & LOCKFS_BACKEND_SHARED) ? 0 : 1.0;
	fs->entry_timeout = fs->attr_timeout;
	fs->heartbeat_min_us = set->heartbeat_min_ms * 1000;
	/* A rate limit must never let a heartbeated lock look stale. */
	if (fs->stale_after_us && fs->heartbeat_min_us > fs->stale_after_us / 4)
		fs->heartbeat_min_us = fs->stale_after_us / 4;
	if (passthrough) {
		struct stat st;
		fstatat(under_fd, "", &st, AT_EMPTY_PATH);
		fs->root = node_new(fs, NODE_DISK, st.st_mode, st.st_uid, st.st_gid);
		fs->root->fd = under_fd;
		fs->root->dev = st.st_dev;
		fs->root->dino = st.st_ino;
		fs->root->st_ino = st.st_ino;
		g_hash_table_insert(fs->disk_nodes,
		                    g_strdup_printf("%lu:%lu", (unsigned long)st.st_dev,
		                                    (unsigned long)st.st_ino),
		                    fs->root);
	} else {
		fs->root =
		        node_new(fs, NODE_MEM, S_IFDIR | set->dir_mode, set->dir_uid, set->dir_gid);
		if (under_fd >= 0)
			close(under_fd);
	}
	fs->control = node_new(fs, NODE_CONTROL, S_IFDIR | 0555, 0, 0);
	fs->control->ctl_path = g_strdup("");
	fs->control->parent = fs->root;
	flock_init(fs);
	return fs;
}

/* At exit, once every thread but the caller's has ended and the session is
 * destroyed: the whole model, then the backend instance, whose destroy()
 * lets go of nothing (the locks stay their holders', for the next lockfs).
 * Freed rather than left to exit(2) so that a leak checker's report is of
 * real leaks only. */
void lfs_free(lfs *fs)
{
	flock_fini(fs);
	locks_fini(fs);
	nodes_fini(fs);
	remote_fini(fs);
	fs->be->destroy(fs->be); /* the timing wrapper's: the backend's too */
	g_free(fs->session);
	g_free(fs->mountpoint);
	pthread_cond_destroy(&fs->cond);
	pthread_mutex_destroy(&fs->mu);
	g_free(fs);
}

void lfs_attach_session(lfs *fs, struct fuse_session *se)
{
	fs->se = se;
}

const char *lfs_mountpoint(const lfs *fs)
{
	return fs->mountpoint;
}

const char *lfs_backend_name(const lfs *fs)
{
	return fs->be->name;
}

char *lfs_metrics_text(lfs *fs)
{
	GString *out = g_string_new(NULL);
	LOCK(fs);
	control_metrics(fs, out);
	UNLOCK(fs);
	return g_string_free(out, FALSE);
}
