/* noopfs: the floor for lockbench.
 *
 * A flat, in-memory filesystem on the libfuse3 low-level API that answers the
 * requests of a lock cycle (lookup, create, write, link, unlink, ...) with as
 * little work as a correct filesystem can do: one mutex, one hash table of
 * names in the root directory, nothing else.  Whatever lockfs costs above this
 * is lockfs's own overhead; what it costs below it is the kernel's and
 * libfuse's and cannot be won back.
 *
 * For the comparison to mean anything the kernel must send noopfs the same
 * requests it sends lockfs, so every entry and attribute timeout is 0 (lockfs
 * cannot cache: other hosts create and remove lock names behind the kernel's
 * back), negative lookups are not cached either, the mount has lockfs's
 * default_permissions, and the loop is the same multi-threaded one.
 *
 *   noopfs MOUNTPOINT [-f] [-s] [-d] [-o allow_other,clone_fd=0,max_threads=N]
 *
 * -s runs fuse_session_loop (one thread) instead of fuse_session_loop_mt.
 * -o attr_timeout=S lets the kernel cache attributes, only to mirror a lockfs
 * build that does; names (entries, negative or not) are never cached.
 */
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <glib.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* Lock files hold a pid or a short holder record; lockfs caps content at 4 KiB
 * too, so a fixed buffer is enough and keeps write/read trivial. */
#define DATA_MAX 4096

struct node {
	uint64_t nlookup; /* kernel references; freed at 0 once unlinked */
	ino_t st_ino;     /* small number for stat; the FUSE nodeid is the pointer */
	nlink_t nlink;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	off_t size;
	struct timespec atime, mtime, ctime;
	char *data; /* DATA_MAX bytes, allocated on first write or truncate up */
};

/* One lock for everything: a lock cycle touches the table on almost every
 * request, and a single uncontended mutex is the cheapest correct choice. */
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static double attr_timeout;  /* 0 unless -o attr_timeout=S */
static double entry_timeout; /* 0 unless -o entry_timeout=S */
static GHashTable *names;    /* name (owned) -> struct node *, root entries only */
static struct node root;
static ino_t next_ino = 2;

/* The nodeid is the node's address, so no second table is needed to map
 * nodeids back; a node lives until the kernel forgets it, so an address is
 * never reused while the kernel still knows it. */
static struct node *node_of(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &root : (struct node *)(uintptr_t)ino;
}

static fuse_ino_t nodeid_of(struct node *n)
{
	return n == &root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

static struct timespec now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

static void fill_stat(const struct node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->st_ino;
	st->st_mode = n->mode;
	st->st_nlink = n->nlink;
	st->st_uid = n->uid;
	st->st_gid = n->gid;
	st->st_size = n->size;
	st->st_blksize = 4096;
	st->st_blocks = (n->size + 511) / 512;
	st->st_atim = n->atime;
	st->st_mtim = n->mtime;
	st->st_ctim = n->ctime;
}

/* Caller holds the mutex.  Counts the lookup the reply will hand the kernel. */
static void fill_entry(struct node *n, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = nodeid_of(n);
	e->attr_timeout = attr_timeout;
	e->entry_timeout = entry_timeout;
	fill_stat(n, &e->attr);
	n->nlookup++;
}

/* Caller holds the mutex. */
static void maybe_free(struct node *n)
{
	if (n == &root || n->nlookup > 0 || n->nlink > 0)
		return;
	g_free(n->data);
	g_free(n);
}

/* The reply did not reach the kernel (request interrupted): it holds no
 * reference, so take back the one fill_entry counted. */
static void undo_lookup(struct node *n)
{
	pthread_mutex_lock(&mutex);
	n->nlookup--;
	maybe_free(n);
	pthread_mutex_unlock(&mutex);
}

static void touch_root(struct timespec t)
{
	root.mtime = t;
	root.ctime = t;
}

static void nfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	struct node *n = NULL;

	pthread_mutex_lock(&mutex);
	if (parent == FUSE_ROOT_ID)
		n = g_hash_table_lookup(names, name);
	if (!n) {
		pthread_mutex_unlock(&mutex);
		/* ino 0 with timeout 0: a negative entry the kernel may not reuse,
		 * exactly what lockfs answers. */
		memset(&e, 0, sizeof(e));
		fuse_reply_entry(req, &e);
		return;
	}
	fill_entry(n, &e);
	pthread_mutex_unlock(&mutex);
	if (fuse_reply_entry(req, &e) != 0)
		undo_lookup(n);
}

static void forget_one(fuse_ino_t ino, uint64_t nlookup)
{
	struct node *n = node_of(ino);

	if (n == &root)
		return;
	n->nlookup -= nlookup;
	maybe_free(n);
}

static void nfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	pthread_mutex_lock(&mutex);
	forget_one(ino, nlookup);
	pthread_mutex_unlock(&mutex);
	fuse_reply_none(req);
}

static void nfs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	pthread_mutex_lock(&mutex);
	for (size_t i = 0; i < count; i++)
		forget_one(forgets[i].ino, forgets[i].nlookup);
	pthread_mutex_unlock(&mutex);
	fuse_reply_none(req);
}

static void nfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	pthread_mutex_lock(&mutex);
	fill_stat(node_of(ino), &st);
	pthread_mutex_unlock(&mutex);
	fuse_reply_attr(req, &st, attr_timeout);
}

/* Caller holds the mutex.  Shrinking clears the tail so growing again reads
 * zeros, as on a real file. */
static int set_size(struct node *n, off_t size)
{
	if (size < 0 || size > DATA_MAX)
		return EFBIG;
	if (size > n->size && !n->data)
		n->data = g_malloc0(DATA_MAX);
	if (size < n->size && n->data)
		memset(n->data + size, 0, n->size - size);
	n->size = size;
	return 0;
}

static void nfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                        struct fuse_file_info *fi)
{
	struct node *n = node_of(ino);
	struct timespec t = now();
	struct stat st;
	int err = 0;

	(void)fi;
	pthread_mutex_lock(&mutex);
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (S_ISDIR(n->mode))
			err = EISDIR;
		else
			err = set_size(n, attr->st_size);
		if (!err)
			n->mtime = t;
	}
	if (!err) {
		if (to_set & FUSE_SET_ATTR_MODE)
			n->mode = (n->mode & S_IFMT) | (attr->st_mode & 07777);
		if (to_set & FUSE_SET_ATTR_UID)
			n->uid = attr->st_uid;
		if (to_set & FUSE_SET_ATTR_GID)
			n->gid = attr->st_gid;
		if (to_set & FUSE_SET_ATTR_ATIME)
			n->atime = attr->st_atim;
		if (to_set & FUSE_SET_ATTR_ATIME_NOW)
			n->atime = t;
		if (to_set & FUSE_SET_ATTR_MTIME)
			n->mtime = attr->st_mtim;
		if (to_set & FUSE_SET_ATTR_MTIME_NOW)
			n->mtime = t;
		n->ctime = (to_set & FUSE_SET_ATTR_CTIME) ? attr->st_ctim : t;
		fill_stat(n, &st);
	}
	pthread_mutex_unlock(&mutex);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_attr(req, &st, attr_timeout);
}

static struct node *new_node(fuse_req_t req, mode_t mode, struct timespec t)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct node *n = g_new0(struct node, 1);

	n->st_ino = next_ino++;
	n->nlink = 1;
	n->mode = S_IFREG | (mode & 07777);
	n->uid = ctx->uid;
	n->gid = ctx->gid;
	n->atime = n->mtime = n->ctime = t;
	return n;
}

static void nfs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                       struct fuse_file_info *fi)
{
	struct timespec t = now();
	struct fuse_entry_param e;
	struct node *n;

	if (parent != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!S_ISREG(mode)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	pthread_mutex_lock(&mutex);
	if (g_hash_table_contains(names, name)) {
		/* Another host (or thread) made it between lookup and create. */
		pthread_mutex_unlock(&mutex);
		fuse_reply_err(req, EEXIST);
		return;
	}
	n = new_node(req, mode, t);
	g_hash_table_insert(names, g_strdup(name), n);
	touch_root(t);
	fill_entry(n, &e);
	pthread_mutex_unlock(&mutex);
	fi->fh = 0;
	if (fuse_reply_create(req, &e, fi) != 0)
		undo_lookup(n);
}

static void nfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = node_of(ino);

	/* libfuse negotiates atomic O_TRUNC by default, so truncation arrives here
	 * rather than as a separate setattr. */
	if (fi->flags & O_TRUNC) {
		struct timespec t = now();

		pthread_mutex_lock(&mutex);
		set_size(n, 0);
		n->mtime = n->ctime = t;
		pthread_mutex_unlock(&mutex);
	}
	fi->fh = 0;
	fuse_reply_open(req, fi);
}

static void nfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void nfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

/* flock(2) and fcntl(2) locks: granted at once, so that the kernel sends
 * them here as it sends them to lockfs (which takes them in its backend)
 * instead of keeping them itself: the fair floor of lockbench's flock and
 * fcntl cycles.  Nothing is recorded; a floor never refuses. */
static void nfs_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	(void)ino;
	(void)fi;
	(void)op;
	fuse_reply_err(req, 0);
}

static void nfs_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock)
{
	(void)ino;
	(void)fi;
	lock->l_type = F_UNLCK;
	fuse_reply_lock(req, lock);
}

static void nfs_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
                      int sleep)
{
	(void)ino;
	(void)fi;
	(void)lock;
	(void)sleep;
	fuse_reply_err(req, 0);
}

static void nfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                      struct fuse_file_info *fi)
{
	struct node *n = node_of(ino);
	struct timespec t;

	(void)fi;
	if (off < 0 || size > DATA_MAX || off > DATA_MAX - (off_t)size) {
		fuse_reply_err(req, EFBIG);
		return;
	}
	t = now();
	pthread_mutex_lock(&mutex);
	if (!n->data)
		n->data = g_malloc0(DATA_MAX);
	memcpy(n->data + off, buf, size);
	if (off + (off_t)size > n->size)
		n->size = off + size;
	n->mtime = n->ctime = t;
	pthread_mutex_unlock(&mutex);
	fuse_reply_write(req, size);
}

static void nfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
	struct node *n = node_of(ino);
	char buf[DATA_MAX];
	size_t len = 0;

	(void)fi;
	pthread_mutex_lock(&mutex);
	if (off >= 0 && off < n->size) {
		len = n->size - off;
		if (len > size)
			len = size;
		if (n->data)
			memcpy(buf, n->data + off, len);
		else
			memset(buf, 0, len);
	}
	pthread_mutex_unlock(&mutex);
	fuse_reply_buf(req, buf, len);
}

static void nfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct node *n = node_of(ino);
	struct timespec t = now();
	struct fuse_entry_param e;

	if (newparent != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (n == &root) {
		fuse_reply_err(req, EPERM);
		return;
	}
	pthread_mutex_lock(&mutex);
	if (g_hash_table_contains(names, newname)) {
		pthread_mutex_unlock(&mutex);
		fuse_reply_err(req, EEXIST);
		return;
	}
	n->nlink++;
	n->ctime = t;
	g_hash_table_insert(names, g_strdup(newname), n);
	touch_root(t);
	fill_entry(n, &e);
	pthread_mutex_unlock(&mutex);
	if (fuse_reply_entry(req, &e) != 0)
		undo_lookup(n);
}

static void nfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct timespec t = now();
	struct node *n = NULL;

	pthread_mutex_lock(&mutex);
	if (parent == FUSE_ROOT_ID)
		n = g_hash_table_lookup(names, name);
	if (!n) {
		pthread_mutex_unlock(&mutex);
		fuse_reply_err(req, ENOENT);
		return;
	}
	g_hash_table_remove(names, name);
	n->nlink--;
	n->ctime = t;
	touch_root(t);
	maybe_free(n);
	pthread_mutex_unlock(&mutex);
	fuse_reply_err(req, 0);
}

/* opendir takes a snapshot so readdir offsets stay stable while names come and
 * go; one allocation for the entries and one for all the names. */
struct dent {
	const char *name;
	ino_t st_ino;
	mode_t mode;
};

struct snapshot {
	size_t count;
	struct dent *d;
	char *names;
};

static void nfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct snapshot *s;
	GHashTableIter it;
	gpointer key, value;
	size_t total = 0, i = 0;
	char *p;

	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	s = g_new0(struct snapshot, 1);
	pthread_mutex_lock(&mutex);
	s->count = g_hash_table_size(names);
	g_hash_table_iter_init(&it, names);
	while (g_hash_table_iter_next(&it, &key, NULL))
		total += strlen(key) + 1;
	s->d = g_new(struct dent, s->count);
	p = s->names = g_malloc(total ? total : 1);
	g_hash_table_iter_init(&it, names);
	while (g_hash_table_iter_next(&it, &key, &value)) {
		size_t len = strlen(key) + 1;
		struct node *n = value;

		memcpy(p, key, len);
		s->d[i].name = p;
		s->d[i].st_ino = n->st_ino;
		s->d[i].mode = n->mode;
		p += len;
		i++;
	}
	pthread_mutex_unlock(&mutex);
	fi->fh = (uint64_t)(uintptr_t)s;
	fuse_reply_open(req, fi);
}

static void nfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                        struct fuse_file_info *fi)
{
	struct snapshot *s = (struct snapshot *)(uintptr_t)fi->fh;
	char *buf = g_malloc(size);
	size_t pos = 0;
	struct stat st;

	(void)ino;
	memset(&st, 0, sizeof(st));
	/* Offsets 0 and 1 are "." and ".."; entry i of the snapshot is i + 2. */
	for (size_t i = off < 0 ? 0 : (size_t)off; i < s->count + 2; i++) {
		const char *name;
		size_t len;

		if (i < 2) {
			name = i == 0 ? "." : "..";
			st.st_ino = 1;
			st.st_mode = S_IFDIR;
		} else {
			name = s->d[i - 2].name;
			st.st_ino = s->d[i - 2].st_ino;
			st.st_mode = s->d[i - 2].mode;
		}
		len = fuse_add_direntry(req, buf + pos, size - pos, name, &st, (off_t)i + 1);
		if (len > size - pos)
			break;
		pos += len;
	}
	fuse_reply_buf(req, buf, pos);
	g_free(buf);
}

/* With names cached (-o entry_timeout), lockfs answers readdirplus with
 * entries; so does the floor, under the same rule: a name that still leads
 * to a node goes with its attributes. */
static void nfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                            struct fuse_file_info *fi)
{
	struct snapshot *s = (struct snapshot *)(uintptr_t)fi->fh;
	char *buf = g_malloc(size);
	size_t pos = 0;

	(void)ino;
	pthread_mutex_lock(&mutex);
	for (size_t i = off < 0 ? 0 : (size_t)off; i < s->count + 2; i++) {
		struct fuse_entry_param e;
		struct node *n = NULL;
		const char *name;
		size_t len;

		memset(&e, 0, sizeof(e));
		if (i < 2) {
			name = i == 0 ? "." : "..";
			e.attr.st_ino = 1;
			e.attr.st_mode = S_IFDIR;
		} else {
			name = s->d[i - 2].name;
			e.attr.st_ino = s->d[i - 2].st_ino;
			e.attr.st_mode = s->d[i - 2].mode;
			n = entry_timeout > 0 ? g_hash_table_lookup(names, name) : NULL;
			if (n)
				fill_entry(n, &e);
		}
		len = fuse_add_direntry_plus(req, buf + pos, size - pos, name, &e, (off_t)i + 1);
		if (len > size - pos) {
			if (n)
				n->nlookup--;
			break;
		}
		pos += len;
	}
	pthread_mutex_unlock(&mutex);
	fuse_reply_buf(req, buf, pos);
	g_free(buf);
}

static void nfs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct snapshot *s = (struct snapshot *)(uintptr_t)fi->fh;

	(void)ino;
	g_free(s->d);
	g_free(s->names);
	g_free(s);
	fuse_reply_err(req, 0);
}

static void nfs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	(void)ino;
	(void)mask;
	fuse_reply_err(req, 0);
}

static void nfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_namemax = 255;
	pthread_mutex_lock(&mutex);
	sv.f_files = g_hash_table_size(names) + 1;
	pthread_mutex_unlock(&mutex);
	sv.f_ffree = sv.f_favail = 1000000;
	fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = nfs_lookup,
	.forget = nfs_forget,
	.forget_multi = nfs_forget_multi,
	.getattr = nfs_getattr,
	.setattr = nfs_setattr,
	.create = nfs_create,
	.open = nfs_open,
	.release = nfs_release,
	.flush = nfs_flush,
	.write = nfs_write,
	.read = nfs_read,
	.link = nfs_link,
	.unlink = nfs_unlink,
	.opendir = nfs_opendir,
	.readdir = nfs_readdir,
	.readdirplus = nfs_readdirplus,
	.releasedir = nfs_releasedir,
	.access = nfs_access,
	.statfs = nfs_statfs,
	.flock = nfs_flock,
	.getlk = nfs_getlk,
	.setlk = nfs_setlk,
};

static void usage(const char *prog)
{
	printf("usage: %s MOUNTPOINT [-f] [-s] [-d] [-o allow_other,...]\n"
	       "  -f                 stay in the foreground\n"
	       "  -s                 single-threaded loop (default: fuse_session_loop_mt)\n"
	       "  -o clone_fd=0      one shared /dev/fuse fd (default: a cloned fd per worker)\n"
	       "  -o max_threads=N   worker limit of the multi-threaded loop (libfuse's 10)\n"
	       "  -o attr_timeout=S  attribute cache time in seconds (default 0)\n"
	       "  -o entry_timeout=S name cache time in seconds (default 0)\n",
	       prog);
}

/* Options libfuse does not know, parsed before it sees the rest.  clone_fd is
 * on unless "-o clone_fd=0": libfuse's own "-o clone_fd" cannot say off. */
struct conf {
	unsigned clone_fd;
	double attr_timeout;
	double entry_timeout;
};
static const struct fuse_opt noopfs_opts[] = {
	{ "clone_fd=%u", offsetof(struct conf, clone_fd), 0 },
	{ "attr_timeout=%lf", offsetof(struct conf, attr_timeout), 0 },
	{ "entry_timeout=%lf", offsetof(struct conf, entry_timeout), 0 },
	FUSE_OPT_END,
};

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	struct fuse_session *se;
	struct timespec t = now();
	struct conf conf = { .clone_fd = 1, .attr_timeout = 0.0 };
	int ret = 1;

	if (fuse_opt_parse(&args, &conf, noopfs_opts, NULL) != 0 ||
	    fuse_parse_cmdline(&args, &opts) != 0)
		return 1;
	attr_timeout = conf.attr_timeout;
	entry_timeout = conf.entry_timeout;
	if (opts.show_help) {
		usage(argv[0]);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		ret = 0;
		goto out_args;
	}
	if (opts.show_version) {
		printf("FUSE library version %s\n", fuse_pkgversion());
		fuse_lowlevel_version();
		ret = 0;
		goto out_args;
	}
	if (!opts.mountpoint) {
		usage(argv[0]);
		goto out_args;
	}

	/* The root looks like lockfs's default: sticky, world-writable, owned by
	 * whoever mounted it. */
	root.st_ino = FUSE_ROOT_ID;
	root.nlink = 2;
	root.mode = S_IFDIR | 01777;
	root.uid = getuid();
	root.gid = getgid();
	root.atime = root.mtime = root.ctime = t;
	names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

	/* lockfs always mounts with default_permissions; with zero attribute
	 * timeouts that makes the kernel fetch attributes before each permission
	 * check, a cost the floor must share. */
	fuse_opt_add_arg(&args, "-odefault_permissions,fsname=noopfs,subtype=noopfs");
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		goto out_args;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, opts.mountpoint) != 0)
		goto out_signals;
	fuse_daemonize(opts.foreground);

	if (opts.singlethread) {
		ret = fuse_session_loop(se);
	} else {
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();

		fuse_loop_cfg_set_clone_fd(cfg, conf.clone_fd || opts.clone_fd);
		fuse_loop_cfg_set_max_threads(cfg, opts.max_threads);
		if (opts.max_idle_threads != UINT_MAX) /* -1: not given */
			fuse_loop_cfg_set_idle_threads(cfg, opts.max_idle_threads);
		ret = fuse_session_loop_mt(se, cfg);
		fuse_loop_cfg_destroy(cfg);
	}
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_args:
	free(opts.mountpoint);
	fuse_opt_free_args(&args);
	return ret ? 1 : 0;
}
