/* The record of a mount's held locks in state_dir, for a restart.
 *
 * A lock belongs to the program that took it, not to the lockfs process: a
 * lockfs started again for the same mount takes back what the previous one
 * held (fs_restart.c).  For that it needs, for every lock held, what the
 * backend needs to adopt its lease (key, fence, token) and what the lock
 * file showed (holder record, content, mode, times).  This file keeps them.
 *
 * Format: a text file, "STATE_DIR/mount" + the escaped mount point +
 * ".locks", flock()ed by the one lockfs using it:
 *
 *     lockfs-locks 1
 *     mount ESC       host ESC       backend NAME       server ESC
 *     boot BOOT_ID    (a host restart kills every holder: nothing to take back)
 *     session TOKEN   (where the backend has one; a later line replaces it)
 *     G SERIAL KEY FENCE TOKEN PID PPID START UID GID MODE ACQ HB MT AT CT HOST USER CMD CONTENT
 *     R SERIAL
 *
 * G records a grant, or replaces the record of SERIAL (a heartbeat, new
 * content, a confirmed fence); R its end.  Strings are escaped: bytes
 * outside 0x21..0x7e and '%' as %XX, "%" alone for the empty string;
 * CONTENT is base64.  Appended with one write(2) per record and never
 * fsync'd: a killed lockfs leaves the kernel's page cache, which a later
 * one reads; a host crash kills the holders too (the boot id then differs
 * and nothing is taken back).  Rewritten whole (temp file, rename) when the
 * appended lines outgrow the locks they describe. */
#ifndef LOCKFS_LOCKSTATE_H
#define LOCKFS_LOCKSTATE_H

#include <glib.h>
#include <lockfs/backend.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct lockfs_lockstate lockfs_lockstate;

/* One lock as recorded. */
typedef struct {
	uint64_t serial;
	char *key;
	char fence[LOCKFS_FENCE_MAX];
	char *token;          /* the backend's lease_token() */
	lockfs_holder holder; /* mode and times: the lock file's */
	int64_t ppid;         /* the holder's parent when it took the lock */
	uint64_t start;       /* the holder's start time (/proc/PID/stat, ticks) */
	char *content;        /* NULL when empty */
	size_t content_len;
} lockfs_lockrec;

void lockfs_lockrec_clear(lockfs_lockrec *r);
void lockfs_lockrec_free(gpointer r);

/* Whom the file is for: a record of another mount, host, backend or server
 * is refused, never taken back. */
typedef struct {
	const char *mount, *host, *backend, *server;
} lockfs_lockstate_id;

/* What a file held when it was opened. */
typedef struct lockfs_lockstate_found {
	GPtrArray *locks; /* lockfs_lockrec *, in serial order */
	char *session;    /* the backend's session token, or NULL */
	bool other_boot;  /* written before this host last started */
	/* Its header: mount, host, backend, server, boot id (NULL: none). */
	char *header[5];
	guint skipped; /* a torn last line (a full disk), skipped */
} lockfs_lockstate_found;
void lockfs_lockstate_found_clear(lockfs_lockstate_found *f);

/* The file's path for mount point MOUNT in DIR (g_free). */
char *lockfs_lockstate_path(const char *dir, const char *mount);

/* Open and flock the file of ID in DIR, creating it (and DIR) when missing,
 * waiting up to WAIT_MS for a previous lockfs of the mount to exit; read
 * what it holds into FOUND.  NULL with a one-line error naming the file and
 * what to do: another lockfs uses it, it records locks of another mount,
 * host, backend or server (ID's fields, NULL: not checked), it is not a
 * lock record, it cannot be written.  A record of another without a lock
 * held is only replaced. */
lockfs_lockstate *lockfs_lockstate_open(const char *dir, const lockfs_lockstate_id *id, int wait_ms,
                                        lockfs_lockstate_found *found, GError **error);

/* Parse TEXT (LEN bytes) as a lock record file into FOUND: false with an
 * error naming NAME:LINE.  For lockfsctl and the fuzzer too. */
bool lockfs_lockstate_parse(const char *name, const char *text, size_t len,
                            lockfs_lockstate_found *found, GError **error);
/* Whether FOUND, holding locks, was recorded for another than ID: false
 * with the error to say (NAME names the file). */
bool lockfs_lockstate_check(const char *name, const lockfs_lockstate_found *found,
                            const lockfs_lockstate_id *id, GError **error);

/* Append a grant (or a new version of REC->serial); a release; the session.
 * 0 or a negative errno (logged once per failure streak by the caller). */
int lockfs_lockstate_grant(lockfs_lockstate *st, const lockfs_lockrec *rec);
int lockfs_lockstate_release(lockfs_lockstate *st, uint64_t serial);
int lockfs_lockstate_session(lockfs_lockstate *st, const char *token);

/* Whether the appended lines outgrow LIVE records enough to rewrite. */
bool lockfs_lockstate_wants_rewrite(const lockfs_lockstate *st, guint live);
/* Rewrite the file with the records of LOCKS (lockfs_lockrec *) and the
 * session only: 0 or a negative errno (the old file is kept). */
int lockfs_lockstate_rewrite(lockfs_lockstate *st, GPtrArray *locks, const char *session);

/* The header written from now on (at the next rewrite): ID's. */
void lockfs_lockstate_set_id(lockfs_lockstate *st, const lockfs_lockstate_id *id);
const char *lockfs_lockstate_file(const lockfs_lockstate *st);
void lockfs_lockstate_close(lockfs_lockstate *st);

/* This host's boot id (/proc/sys/kernel/random/boot_id), "" when unknown. */
const char *lockfs_boot_id(void);
/* The start time of PID (field 22 of /proc/PID/stat), 0 when it is gone. */
uint64_t lockfs_pid_start(int64_t pid);

#endif
