/* The text of the inspection view, written by the daemon and read by
 * lockfsctl: both sides use this one implementation (issue 13).
 *
 *   .lockfs/status   one line per lock: KEY, then NAME=VALUE fields separated
 *                    by single spaces (lockfs_view_status_line)
 *   .lockfs/PATH     one "NAME: VALUE" line per field (lockfs_view_lock_text)
 *   .lockfs/break    a request "KEY [FENCE]\n" (lockfs_view_break_request)
 *
 * Holder records come from other hosts through shared backends, so every key
 * and value is escaped (lockfs_escape) wherever it is written: a host name,
 * user or command line can neither add a line nor a field.  The escape is
 * "\NNN", three octal digits of one byte, as in /proc/mounts, and it is used
 * for
 *   - every byte below 0x21 (control characters and the space) and 0x7f;
 *   - the backslash;
 *   - every byte of a sequence that is not well-formed UTF-8 (RFC 3629: no
 *     overlong forms, surrogates or code points above U+10FFFF);
 *   - every byte of the UTF-8 form of a character that terminals or readers
 *     take for a control or a line break: the C1 controls U+0080-U+009F
 *     (U+009B is CSI), U+2028 and U+2029 (line and paragraph separators), and
 *     the bidirectional marks and overrides U+200E, U+200F, U+202A-U+202E
 *     and U+2066-U+2069, which make text read other than it is.
 * Other UTF-8 (user names, paths and commands in any script) is written as
 * it is.  The result is valid UTF-8 with no control character and no space.
 *
 * lockfs_unescape accepts "\" only before three octal digits of a byte
 * (\000-\377); any other backslash is an error, never taken literally.  Bytes
 * that are not escapes are taken as they are, so a request typed by hand
 * with a plain key works. */
#ifndef LOCKFS_VIEW_FORMAT_H
#define LOCKFS_VIEW_FORMAT_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The control directory at the mount root and the files in it. */
#define LOCKFS_VIEW_DIR ".lockfs"
#define LOCKFS_VIEW_STATUS "status"
#define LOCKFS_VIEW_BREAK "break"
#define LOCKFS_VIEW_METRICS "metrics" /* Prometheus text format (metrics.c) */
/* The extended attributes of lock files (their values are not escaped: one
 * attribute is one value, with no framing to forge). */
#define LOCKFS_XATTR_PREFIX "user.lockfs."

/* ---- escaping ---- */

enum {
	/* Write the space (0x20) as it is: for text shown to a person where a
	 * space cannot split anything (the last column of a table, the rest of
	 * a "name: value" line).  Not for anything that is parsed back. */
	LOCKFS_ESCAPE_KEEP_SPACE = 1 << 0,
};

/* C: a character escaped wherever it appears (the list above, without the
 * space, which LOCKFS_ESCAPE_KEEP_SPACE may keep). */
bool lockfs_unichar_unsafe(gunichar c);

/* Append the LEN bytes at S to OUT, escaped (NUL as \000). */
void lockfs_escape_append(GString *out, const char *s, size_t len, unsigned flags);
/* S escaped, allocated; NULL is taken as "". */
char *lockfs_escape(const char *s);
/* The same with LOCKFS_ESCAPE_KEEP_SPACE. */
char *lockfs_escape_text(const char *s);

/* V in decimal (octal), appended to OUT: what "%" PRIu64, PRId64 and "%o"
 * write, without printf's cost on the lines of every grant and release. */
void lockfs_append_u64(GString *out, uint64_t v);
void lockfs_append_i64(GString *out, int64_t v);
void lockfs_append_octal(GString *out, uint32_t v);
void lockfs_append_hex(GString *out, uint64_t v); /* lower case, no 0x */

/* Append S (LEN bytes) to OUT with every \NNN decoded; false, with OUT
 * holding a prefix, at a backslash not followed by three octal digits of a
 * byte. */
bool lockfs_unescape_append(GString *out, const char *s, size_t len);
/* S (LEN bytes, or up to its NUL when LEN < 0) unescaped, allocated; NULL
 * when an escape is malformed or decodes to a NUL byte (a C string cannot
 * hold it). */
char *lockfs_unescape(const char *s, gssize len);

/* ---- one lock's fields ---- */

typedef enum {
	LOCKFS_VF_LOCK, /* the key (first in .lockfs/status, without a name) */
	LOCKFS_VF_STATE,
	LOCKFS_VF_FENCE,
	LOCKFS_VF_HOST,
	LOCKFS_VF_PID,
	LOCKFS_VF_UID,
	LOCKFS_VF_GID,
	LOCKFS_VF_USER,
	LOCKFS_VF_COMMAND,
	LOCKFS_VF_ACQUIRED, /* ISO 8601 UTC */
	LOCKFS_VF_HEARTBEAT,
	LOCKFS_VF_AGE, /* seconds */
	LOCKFS_VF_HEARTBEAT_AGE,
	LOCKFS_VF_LEASE_LEFT_MS,
	LOCKFS_VF_BACKEND,
	LOCKFS_VF_MINE, /* "yes" when held through the mount read */
	LOCKFS_VF_COUNT
} lockfs_view_field;

/* The fields of one lock as plain (unescaped) text; NULL is absent: not
 * written, and what a parse did not find. */
typedef struct {
	char *v[LOCKFS_VF_COUNT];
} lockfs_view;

/* "state", "heartbeat_age", ...; NULL for no such field. */
const char *lockfs_view_field_name(lockfs_view_field f);
/* The field called NAME (LEN bytes), or -1. */
int lockfs_view_field_find(const char *name, size_t len);

/* Set field F to a copy of VALUE (NULL: absent), or to a printf'd text. */
void lockfs_view_set(lockfs_view *v, lockfs_view_field f, const char *value);
void lockfs_view_setf(lockfs_view *v, lockfs_view_field f, const char *fmt, ...)
        G_GNUC_PRINTF(3, 4);
void lockfs_view_clear(lockfs_view *v);

/* V's line of .lockfs/status, '\n' included: the key, then state, fence,
 * host, pid, uid, user, age, heartbeat_age and command as NAME=VALUE. */
void lockfs_view_status_line(const lockfs_view *v, GString *out);
/* V as .lockfs/PATH: "NAME: VALUE\n" for every field present, key first. */
void lockfs_view_lock_text(const lockfs_view *v, GString *out);

/* One status line (LEN bytes, no newline) into V (cleared first).  False
 * when it has no key or the key's escapes are malformed; a field whose value
 * is malformed is left out, unknown fields are ignored, the first of a field
 * given twice counts. */
bool lockfs_view_parse_status_line(const char *line, size_t len, lockfs_view *v);
/* The text of .lockfs/PATH into V (cleared first), by the same rules; false
 * when it has no known field at all. */
bool lockfs_view_parse_lock_text(const char *text, lockfs_view *v);

/* ---- break requests ---- */

/* "KEY[ FENCE]\n", KEY escaped. */
char *lockfs_view_break_request(const char *key, const char *fence);
/* One request (trailing spaces and newlines ignored): KEY, unescaped, and an
 * optional FENCE of decimal digits (*FENCE NULL without one).  False for
 * anything else: more lines or words, a NUL, an empty or malformed key. */
bool lockfs_view_parse_break(const char *buf, size_t len, char **key, char **fence);

#endif
