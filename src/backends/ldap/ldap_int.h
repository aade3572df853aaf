/* Internals of the LDAP backend, shared by src/backends/ldap/ and its tests.
 *
 *   ldap_names.c  lock keys as cn values, DNs, holder notes, the stale rules
 *   ldap_conn.c   configuration, connections (TLS, bind, timeouts, backoff),
 *                 what the server offers, the base and the fence counter
 *   ldap_session.c the mount's session entry: one write a round keeps every
 *                 lock of the mount (issue 14)
 *   ldap.c        the backend functions
 *
 * Layout under BASE:
 *   cn=<key>,BASE          a lock: organizationalRole (+ dynamicObject with dds),
 *                          holder notes as description values "name=value"
 *   ou=fence,BASE          the fence counter, never deleted (an ou RDN cannot
 *                          collide with a lock's cn)
 *   cn=%session%HOST-..,BASE  a mount's session (+ dynamicObject with dds): its
 *                          last write is when every lock naming it (session=)
 *                          was last renewed
 */
#ifndef LOCKFS_LDAP_INT_H
#define LOCKFS_LDAP_INT_H

#include <glib.h>
#include <ldap.h>
#include <lockfs/backend.h>
#include <lockfs/config.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* What the server offers (found at start). */
enum {
	LL_CAP_ASSERT = 1u << 0,    /* RFC 4528 assertion control */
	LL_CAP_INCREMENT = 1u << 1, /* RFC 4525 Modify-Increment and RFC 4527 post-read */
	LL_CAP_DDS = 1u << 2,       /* RFC 2589 dynamic entries, refresh allowed to us */
	LL_CAP_PAGED = 1u << 3,     /* RFC 2696 paged results */
	LL_CAP_POSTREAD = 1u << 4,  /* RFC 4527 post-read: our writes' server times */
};

/* The default of max_clock_offset: a mount whose clock is further than this
 * from the server's breaks no other host's lock (the seed's 5 minutes). */
#define LL_CLOCK_BOUND_DEFAULT_MS (5 * 60 * 1000)
/* A clock sample older than this is taken again before a lock is broken. */
#define LL_CLOCK_FRESH_US (30 * G_USEC_PER_SEC)

/* One reading of the server's clock: a write of ours that the server stamped
 * SRV_US (its time, within RES_US after it: 1 s for modifyTimestamp), sent
 * and answered at these times of our monotonic and wall clocks. */
typedef struct {
	int64_t srv_us, res_us;
	int64_t sent_mono_us, recv_mono_us;
	int64_t sent_wall_us, recv_wall_us;
} ll_clock_sample;

/* The server's clock now, between LO_US and HI_US (both 0: unknown). */
typedef struct {
	int64_t lo_us, hi_us;
} ll_server_now;

typedef enum {
	LL_URI_LDAP,
	LL_URI_LDAPS,
	LL_URI_LDAPI
} ll_scheme;

typedef struct {
	char *uri;
	ll_scheme scheme;
	char *bind_dn;  /* NULL: anonymous or EXTERNAL */
	char *password; /* from password_file */
	bool external;  /* SASL EXTERNAL */
	bool starttls;
	char *ca_file;
	bool verify;
	char *base;  /* as configured, validated */
	int dynamic; /* -1 auto, 0 no, 1 yes */
	char *host;  /* this mount's identity */
	int64_t timeout_us, ttl_us, stale_after_us;
	int64_t clock_bound_us; /* max_clock_offset */
	int64_t renew_us;       /* the renew interval */
	bool sessions;          /* a session entry renews every lock (sessions = yes) */
} ll_config;

/* A lease of this instance. */
typedef struct {
	GMutex mu; /* one write at a time on this lease; guards what follows */
	char *dn;
	/* "fence=N": the note that says the entry is still ours; written under mu
	 * and the backend's sess_mu, which session rounds read it under. */
	char *fence_value;
	uint64_t block_end; /* the fence's block, for the check in confirm() */
	bool unchecked;     /* the fence is not checked yet */
	/* "fence=N" of the swap confirm() sent when the check failed, kept
	 * until an answer says whether the entry has it: an answer lost, the
	 * server may have made it (now, or when it reads the request late), and
	 * the same swap is sent again, never another, so that the entry's note
	 * is always one the lease knows.  Written under mu and sess_mu, as
	 * fence_value is. */
	char *swap_value;
	int64_t hb_mono_us; /* the holder's last heartbeat on our monotonic clock */
	lockfs_holder holder;
	GBytes *content;
	/* With sessions: the session named in the notes, its generation in
	 * the backend, and what became of the lease. */
	char *session;
	uint64_t gen;
	gint gone;     /* found missing from the session's locks (atomic) */
	bool released; /* release() answered 0 or -ENOENT; written under mu and sess_mu */
} ll_lease;

typedef struct {
	lockfs_backend base;
	ll_config cfg;
	unsigned caps;
	char *fence_dn;
	char *fence_attr; /* "description" (values "fence=N") or an integer attribute */
	bool fence_in_desc;

	GMutex pool_mu;  /* guards the fields below it */
	GPtrArray *idle; /* LDAP * ready for use */
	int64_t retry_mono_us, backoff_us;
	char *last_error;

	GMutex mine_mu;
	GHashTable *mine; /* key → fence of the leases this instance holds */

	GMutex fence_mu;
	uint64_t block_next, block_end; /* this instance's fence block; end 0: none */
	int dds_default_s;              /* the entryTtl a new dynamic entry gets; 0: unknown */
	gint short_grant_logged;        /* atomic */
	bool set_up;                    /* ll_setup() succeeded: the mount is up */
	GMutex log_mu;
	int64_t skew_logged_mono_us;
	int64_t unsure_logged_mono_us;

	GMutex clock_mu;
	ll_clock_sample clock; /* the latest; clock.recv_mono_us 0: none yet */

	gint stale_seq;

	/* The session (ldap_session.c).  sess_cn NULL: none yet; each new
	 * one has the next generation. */
	GMutex sess_mu;
	GCond sess_cv;
	char *sess_cn, *sess_started;
	uint64_t sess_gen;
	bool sess_lost, sess_busy;
	int64_t sess_ok_sent;        /* when the last write that succeeded was sent (mono) */
	int64_t sess_logged_mono_us; /* under log_mu (ll_log_due()) */
	GHashTable *sess_held;       /* ll_lease * → itself: leases on a session */
	GHashTable *sess_seen;       /* cn → ll_session_seen: sessions read live */
	GPtrArray *sess_abandoned;   /* ll_abandoned *: entries to delete next round */
	/* After resume(): cn → ll_abandoned * of the entries naming the session
	 * that no adopt() has taken back yet; NULL once settled. */
	GHashTable *sess_orphans;
#ifdef LOCKFS_TEST_HOOKS
	int64_t clock_offset_us; /* this instance's clock runs this far off (ldap_test.c) */
#endif
} ll_backend;

/* How far this instance's clock is off: 0, but in the unit tests, which
 * play hosts whose clocks are off (lockfs_ldap_test_set_clock_offset). */
#ifdef LOCKFS_TEST_HOOKS
#define LL_CLOCK_OFFSET_US(be) ((be)->clock_offset_us)
#else
#define LL_CLOCK_OFFSET_US(be) ((void)(be), (int64_t)0)
#endif

/* One backend call's use of a connection, bounded by one deadline. */
typedef struct {
	ll_backend *be;
	LDAP *ld;
	int64_t deadline_mono_us;
	bool broken; /* the connection must not be reused */
	int rc;      /* last LDAP result */
	char *diag;  /* the server's diagnostic message of the last failure */
	sigset_t old_mask;
	bool pipe_pending; /* SIGPIPE was pending before the call */
	/* The last read's request and answer on our monotonic clock. */
	int64_t sent_mono_us, recv_mono_us;
} ll_op;

/* A lock entry as read from the directory. */
typedef struct {
	char *dn;
	char *key; /* NULL: the entry is not a lock */
	lockfs_holder holder;
	char fence[LOCKFS_FENCE_MAX]; /* "" while pending */
	char *fence_value;            /* the "fence=..." note as stored, for assertions */
	char *heartbeat_value, *renewed_value;
	char *note_key; /* from key64=, for hashed names */
	int64_t renewed_us;
	int64_t idle_us; /* idle_ms=: the heartbeat's age at the last write, by the
	                  * holder's monotonic clock; -1 when absent */
	int64_t create_us, modify_us, expire_us; /* server's; 0 when absent */
	int64_t csn_us;                          /* entryCSN's time (µs), 0 when absent */
	int64_t ttl_s; /* entryTtl as read: seconds left by the server; -1 when absent */
	int64_t read_sent_mono_us, read_recv_mono_us; /* when it was read */
	GBytes *content;
	/* A lock that names its holder's session (session=): what was found of
	 * it (ll_session_resolve()).  A session entry's own lease_ms=. */
	char *session;
	int sess_state;
	int64_t sess_last_us, sess_res_us, sess_lease_us;
	int64_t lease_us; /* lease_ms= of a session entry; -1 when absent */
} ll_lock;

enum {
	LL_SESS_UNREAD = 0, /* not read (or could not be): cannot judge */
	LL_SESS_LIVE,       /* read: sess_last_us, sess_res_us, sess_lease_us */
	LL_SESS_GONE,       /* no such entry: expired or ended */
};

typedef enum {
	LL_HELD,
	LL_STALE,   /* the heartbeat is older than stale_after by the server's clock */
	LL_EXPIRED, /* the lease was not renewed for ttl by the server's clock */
	LL_UNSURE,  /* the server's clock now, or the entry's time, is unknown, or the
	             * entry's time is ahead of the server's now: cannot judge */
} ll_verdict;

/* ---- ldap_names.c ---- */

/* A key as a cn value: the key itself when the directory's matching rules (case,
 * spaces, Unicode normalisation) cannot confuse it with another key, else every
 * byte outside [a-z0-9] and ASCII punctuation as %xx.  Injective under those
 * rules; ll_key_decode() is its inverse and refuses anything else (hashed
 * names included: their key is in the entry's key64= note). */
char *ll_key_encode(const char *key);
char *ll_key_decode(const char *cn);
/* Longer cn values are a start of the name and a hash of the key, which is
 * then kept in a note "key64=" (see ll_key_encode()). */
#define LL_CN_MAX 64
#define LL_CN_HASH_PREFIX 24
#define LL_CN_HASH_HEX 32
bool ll_cn_hashed(const char *cn);
size_t ll_cn_prefix_len(const char *enc, size_t max);
/* Every byte of S outside [a-z0-9] and ASCII punctuation as %xx. */
char *ll_key_escape(const char *s);
char *ll_dn(const char *cn, const char *base);
/* The cn value of DN's first RDN, or NULL. */
char *ll_dn_cn(const char *dn);
/* Unique names for a lock being broken and for the dds probe; never a lock's. */
char *ll_stale_cn(const char *key, const char *host, int64_t now_us, guint seq);
char *ll_probe_cn(const char *host);
/* A new session's cn; whether CN is a session's. */
char *ll_session_cn(const char *host);
bool ll_is_session_cn(const char *cn);

char *ll_time_format(int64_t us);
bool ll_time_parse(const char *s, int64_t *us);
bool ll_gentime_parse(const char *s, int64_t *us);

/* The description values of a lock. */
GPtrArray *ll_notes_build(const char *key, const lockfs_holder *h, const char *fence_value,
                          const char *session, int64_t renewed_us, int64_t idle_us,
                          GBytes *content);
/* Fill L's holder and notes from description values. */
void ll_notes_parse(ll_lock *l, char **values, size_t n);

void ll_lock_clear(ll_lock *l);
/* The stale rules, on the server's clock alone: NOW is the server's time
 * (ll_server_now()); the holder's notes count only for the gap between its
 * heartbeat and its last write (idle_ms=), never against another clock.  A
 * lock naming a session is renewed by its session's writes: its lease ran
 * out when the session is gone, or its last write is older than the
 * session's lease_ms= (ll_session_resolve() must have read it). */
ll_verdict ll_judge(const ll_lock *l, const ll_server_now *now, int64_t ttl_us,
                    int64_t stale_after_us);
int64_t ll_lease_left_ms(const ll_lock *l, const ll_server_now *now, int64_t ttl_us);
/* The server's time of the entry's last write, and how much later it may
 * have been (whole seconds, or entryCSN's microseconds); 0 when unknown. */
int64_t ll_server_last(const ll_lock *l, int64_t *res_us);
/* entryCSN's time: "20260102030405.123456Z#..." */
bool ll_csn_parse(const char *s, int64_t *us);

/* ---- the server's clock (ldap_conn.c) ---- */

/* Keep S as the latest reading of the server's clock. */
void ll_clock_note(ll_backend *be, const ll_clock_sample *s);
/* The server's clock now by the latest reading and our monotonic clock,
 * narrowed by what L (when not NULL) says of it: a dynamic entry's entryTtl
 * and entryExpireTimestamp, read together, are the server's now. */
void ll_server_now_of(ll_backend *be, const ll_lock *l, ll_server_now *out);
/* Our wall clock against the server's: OFFSET = the server's less ours,
 * within ±UNC; AGE since the reading.  False when there is none. */
bool ll_clock_offset(ll_backend *be, int64_t *offset_us, int64_t *unc_us, int64_t *age_us);
/* Read the server's clock with a write of our own (a probe entry added and
 * deleted), when the latest reading is older than MAX_AGE_US. */
int ll_clock_measure(ll_op *op, int64_t max_age_us);
/* Whether an offset is beyond max_clock_offset: then this mount judges no
 * other host's lock. */
bool ll_clock_beyond(ll_backend *be, int64_t offset_us, int64_t unc_us);
/* "0.012 s behind the server's (±0.001 s)", "6m03s ahead of the server's (±…)" */
char *ll_offset_text(int64_t offset_us, int64_t unc_us);
/* "0.012 s", "4m00s", "2h05m" (of the magnitude) */
char *ll_duration_text(int64_t us);

/* ---- ldap_conn.c ---- */

/* Errors of the server or the network at start (code 0). */
#define LL_ERROR (ll_error_quark())
GQuark ll_error_quark(void);

bool ll_config_load(ll_config *c, const lockfs_config *cfg, GError **error);
void ll_config_clear(ll_config *c);

/* Start a call: a connection (pooled or new) and the deadline now + timeout;
 * end it with ll_op_end().  -EIO when no connection can be had (the reason is
 * logged once per outage); there is then nothing to end. */
int ll_op_begin(ll_backend *be, ll_op *op);
void ll_op_end(ll_op *op);
/* Close every connection of CONNS (and empty it). */
void ll_unbind_all(GPtrArray *conns);
int64_t ll_now_us(ll_backend *be);
/* The TTL asked for dynamic entries: whole seconds, one more than ttl rounded
 * up, since servers count expiry from the start of the current second. */
int ll_ttl_seconds(ll_backend *be);

/* Every entry one level under the base matching FILTER, by cn value only
 * (CB gets each cn). */
int ll_search_cns(ll_op *op, const char *filter, void (*cb)(const char *cn, void *user),
                  void *user);

/* Each returns the LDAP result code (also in op->rc), bounded by the deadline. */
int ll_add(ll_op *op, const char *dn, const char *const *classes, const char *rdn_attr,
           const char *rdn_value, GPtrArray *desc);
int ll_delete(ll_op *op, const char *dn, const char *assert_filter);
/* Delete DN only while NOTE is one of its description values (the assertion
 * control where offered, else compare then delete): never an entry that has
 * become another holder's.  LDAP_ASSERTION_FAILED when it is not. */
int ll_delete_if_note(ll_op *op, const char *dn, const char *note);
int ll_rename(ll_op *op, const char *dn, const char *new_cn, const char *assert_filter);
int ll_compare(ll_op *op, const char *dn, const char *attr, const char *value);
int ll_refresh(ll_op *op, const char *dn, int ttl_s, int *granted_s);
/* ll_refresh(), saying once per mount if the server grants WHAT ("dynamic
 * entries", "the session entry") less than TTL_S. */
int ll_refresh_to(ll_op *op, const char *dn, int ttl_s, const char *what);
/* Replace the description values, only while GUARD ("fence=N") is one of them:
 * the delete of GUARD fails the whole modify otherwise. */
int ll_replace_notes(ll_op *op, const char *dn, const char *guard, GPtrArray *desc);
/* Swap one value of ATTR for another in one modify (compare-and-swap). */
int ll_swap_value(ll_op *op, const char *dn, const char *attr, const char *old_value,
                  const char *new_value);
/* Read one lock entry (LDAP_NO_SUCH_OBJECT when absent). */
int ll_read_lock(ll_op *op, const char *dn, ll_lock *out);
/* Every lock entry one level under the base matching FILTER; CB owns nothing. */
int ll_search_locks(ll_op *op, const char *filter, void (*cb)(ll_lock *l, void *user), void *user);
/* A filter "(attr=value)" with VALUE escaped. */
char *ll_filter_eq(const char *attr, const char *value);

/* Set-up at start: what the server offers, the base, dds, the fence counter. */
bool ll_setup(ll_backend *be, GError **error);
/* Fences are handed out from blocks: ll_reserve_fences() adds N to the
 * counter in one atomic write and gives its new value END, so the block
 * END-N+1..END is this caller's; ll_fence_counter_is() compares the counter
 * with VALUE (LDAP_COMPARE_TRUE or _FALSE, else an error): a block is good
 * for a lock taken while the counter still reads its END (see ldap.c). */
#define LL_FENCE_BLOCK 1000
int ll_reserve_fences(ll_op *op, uint64_t n, uint64_t *end);
int ll_fence_counter_is(ll_op *op, uint64_t value);

/* ---- ldap_session.c ---- */

/* Make sure the session was written by a write sent no earlier than a renew
 * interval before START (a call's start), making a session when there is
 * none.  WANT: the generation the caller's lease is on (-ESTALE when that
 * session is gone or replaced), or 0 for the current one.  On 0, *GEN and
 * *CN (the caller frees it; CN may be NULL) name the session. */
int ll_session_fresh(ll_backend *be, int64_t start, uint64_t want, uint64_t *gen, char **cn);
/* A lease taken on a session, and let go. */
void ll_session_track(ll_backend *be, ll_lease *p);
void ll_session_untrack(ll_backend *be, ll_lease *p);
/* Delete DN at the next ROUNDS rounds while it has FENCE_VALUE, if GEN is
 * still the session: a lease freed without a release, or an add whose
 * answer was lost, would otherwise be kept by the session's writes, held
 * for nobody. */
void ll_session_abandon(ll_backend *be, const char *dn, const char *fence_value, uint64_t gen,
                        int rounds);
/* What L's session says (sets L's sess_* fields); LDAP_SUCCESS, or the
 * failure of the read (then LL_SESS_UNREAD). */
int ll_session_resolve(ll_op *op, ll_lock *l);
/* Restart (backend.h, "Restart").  The session's cn, or -ENOENT. */
int ll_session_token(ll_backend *be, GString *out);
/* Carry on the session TOKEN (a cn ll_session_cn() made for this host):
 * 0, -EINVAL, -ESTALE (gone, or run out by the rule others judge it by) or
 * -EIO.  The lock entries naming it are then orphans until adopted. */
int ll_session_resume(ll_backend *be, const char *token);
/* Where adopt() stands on the session: *GEN and *CN (to free) of the live
 * resumed session, renewed within a renew interval: 0, -ESTALE or -EIO. */
int ll_session_for_adopt(ll_backend *be, uint64_t *gen, char **cn);
/* CN was taken back by adopt(): no longer an orphan. */
void ll_session_adopted(ll_backend *be, const char *cn);
/* Adoption is over (the first other call): the orphans left are held for
 * nobody and are deleted at the next round, each only while it has the
 * fence it had at resume(). */
void ll_session_settle(ll_backend *be);
void ll_session_init(ll_backend *be);
void ll_session_clear(ll_backend *be);

/* Warnings that could repeat go out at most once this often. */
#define LL_LOG_EVERY_US (60 * G_USEC_PER_SEC)
/* Whether a warning last given at *LAST may be given again (then *LAST is
 * now). */
bool ll_log_due(ll_backend *be, int64_t *last);

/* Text of an LDAP failure for logs ("Invalid credentials (49): ..."). */
char *ll_error_text(const ll_op *op);
/* Map an LDAP result of an operation to the backend's errno convention. */
int ll_errno(int rc);

#endif
