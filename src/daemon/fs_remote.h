/* fs_remote.c: locks held through other mounts (shared backends). */
#ifndef LOCKFS_FS_REMOTE_H
#define LOCKFS_FS_REMOTE_H

#include "fs.h"

/* These are called without fs->mu: they may wait on the network. */
void remote_init(lfs *fs);
void remote_fini(lfs *fs); /* at exit */
void remote_forget(lfs *fs, const char *key);
/* Where the backend can tell of a change (etcd's watch(), tinystore's
 * wait_free()): a thread that forgets what the table says of a key another
 * mount changed, as the backend reports it. */
void remote_watch_start(lfs *fs);
void remote_watch_stop(lfs *fs);
/* This mount just released KEY: free, as far as lookups within list_cache go. */
void remote_note_free(lfs *fs, const char *key);
/* KEY as the backend has it, at most list_cache old unless FRESH. */
int remote_get(lfs *fs, const char *key, bool fresh, lockfs_lock_info *out);
/* The backend refused KEY as held: remember what it says of the holder, or a
 * fresh lock of an unknown holder when it has no record (for list_cache).
 * Called without fs->mu. */
void remote_note_refused(lfs *fs, const char *key);

/* Every lock under PREFIX (lockfs_lock_info *, free with remote_info_free),
 * but one this mount let go of after the listing was asked for.  ERR (may be
 * NULL): 0, or -EIO when the backend could not list (then nothing). */
GPtrArray *remote_list(lfs *fs, const char *prefix, int *err);

/* A listing as its reader saw it (fs_remote.c, "What one listing showed"):
 * made from the INFOS a readdir of process TGID listed, asked for at ASKED;
 * closed when its directory handle goes (then freed by fs_remote once
 * nobody believes it).  NULL: nothing listed. */
typedef struct remote_view remote_view;
remote_view *remote_view_new(lfs *fs, pid_t tgid, int64_t asked, const GPtrArray *infos);
void remote_view_close(lfs *fs, remote_view *v);
/* KEY as a listing TGID still believes showed it: 0 (*OUT), or
 * -ENOENT when no such listing named it. */
int remote_view_get(lfs *fs, pid_t tgid, const char *key, lockfs_lock_info *out);
void remote_info_free(gpointer p);
void remote_info_copy(lockfs_lock_info *dst, const lockfs_lock_info *src);
/* Under fs->mu: a read-only node showing INFO (copied). */
lfs_node *remote_node_new(lfs *fs, const lockfs_lock_info *info);
/* A node for KEY, which the backend refused to this mount and nobody
 * describes: an unknown holder's fresh lock (fs_remote.c). */
lfs_node *remote_node_refused(lfs *fs, const char *key);
uint64_t remote_ino(const char *key);

#endif
