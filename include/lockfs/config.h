/* lockfs configuration: one GLib key file per target (--config FILE) and the
 * same keys as mount options (-o key=value).
 *
 * Keys of the [lockfs] group are written bare as mount options ("ttl=30s");
 * keys of a backend's group are prefixed with the group ("ldap_uri=..." is
 * key "uri" of group [ldap]).  Mount options override the file, whichever was
 * given first.  Unknown groups and keys are refused.
 *
 * Every error is one line naming where the value came from, what is wrong and
 * what to do: "FILE:LINE: key 'ttl' in [lockfs]: 'abc' is not a duration;
 * write ..." for the file, "mount option 'ttl=abc': 'abc' is not ..." for -o.
 *
 * Not thread-safe: configure at start-up, then only read.
 */
#ifndef LOCKFS_CONFIG_H
#define LOCKFS_CONFIG_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

G_BEGIN_DECLS

#define LOCKFS_CONFIG_ERROR (lockfs_config_error_quark())
GQuark lockfs_config_error_quark(void);
typedef enum {
	LOCKFS_CONFIG_ERROR_SYNTAX,   /* the file is not a key file */
	LOCKFS_CONFIG_ERROR_UNKNOWN,  /* unknown group or key */
	LOCKFS_CONFIG_ERROR_VALUE,    /* a value that does not parse or is out of range */
	LOCKFS_CONFIG_ERROR_CONFLICT, /* keys that contradict each other */
	LOCKFS_CONFIG_ERROR_IO,       /* the file cannot be read */
} LockfsConfigError;

typedef enum {
	LOCKFS_PASSTHROUGH_AUTO = -1, /* when the mount point is not empty */
	LOCKFS_PASSTHROUGH_NO = 0,
	LOCKFS_PASSTHROUGH_YES = 1,
} lockfs_passthrough_mode;

/* The general keys of [lockfs], parsed and validated; owned by the config.
 * Durations are milliseconds. */
typedef struct {
	char *backend;              /* "local" (default), "ldap", "tinystore" */
	char *suffix;               /* lock name suffix, ".lock" */
	int64_t ttl_ms;             /* lease time, 30 s */
	int64_t renew_ms;           /* lease renewal interval; ttl/3 when the key is 0 */
	int64_t stale_after_ms;     /* 300 s; 0 = never stale */
	int64_t network_timeout_ms; /* 10 s */
	int64_t heartbeat_min_ms;   /* heartbeats reach the backend at most this often, 5 s */
	int64_t list_cache_ms;      /* listings may be this old, 200 ms */
	char *host;                 /* host identity, gethostname() when unset */
	char *state_dir;            /* where durable state lives: /var/lib/lockfs for root,
	                           * else $XDG_STATE_HOME/lockfs or ~/.local/state/lockfs */
	char *notify;               /* command run for every break and lost lock, or NULL */
	char *log_file;             /* once mounted, stderr and the log go here, or NULL */
	char *metrics_file;         /* .lockfs/metrics copied here every renew_ms, or NULL */
	mode_t dir_mode;            /* mode of the in-memory root directory, 01777 */
	uid_t dir_uid;              /* owner of the in-memory root, the mounting user; */
	gid_t dir_gid;              /* the keys take numbers or names */
	lockfs_passthrough_mode passthrough;
	bool allow_other; /* FUSE allow_other (default: true when root) */
	bool foreground;  /* -f; also true when debug is */
	bool debug;       /* -d: FUSE debug, implies foreground */
	char *log_level;  /* "error", "warning", "info" (default), "debug" */
	bool audit;       /* grants and releases logged at info (default) */
} lockfs_settings;

typedef struct lockfs_config lockfs_config;

lockfs_config *lockfs_config_new(void);
void lockfs_config_free(lockfs_config *cfg);

/* Read FILE.  Unknown groups or keys, repeated groups or keys, bad syntax and
 * bad values of [lockfs] keys fail with FILE:LINE and the key named, and
 * leave CFG unchanged.  Backend values are checked by the getters.  A later
 * file overrides an earlier one.  Secrets are not read here. */
bool lockfs_config_load_file(lockfs_config *cfg, const char *path, GError **error);

/* One mount option "key=value" or a flag "key" (booleans: "allow_other",
 * "foreground", "debug"; for backend keys, only their boolean getter accepts a
 * flag).  [lockfs] values are checked now.  Options that belong to FUSE or
 * mount(8) (e.g. "ro", "default_permissions", "fsname=X", "_netdev",
 * "x-systemd.*") return true with *for_fuse set and are not stored: the
 * caller decides which to hand to FUSE.  allow_other is ours (in the
 * settings); the daemon passes it on.  Otherwise *for_fuse is false. */
bool lockfs_config_set_option(lockfs_config *cfg, const char *option, bool *for_fuse,
                              GError **error);

/* Parse every general key, apply defaults and check the rules between keys:
 * ttl >= 1s, renew interval < ttl, network timeout < ttl, stale_after 0 or
 * > ttl, heartbeat_min_interval < stale_after (unless 0).  The error names the
 * key and where its value came from.  May be called again after more
 * options; the previous settings are then freed. */
bool lockfs_config_finish(lockfs_config *cfg, GError **error);

/* Valid after a successful lockfs_config_finish() and until CFG changes
 * (NULL, with a critical warning, before). */
const lockfs_settings *lockfs_config_settings(const lockfs_config *cfg);

/* Backend keys (group = backend name).  Each getter returns false with an
 * error naming the key and its origin when the value is bad, and the default
 * when the key is absent (get_string: a copy of DEF, which may be NULL; free
 * *out).  Asking for an unregistered key fails with ..._ERROR_UNKNOWN.
 * Backends call these from their constructors. */
bool lockfs_config_get_string(const lockfs_config *cfg, const char *group, const char *key,
                              const char *def, char **out, GError **error);
bool lockfs_config_get_bool(const lockfs_config *cfg, const char *group, const char *key, bool def,
                            bool *out, GError **error);
bool lockfs_config_get_duration(const lockfs_config *cfg, const char *group, const char *key,
                                int64_t def_ms, int64_t *out_ms, GError **error);
bool lockfs_config_get_int(const lockfs_config *cfg, const char *group, const char *key,
                           int64_t def, int64_t min, int64_t max, int64_t *out, GError **error);
/* Set *ERROR (domain LOCKFS_CONFIG_ERROR, CODE) to a one-line error about
 * GROUP/KEY in the form of every configuration error: "FILE:LINE: key 'k' in
 * [g]: WHAT", "mount option 'g_k=v': WHAT", or "key 'k' in [g] (default):
 * WHAT".  Returns false, for "return lockfs_config_key_error(...)". */
bool lockfs_config_key_error(const lockfs_config *cfg, const char *group, const char *key,
                             GError **error, int code, const char *fmt, ...) G_GNUC_PRINTF(6, 7);

/* Where KEY's value came from ("FILE:LINE" or "mount option 'x'"), or NULL. */
const char *lockfs_config_origin(const lockfs_config *cfg, const char *group, const char *key);

/* Declare the keys a backend accepts so unknown keys are refused.  Called at
 * start-up, before any file or option is read, for each backend's group (see
 * lockfs_backends_register_config()).  The registry is process-wide;
 * registering a group again replaces its keys.  Group names are
 * [a-z][a-z0-9-]* (no '_', which separates group and key in options), key
 * names [a-z][a-z0-9_]*; bad names are refused with a critical warning. */
void lockfs_config_register_group(const char *group, const char *const *keys);

/* The backend names backend= accepts, as messages list them ("local, ldap
 * or tinystore"); the backend registry says (src/common/backend.c). */
void lockfs_config_register_backends(const char *names);

/* "30s", "500ms", "5m", "1h", "2d", "1.5s"; a bare number is seconds.
 * Returns false for anything else: signs, spaces, junk, fractions of a
 * millisecond, and values over INT64_MAX/1000 ms (so microseconds fit). */
bool lockfs_parse_duration(const char *text, int64_t *out_ms);

G_END_DECLS
#endif
