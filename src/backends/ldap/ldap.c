/* The LDAP backend: a lock is an entry cn=KEY under the configured base, made by
 * a plain LDAP add (atomic at the server), with its holder's notes as
 * description values.  The lease is the mount's session entry, named in the
 * lock's notes and rewritten once a renew interval (ldap_session.c); with
 * sessions = no, each lock entry is rewritten by its own renewals and, where
 * the server offers them, is a dynamic entry (RFC 2589).  Either way the stale
 * rules judge the last write on the server's clock.  Fences come from one
 * counter entry that is never deleted.  See docs/backends.md. */
#include "ldap_int.h"

#include <errno.h>
#include <lockfs/backend_support.h>
#include <lockfs/backends.h>
#include <string.h>
#include <unistd.h>

/* Rounds that delete an add whose answer was lost (it may arrive late). */
#define UNANSWERED_ROUNDS 3

/* The DN of KEY, or NULL with -EINVAL in *err. */
static char *lock_dn(ll_backend *be, const char *key, int *err)
{
	char *dn = NULL;
	if (key && *key) {
		g_autofree char *cn = ll_key_encode(key);
		dn = ll_dn(cn, be->cfg.base);
	}
	if (!dn)
		*err = -EINVAL;
	return dn;
}

/* The errno for a failed operation; unexpected answers are logged with the
 * server's reason, since the filesystem only says EIO. */
static int failed(ll_op *op, const char *what, const char *key)
{
	int e = ll_errno(op->rc);
	if (e == -EIO && op->rc >= 0) {
		g_autofree char *why = ll_error_text(op);
		lockfs_log(G_LOG_LEVEL_WARNING, key, "ldap: cannot %s %s: %s", what, key, why);
	}
	return e == -EEXIST || e == -ENOENT ? -EIO : e;
}

static void mine_set(ll_backend *be, const char *key, const char *fence)
{
	g_mutex_lock(&be->mine_mu);
	g_hash_table_replace(be->mine, g_strdup(key), g_strdup(fence));
	g_mutex_unlock(&be->mine_mu);
}

static void mine_drop(ll_backend *be, const char *key, const char *fence)
{
	g_mutex_lock(&be->mine_mu);
	const char *f = g_hash_table_lookup(be->mine, key);
	if (f && strcmp(f, fence) == 0)
		g_hash_table_remove(be->mine, key);
	g_mutex_unlock(&be->mine_mu);
}

/* This host's clock is too far from the server's to judge L, which the
 * server's clock says may be broken: say so (at most once a minute), to the
 * log and the notify command. */
static void log_refusal(ll_backend *be, const ll_lock *l, bool known, int64_t off, int64_t unc)
{
	if (!ll_log_due(be, &be->skew_logged_mono_us))
		return;
	g_autofree char *bound = ll_duration_text(be->cfg.clock_bound_us);
	g_autofree char *clock = known ? ll_offset_text(off, unc) : g_strdup("not known");
	g_autofree char *detail =
	        known ? g_strdup_printf("this host's clock is %s, more than max_clock_offset %s",
	                                clock, bound)
	              : g_strdup("the server's clock cannot be read from its stamps");
	lockfs_log(G_LOG_LEVEL_CRITICAL, l->key,
	           "ldap: clock: %s; %s held by %s pid %" G_GINT64_FORMAT " (fence %s) looks "
	           "breakable by the server's clock, but this mount breaks no other host's lock "
	           "until the clocks agree: fix this host's clock (NTP), or break it with "
	           "lockfsctl unlock once you know its holder is gone",
	           detail, l->key, l->holder.host ? l->holder.host : "?", l->holder.pid, l->fence);
	lockfs_notify_detail("clock", l->key, &l->holder, NULL, l->fence, detail);
}

/* L cannot be judged: say why (at most once a minute). */
static void log_unsure(ll_backend *be, const ll_lock *l, const ll_server_now *now)
{
	if (!ll_log_due(be, &be->unsure_logged_mono_us))
		return;
	int64_t res = 0, w = ll_server_last(l, &res);
	const char *why =
	        l->session && l->sess_state == LL_SESS_UNREAD
	                ? "its session entry could not be read (or shows no modifyTimestamp or "
	                  "lease_ms=)"
	        : !w ? "the entry shows no modifyTimestamp: let the bind user read it"
	        : !now->hi_us
	                ? "the server's clock is not known here (no stamped write answered yet)"
	                : "its last write is stamped ahead of the server's clock as this host "
	                  "reads it (did the server's clock go back?)";
	lockfs_log(G_LOG_LEVEL_WARNING, l->key,
	           "ldap: cannot judge %s of %s pid %" G_GINT64_FORMAT ": %s; it is left alone",
	           l->key, l->holder.host ? l->holder.host : "?", l->holder.pid, why);
}

/* Whether this host may break what the server's clock says is breakable:
 * its own clock is known and within max_clock_offset of the server's. */
static bool may_break(ll_backend *be, const ll_lock *l, bool log)
{
	int64_t off = 0, unc = 0, age = 0;
	bool known = ll_clock_offset(be, &off, &unc, &age);
	if (known && !ll_clock_beyond(be, off, unc))
		return true;
	if (log)
		log_refusal(be, l, known, off, unc);
	return false;
}

/* Judge L on the server's clock.  With OP (an acquisition about to break
 * it), an old reading of the server's clock is taken again first.  LL_STALE
 * and LL_EXPIRED only when this host may break it; a refusal, or a lock that
 * cannot be judged, is logged (once a minute).  *EIO when the reading failed
 * on the client side. */
static ll_verdict judge(ll_backend *be, ll_op *op, const ll_lock *l, bool *eio)
{
	ll_server_now now;
	ll_server_now_of(be, l, &now);
	ll_verdict v = ll_judge(l, &now, be->cfg.ttl_us, be->cfg.stale_after_us);
	int64_t res = 0;
	/* (An entry without stamps is no better judged with a new reading.) */
	if (op && v != LL_HELD && ll_server_last(l, &res)) {
		int64_t off = 0, unc = 0, age = 0;
		int64_t max_age = v == LL_UNSURE ? G_USEC_PER_SEC : LL_CLOCK_FRESH_US;
		if (!ll_clock_offset(be, &off, &unc, &age) || age > max_age) {
			if (ll_clock_measure(op, max_age) != LDAP_SUCCESS && op->broken) {
				*eio = true;
				return LL_HELD;
			}
			ll_server_now_of(be, l, &now);
			v = ll_judge(l, &now, be->cfg.ttl_us, be->cfg.stale_after_us);
		}
	}
	/* Whoever decides here — an acquisition, or a lookup that shows the
	 * lock held so that the kernel answers EEXIST itself — says why. */
	if (v == LL_UNSURE)
		log_unsure(be, l, &now);
	if ((v == LL_STALE || v == LL_EXPIRED) && !may_break(be, l, true))
		v = LL_HELD;
	return v;
}

/* Shown times move to our clock only past this: hosts whose clocks agree
 * show the holder's very values. */
#define SHOWN_SHIFT_MIN_US (2 * G_USEC_PER_SEC)

/* The holder's times, written by its clock, on ours: the server's stamp of
 * its last write against that write's renewed= note is how far the holder's
 * clock is from the server's; our reading, how far ours is.  So a lock's
 * mtime and age here say what they say on the holder's host, and tools that
 * judge a lock by its mtime (liblockfile: 5 minutes) are not fooled by the
 * holder's clock either. */
static void times_to_ours(ll_backend *be, const ll_lock *l, lockfs_holder *h)
{
	int64_t res = 0, w = ll_server_last(l, &res), off = 0, unc = 0, age = 0;
	if (!w || !l->renewed_us || !ll_clock_offset(be, &off, &unc, &age))
		return;
	int64_t delta = (w + res / 2 - l->renewed_us) - off;
	if ((delta < 0 ? -delta : delta) <= SHOWN_SHIFT_MIN_US + res + unc)
		return;
	int64_t *t[] = { &h->acquired_us, &h->heartbeat_us, &h->mtime_us, &h->atime_us,
		         &h->ctime_us };
	for (size_t i = 0; i < G_N_ELEMENTS(t); i++)
		if (*t[i])
			*t[i] += delta;
}

static void fill_info(ll_backend *be, const ll_lock *l, lockfs_lock_info *out)
{
	memset(out, 0, sizeof(*out));
	ll_server_now now;
	ll_server_now_of(be, l, &now);
	out->key = g_strdup(l->key);
	lockfs_holder_copy(&out->holder, &l->holder);
	times_to_ours(be, l, &out->holder);
	g_strlcpy(out->fence, l->fence, sizeof(out->fence));
	out->lease_left_ms = ll_lease_left_ms(l, &now, be->cfg.ttl_us);
	bool eio = false;
	ll_verdict v = judge(be, NULL, l, &eio);
	out->state = v == LL_STALE || v == LL_EXPIRED ? LOCKFS_STATE_STALE : LOCKFS_STATE_HELD;
	g_mutex_lock(&be->mine_mu);
	const char *f = g_hash_table_lookup(be->mine, l->key);
	out->mine = f && *l->fence && strcmp(f, l->fence) == 0;
	g_mutex_unlock(&be->mine_mu);
	/* What the holder wrote, for other hosts' readers (NUL-terminated). */
	if (l->content) {
		gsize len;
		const void *data = g_bytes_get_data(l->content, &len);
		out->content = g_malloc(len + 1);
		if (len)
			memcpy(out->content, data, len);
		out->content[len] = '\0';
		out->content_len = len;
	}
}

/* An assertion that the entry is still the one judged: its fence note and,
 * for a stale judgement, the notes the judgement rested on. */
static char *identity_filter(const ll_lock *l, bool judged)
{
	GString *f = g_string_new("(&");
	const char *vals[] = { l->fence_value, judged ? l->heartbeat_value : NULL,
		               judged ? l->renewed_value : NULL };
	for (size_t i = 0; i < G_N_ELEMENTS(vals); i++) {
		if (!vals[i])
			continue;
		g_autofree char *eq = ll_filter_eq("description", vals[i]);
		g_string_append(f, eq);
	}
	g_string_append_c(f, ')');
	return g_string_free(f, FALSE);
}

static bool same_entry(const ll_lock *a, const ll_lock *b, bool judged)
{
	if (g_strcmp0(a->fence_value, b->fence_value) != 0)
		return false;
	return !judged || (g_strcmp0(a->heartbeat_value, b->heartbeat_value) == 0 &&
	                   g_strcmp0(a->renewed_value, b->renewed_value) == 0);
}

/* The seed's break: rename the lock to a unique stale name (atomic, so one
 * contender wins), check that what was renamed is what was judged (by the
 * assertion control where offered, else by reading it back, renaming it back
 * when it proved fresh), then delete it.  0 when we broke it, -ENOENT when
 * someone else did or it changed, -EIO. */
static int break_entry(ll_op *op, const ll_lock *l, bool judged)
{
	ll_backend *be = op->be;
	guint seq = (guint)g_atomic_int_add(&be->stale_seq, 1);
	g_autofree char *stale_cn = ll_stale_cn(l->key, be->cfg.host, ll_now_us(be), seq);
	g_autofree char *stale_dn = ll_dn(stale_cn, be->cfg.base);
	g_autofree char *filter = (be->caps & LL_CAP_ASSERT) ? identity_filter(l, judged) : NULL;
	int rc = ll_rename(op, l->dn, stale_cn, filter);
	if (rc == LDAP_NO_SUCH_OBJECT || rc == LDAP_ASSERTION_FAILED || rc == LDAP_ALREADY_EXISTS)
		return -ENOENT;
	if (rc != LDAP_SUCCESS)
		return failed(op, "break", l->key);
	if (!filter) {
		ll_lock now;
		rc = ll_read_lock(op, stale_dn, &now);
		bool same = rc == LDAP_SUCCESS && same_entry(l, &now, judged);
		ll_lock_clear(&now);
		if (rc != LDAP_SUCCESS && rc != LDAP_NO_SUCH_OBJECT)
			return failed(op, "break", l->key);
		if (!same) {
			g_autofree char *cn = ll_key_encode(l->key);
			if (rc == LDAP_SUCCESS &&
			    ll_rename(op, stale_dn, cn, NULL) != LDAP_SUCCESS) {
				g_autofree char *why = ll_error_text(op);
				lockfs_log(
				        G_LOG_LEVEL_WARNING, l->key,
				        "ldap: %s changed while being broken and cannot be renamed "
				        "back (%s); deleting %s",
				        l->key, why, stale_dn);
				ll_delete(op, stale_dn, NULL);
			}
			return -ENOENT;
		}
	}
	if (ll_delete(op, stale_dn, NULL) != LDAP_SUCCESS) {
		g_autofree char *why = ll_error_text(op);
		lockfs_log(G_LOG_LEVEL_WARNING, l->key,
		           "ldap: broke %s but cannot delete %s (%s); it is not a lock, delete it "
		           "by hand",
		           l->key, stale_dn, why);
	}
	return 0;
}

/* Reserve a new block, the instance's from now on, and take its first fence. */
static int fresh_fence(ll_op *op, uint64_t *fence, uint64_t *end)
{
	ll_backend *be = op->be;
	uint64_t e = 0;
	int rc = ll_reserve_fences(op, LL_FENCE_BLOCK, &e);
	if (rc != LDAP_SUCCESS)
		return rc;
	g_mutex_lock(&be->fence_mu);
	be->block_end = e;
	be->block_next = e - LL_FENCE_BLOCK + 2;
	g_mutex_unlock(&be->fence_mu);
	*fence = e - LL_FENCE_BLOCK + 1;
	*end = e;
	return LDAP_SUCCESS;
}

/* Fences come from blocks reserved on the counter (ll_reserve_fences()):
 * a lock is added with the next fence of this instance's block already in
 * its notes, and the fence is good if the counter, read after the add, still
 * stands at the block's end.  Why that orders the holders of a key: a fence
 * is good only if no block was reserved between its block's reservation and
 * the check; the check follows the holder's add, and the reservation of a
 * later holder's block precedes its own add, which follows the earlier
 * holder's entry; so of two holders one after the other, either the later
 * one's block was reserved after the earlier's check (its fences are all
 * larger) or its own check fails.  A lock this instance takes again and
 * again thus costs an add and a compare, not three writes. */
static int take_fence(ll_op *op, uint64_t *fence, uint64_t *end)
{
	ll_backend *be = op->be;
	g_mutex_lock(&be->fence_mu);
	bool have = be->block_end && be->block_next <= be->block_end;
	if (have) {
		*fence = be->block_next++;
		*end = be->block_end;
	}
	g_mutex_unlock(&be->fence_mu);
	return have ? LDAP_SUCCESS : fresh_fence(op, fence, end);
}

/* Whether a new dynamic entry lives long enough, and not much longer, without
 * a refresh: then the first renewal refreshes it instead of the acquisition. */
static bool default_ttl_will_do(ll_backend *be)
{
	int want = ll_ttl_seconds(be);
	return be->dds_default_s + 1 >= want && be->dds_default_s <= 2 * want;
}

/* Refresh a dynamic lock entry to ttl. */
static int refresh(ll_op *op, const char *dn)
{
	return ll_refresh_to(op, dn, ll_ttl_seconds(op->be), "dynamic entries");
}

/* P's swap made its note the entry's: that is the lease's fence now, and
 * a checked one (check_fence() says why).  Under P's mu. */
static void swap_made(ll_backend *be, const char *key, ll_lease *p)
{
	/* Under sess_mu as well: a session round copies and compares the note
	 * under that mutex alone (check_mine, mark_gone). */
	g_mutex_lock(&be->sess_mu);
	char *old = p->fence_value;
	p->fence_value = g_steal_pointer(&p->swap_value);
	g_mutex_unlock(&be->sess_mu);
	p->unchecked = false;
	mine_drop(be, key, old + 6);
	mine_set(be, key, p->fence_value + 6);
	g_free(old);
}

/* P's old note is gone from its entry: whether the note of P's swap is
 * there instead (one sent before, whose answer was lost, reached the
 * server).  LDAP_SUCCESS: it is, and the swap is made; LDAP_NO_SUCH_OBJECT:
 * neither note is, the entry is no longer ours; else the compare's error,
 * the swap kept for the next try. */
static int swap_arrived(ll_op *op, const char *key, ll_lease *p)
{
	if (!p->swap_value)
		return LDAP_NO_SUCH_OBJECT;
	int rc = ll_compare(op, p->dn, "description", p->swap_value);
	if (rc == LDAP_COMPARE_TRUE) {
		swap_made(op->be, key, p);
		return LDAP_SUCCESS;
	}
	return rc == LDAP_COMPARE_FALSE ? LDAP_NO_SUCH_OBJECT : rc;
}

/* Check P's fence (of the block ending at its block_end): good if the
 * counter still reads that end.  If another block was reserved meanwhile,
 * reserve one now, while the entry is ours, and swap the notes' fence only
 * while they are still ours.  Reserve, not take from the instance's block:
 * that block may be one another confirm() reserved since P's, before another
 * host's block whose fences were shown to the key's last holder (the fault
 * suite's LDAP run under a paused server; /ldap/fence/stale-block).  A block
 * reserved after our add comes after every earlier holder's.  A swap whose
 * answer is lost is kept and sent again (swap_value), and one found made is
 * taken: with sessions, an entry left with a note the lease does not know is
 * held for nobody while the mount lives (/ldap/sessions/unanswered-swap).
 * LDAP_SUCCESS, LDAP_NO_SUCH_OBJECT (the entry is no longer ours) or another
 * LDAP error.  Under P's mu. */
static int check_fence(ll_op *op, const char *key, ll_lease *p)
{
	ll_backend *be = op->be;
	int rc;
	if (!p->swap_value) {
		rc = ll_fence_counter_is(op, p->block_end);
		if (rc == LDAP_COMPARE_TRUE)
			return LDAP_SUCCESS;
		if (rc != LDAP_COMPARE_FALSE)
			return rc;
		uint64_t again = 0, end = 0; /* the new block replaces P's as the instance's */
		if ((rc = fresh_fence(op, &again, &end)) != LDAP_SUCCESS)
			return rc;
		char *swap = g_strdup_printf("fence=%" G_GUINT64_FORMAT, again);
		g_mutex_lock(&be->sess_mu); /* check_mine reads it under sess_mu */
		p->swap_value = swap;
		g_mutex_unlock(&be->sess_mu);
	}
	g_autoptr(GPtrArray) desc =
	        ll_notes_build(key, &p->holder, p->swap_value, p->session, ll_now_us(be),
	                       lockfs_mono_us() - p->hb_mono_us, p->content);
	rc = ll_replace_notes(op, p->dn, p->fence_value, desc);
	if (rc == LDAP_SUCCESS) {
		swap_made(be, key, p);
		return rc;
	}
	if (rc == LDAP_NO_SUCH_ATTRIBUTE) /* not our old note: our lost swap's? */
		rc = swap_arrived(op, key, p);
	return rc;
}

/* A lease on the entry DN with FENCE_VALUE ("fence=N"), as acquire() and
 * adopt() make one: UNCHECKED while its fence is to be checked against the
 * block ending at END (confirm()); HB_MONO_US the holder's last heartbeat
 * on our monotonic clock. */
static lockfs_lease *lease_make(const char *key, const char *dn, const char *fence_value,
                                uint64_t end, bool unchecked, int64_t hb_mono_us,
                                const lockfs_holder *h, GBytes *content, const char *session,
                                uint64_t gen)
{
	ll_lease *p = g_new0(ll_lease, 1);
	g_mutex_init(&p->mu);
	p->dn = g_strdup(dn);
	p->fence_value = g_strdup(fence_value);
	p->block_end = end;
	p->unchecked = unchecked;
	p->hb_mono_us = hb_mono_us;
	p->content = content ? g_bytes_ref(content) : NULL;
	p->session = g_strdup(session);
	p->gen = gen;
	lockfs_holder_copy(&p->holder, h);
	lockfs_lease *lease = g_new0(lockfs_lease, 1);
	lease->key = g_strdup(key);
	g_strlcpy(lease->fence, fence_value + 6, sizeof(lease->fence));
	lease->priv = p;
	return lease;
}

/* The lease is this instance's: shown as mine, checked by its session's
 * rounds. */
static void lease_register(ll_backend *be, lockfs_lease *lease)
{
	ll_lease *p = lease->priv;
	if (p->session)
		ll_session_track(be, p);
	mine_set(be, lease->key, lease->fence);
}

/* Our add succeeded with FENCE (of the block ending at END) in its notes:
 * make the entry dynamic unless the server's default will do.  The fence is
 * checked later, by confirm(), before anyone is shown it: most locks are
 * let go unseen, and an unseen fence orders nothing. */
static int finish_acquire(ll_op *op, const char *key, const char *dn, uint64_t fence, uint64_t end,
                          int64_t sent, lockfs_holder *h, GBytes *content, const char *session,
                          uint64_t gen, lockfs_lease **out)
{
	ll_backend *be = op->be;
	g_autofree char *fence_value = g_strdup_printf("fence=%" G_GUINT64_FORMAT, fence);
	if (!session && (be->caps & LL_CAP_DDS) && !default_ttl_will_do(be) &&
	    refresh(op, dn) != LDAP_SUCCESS) {
		int e = failed(op, "make dynamic", key);
		ll_delete_if_note(op, dn, fence_value); /* the entry we just added */
		return e;
	}
	lockfs_lease *lease =
	        lease_make(key, dn, fence_value, end, true, sent, h, content, session, gen);
	lease_register(be, lease);
	*out = lease;
	return 0;
}

/* One acquisition: what its claim, its adds and its install share. */
typedef struct {
	ll_backend *be;
	ll_op op;
	const char *key, *dn, *cn;
	const char *session; /* the session the lock lives on, or NULL */
	uint64_t gen;        /* the session's generation */
	lockfs_holder h;     /* the claim's holder, on this backend's clock */
	GBytes *initial;     /* the lock file's content, added with the entry */
	uint64_t fence, end; /* the fence taken, of the block ending at END */
	char *fence_value;   /* "fence=N" */
	lockfs_acquire_result *res;
} ll_take;

/* Claim: the holder WHO with CONTENT, and a fence.  0, or the error. */
static int claim(ll_take *t, const lockfs_holder *who, const void *content, size_t content_len)
{
	/* Notes carry this backend's clock, the one its judgements use. */
	lockfs_holder_copy(&t->h, who);
	t->h.acquired_us = t->h.heartbeat_us = ll_now_us(t->be);
	/* What the lock file holds already goes in with the add. */
	t->initial =
	        content ? g_bytes_new(content, MIN(content_len, (size_t)LOCKFS_CONTENT_MAX)) : NULL;
	if (take_fence(&t->op, &t->fence, &t->end) != LDAP_SUCCESS)
		return failed(&t->op, "take a fence for", t->key);
	t->fence_value = g_strdup_printf("fence=%" G_GUINT64_FORMAT, t->fence);
	return 0;
}

/* The add found the entry there: look at it, and break it if it is a stale
 * lock of this key (once per acquisition).  *AGAIN: add once more.  R is
 * what the acquisition answers so far; returns it or what replaces it. */
static int clear_the_way(ll_take *t, int r, bool *again)
{
	ll_op *op = &t->op;
	ll_lock cur;
	int rc = ll_read_lock(op, t->dn, &cur);
	if (rc == LDAP_NO_SUCH_OBJECT) {
		*again = true; /* released meanwhile */
		return r;
	}
	if (rc == LDAP_SUCCESS && cur.session && ll_session_resolve(op, &cur) != LDAP_SUCCESS &&
	    op->broken)
		rc = op->rc;
	if (rc != LDAP_SUCCESS) {
		r = failed(op, "look up", t->key);
		ll_lock_clear(&cur);
		return r;
	}
	bool eio = false;
	ll_verdict v = cur.key && strcmp(cur.key, t->key) == 0 && !t->res->broke
	                       ? judge(t->be, op, &cur, &eio)
	                       : LL_HELD; /* not a lock of ours: never break it */
	if (eio)
		r = failed(op, "read the server's clock for", t->key);
	if (v != LL_STALE && v != LL_EXPIRED) {
		ll_lock_clear(&cur);
		return r;
	}
	int e = break_entry(op, &cur, true);
	if (e == 0) {
		t->res->broke = true;
		fill_info(t->be, &cur, &t->res->previous);
		t->res->previous.state = LOCKFS_STATE_STALE;
	}
	ll_lock_clear(&cur);
	if (e != 0)
		return e == -ENOENT ? -EEXIST : e;
	*again = true;
	return r;
}

/* The backend call: add the entry; if a stale lock is in the way, break it
 * and add once more.  Installs the lease on success. */
static int add_entry(ll_take *t, lockfs_lease **out)
{
	const char *plain[] = { "top", "organizationalRole", NULL };
	const char *dynamic[] = { "top", "organizationalRole", "dynamicObject", NULL };
	int r = -EEXIST;
	for (int round = 0; round < 3; round++) {
		g_autoptr(GPtrArray) desc = ll_notes_build(
		        t->key, &t->h, t->fence_value, t->session, t->h.acquired_us, 0, t->initial);
		int64_t sent = lockfs_mono_us();
		/* A session's locks live as long as it does: plain entries. */
		bool dyn = (t->be->caps & LL_CAP_DDS) && !t->session;
		int rc = ll_add(&t->op, t->dn, dyn ? dynamic : plain, "cn", t->cn, desc);
		if (rc == LDAP_SUCCESS)
			return finish_acquire(&t->op, t->key, t->dn, t->fence, t->end, sent, &t->h,
			                      t->initial, t->session, t->gen, out);
		if (rc != LDAP_ALREADY_EXISTS) {
			/* The server may have made the entry (or may yet: the add can
			 * reach it late) though we never heard: it would be held for
			 * nobody while the session lives.  Its fence note is this
			 * add's alone. */
			if (t->session && t->op.broken)
				ll_session_abandon(t->be, t->dn, t->fence_value, t->gen,
				                   UNANSWERED_ROUNDS);
			return failed(&t->op, "take", t->key);
		}
		bool again = false;
		r = clear_the_way(t, r, &again);
		if (!again)
			break;
	}
	return r;
}

/* The filesystem reports breaks of successful acquisitions only: one that
 * failed says here what it broke, and forgets it. */
static void unbroken(const char *key, lockfs_acquire_result *res)
{
	lockfs_log(G_LOG_LEVEL_WARNING, key,
	           "ldap: broke stale lock %s of %s pid %" G_GINT64_FORMAT
	           " (fence %s), but another contender took it first",
	           key, res->previous.holder.host ? res->previous.holder.host : "?",
	           res->previous.holder.pid, res->previous.fence);
	lockfs_lock_info_clear(&res->previous);
	res->broke = false;
}

static int ll_acquire(lockfs_backend *b, const char *key, const lockfs_holder *who,
                      const void *content, size_t content_len, lockfs_lease **out,
                      lockfs_acquire_result *res)
{
	ll_backend *be = (ll_backend *)b;
	lockfs_acquire_result none;
	if (!res)
		res = &none;
	memset(res, 0, sizeof(*res));
	int r = 0;
	g_autofree char *dn = lock_dn(be, key, &r);
	if (!dn)
		return r;
	g_autofree char *cn = ll_key_encode(key);
	/* The session is fresh before the add, so a new lock has the margin
	 * of one renewed just now. */
	g_autofree char *session = NULL;
	uint64_t gen = 0;
	if (be->cfg.sessions)
		ll_session_settle(be); /* adoption is over, if there was one */
	if (be->cfg.sessions &&
	    (r = ll_session_fresh(be, lockfs_mono_us(), 0, &gen, &session)) != 0)
		return r == -ESTALE ? -EIO : r;
	ll_take t = {
		.be = be, .key = key, .dn = dn, .cn = cn, .session = session, .gen = gen, .res = res
	};
	if (ll_op_begin(be, &t.op) != 0)
		return -EIO;
	r = claim(&t, who, content, content_len);
	if (r == 0)
		r = add_entry(&t, out);
	ll_op_end(&t.op);
	lockfs_holder_clear(&t.h);
	g_free(t.fence_value);
	if (t.initial)
		g_bytes_unref(t.initial);
	if (r != 0 && res->broke)
		unbroken(key, res);
	/* A caller that passed no result has nobody to free what was broken. */
	if (res == &none && none.broke)
		lockfs_lock_info_clear(&none.previous);
	return r;
}

/* Rewrite the lease's notes (renewed= now), only while the entry is still
 * ours.  Called with the lease's mutex held. */
static int write_notes(ll_op *op, const char *key, ll_lease *p, int64_t now)
{
	int rc;
	for (int tries = 0;; tries++) {
		g_autoptr(GPtrArray) desc =
		        ll_notes_build(key, &p->holder, p->fence_value, p->session, now,
		                       lockfs_mono_us() - p->hb_mono_us, p->content);
		rc = ll_replace_notes(op, p->dn, p->fence_value, desc);
		/* Not our note: a fence swap whose answer was lost may have made
		 * its own (check_fence()); then write under that one. */
		if (rc != LDAP_NO_SUCH_ATTRIBUTE || !p->swap_value || tries > 0)
			break;
		if ((rc = swap_arrived(op, key, p)) != LDAP_SUCCESS)
			break;
	}
	if (rc == LDAP_NO_SUCH_OBJECT || rc == LDAP_NO_SUCH_ATTRIBUTE)
		return -ESTALE;
	return rc == LDAP_SUCCESS ? 0 : -EIO;
}

/* A call on LEASE: a connection, and the lease's writes one at a time. */
static int lease_begin(ll_backend *be, ll_lease *p, ll_op *op)
{
	if (ll_op_begin(be, op) != 0)
		return -EIO;
	g_mutex_lock(&p->mu);
	return 0;
}

static void lease_end(ll_lease *p, ll_op *op)
{
	g_mutex_unlock(&p->mu);
	ll_op_end(op);
}

static int ll_heartbeat(lockfs_backend *b, lockfs_lease *lease, const lockfs_beat *beat)
{
	ll_backend *be = (ll_backend *)b;
	ll_lease *p = lease->priv;
	ll_op op;
	if (lease_begin(be, p, &op) != 0)
		return -EIO;
	void *content;
	size_t content_len;
	if (lockfs_holder_apply_beat(&p->holder, LL_CLOCK_OFFSET_US(be), beat, &content,
	                             &content_len)) {
		if (p->content)
			g_bytes_unref(p->content);
		/* Empty content is an empty GBytes, as g_bytes_new() made it. */
		p->content = g_bytes_new_take(content, content_len);
	}
	if (beat->heartbeat_us) {
		/* The heartbeat on our monotonic clock: it may have waited for
		 * the rate limit; a wall clock step meanwhile counts as none. */
		int64_t age = lockfs_now_us() - beat->heartbeat_us;
		if (age < 0 || age > be->cfg.ttl_us)
			age = 0;
		p->hb_mono_us = lockfs_mono_us() - age;
	}
	int r = write_notes(&op, lease->key, p, ll_now_us(be));
	if (r == -EIO)
		failed(&op, "record a heartbeat of", lease->key);
	lease_end(p, &op);
	return r;
}

static int ll_renew(lockfs_backend *b, lockfs_lease *lease)
{
	ll_backend *be = (ll_backend *)b;
	ll_lease *p = lease->priv;
	if (p->session) {
		/* The session's write renews every lock on it. */
		if (g_atomic_int_get(&p->gone) || p->released)
			return -ESTALE;
		ll_session_settle(be); /* adoption is over, if there was one */
		int r = ll_session_fresh(be, lockfs_mono_us(), p->gen, NULL, NULL);
		if (r == 0 && g_atomic_int_get(&p->gone))
			return -ESTALE; /* found missing by the round just made */
		return r;
	}
	ll_op op;
	if (lease_begin(be, p, &op) != 0)
		return -EIO;
	int r = write_notes(&op, lease->key, p, ll_now_us(be));
	if (r == 0 && (be->caps & LL_CAP_DDS)) {
		int rc = refresh(&op, p->dn);
		r = rc == LDAP_SUCCESS ? 0 : rc == LDAP_NO_SUCH_OBJECT ? -ESTALE : -EIO;
	}
	if (r == -EIO)
		failed(&op, "renew", lease->key);
	lease_end(p, &op);
	return r;
}

static int ll_confirm(lockfs_backend *b, lockfs_lease *lease, char *fence)
{
	ll_backend *be = (ll_backend *)b;
	ll_lease *p = lease->priv;
	g_mutex_lock(&p->mu);
	bool checked = !p->unchecked;
	if (checked) /* no connection needed to say so */
		g_strlcpy(fence, p->fence_value + 6, LOCKFS_FENCE_MAX);
	g_mutex_unlock(&p->mu);
	if (checked)
		return 0;
	ll_op op;
	if (lease_begin(be, p, &op) != 0)
		return -EIO;
	int r = 0;
	if (p->unchecked) {
		int rc = check_fence(&op, lease->key, p);
		if (rc == LDAP_SUCCESS) {
			p->unchecked = false;
		} else {
			r = rc == LDAP_NO_SUCH_OBJECT
			            ? -ESTALE
			            : failed(&op, "check the fence of", lease->key);
		}
	}
	g_strlcpy(fence, p->fence_value + 6, LOCKFS_FENCE_MAX);
	lease_end(p, &op);
	return r;
}

static int ll_release(lockfs_backend *b, lockfs_lease *lease)
{
	ll_backend *be = (ll_backend *)b;
	ll_lease *p = lease->priv;
	ll_op op;
	if (lease_begin(be, p, &op) != 0)
		return -EIO;
	int rc = ll_delete_if_note(&op, p->dn, p->fence_value);
	/* A fence swap whose answer was lost may have made its note the
	 * entry's: that note is this lease's alone. */
	if ((rc == LDAP_NO_SUCH_OBJECT || rc == LDAP_ASSERTION_FAILED) && p->swap_value)
		rc = ll_delete_if_note(&op, p->dn, p->swap_value);
	int r = rc == LDAP_SUCCESS ? 0
	        : rc == LDAP_NO_SUCH_OBJECT || rc == LDAP_ASSERTION_FAILED
	                ? -ENOENT
	                : failed(&op, "release", lease->key);
	/* The fence confirm() settled on, which lease->fence need not be. */
	if (r != -EIO) {
		mine_drop(be, lease->key, p->fence_value + 6);
		g_mutex_lock(&be->sess_mu); /* mark_gone reads it under sess_mu */
		p->released = true;
		g_mutex_unlock(&be->sess_mu);
	}
	lease_end(p, &op);
	return r;
}

/* Read KEY's lock and hand it to FN within one call: FN's result, or -ENOENT
 * (no such lock), -EINVAL or -EIO. */
static int with_lock(ll_backend *be, const char *key,
                     int (*fn)(ll_op *op, const ll_lock *l, void *user), void *user)
{
	int r = 0;
	g_autofree char *dn = lock_dn(be, key, &r);
	if (!dn)
		return r;
	ll_op op;
	if (ll_op_begin(be, &op) != 0)
		return -EIO;
	ll_lock cur;
	int rc = ll_read_lock(&op, dn, &cur);
	if (rc == LDAP_NO_SUCH_OBJECT || (rc == LDAP_SUCCESS && (!cur.key || strcmp(cur.key, key))))
		r = -ENOENT;
	else if (rc != LDAP_SUCCESS)
		r = failed(&op, "look up", key);
	else if (cur.session && ll_session_resolve(&op, &cur) != LDAP_SUCCESS && op.broken)
		r = failed(&op, "look up the session of", key);
	else
		r = fn(&op, &cur, user);
	ll_lock_clear(&cur);
	ll_op_end(&op);
	return r;
}

struct breaking {
	const char *fence;
	lockfs_lock_info *broken;
};

static int break_found(ll_op *op, const ll_lock *l, void *user)
{
	struct breaking *b = user;
	if (b->fence && strcmp(l->fence, b->fence) != 0)
		return -ENOENT;
	int r = break_entry(op, l, false);
	if (r == 0) {
		if (b->broken)
			fill_info(op->be, l, b->broken);
		mine_drop(op->be, l->key, l->fence);
	}
	return r;
}

static int ll_break(lockfs_backend *b, const char *key, const char *fence,
                    const lockfs_holder *breaker, lockfs_lock_info *broken)
{
	(void)breaker; /* the filesystem logs and notifies who broke it */
	struct breaking br = { fence, broken };
	return with_lock((ll_backend *)b, key, break_found, &br);
}

static int inspect_found(ll_op *op, const ll_lock *l, void *user)
{
	fill_info(op->be, l, user);
	return 0;
}

static int ll_inspect(lockfs_backend *b, const char *key, lockfs_lock_info *out)
{
	return with_lock((ll_backend *)b, key, inspect_found, out);
}

struct collect {
	const char *prefix;
	GArray *locks; /* ll_lock */
};

static void collect_one(ll_lock *l, void *user)
{
	struct collect *c = user;
	if (!g_str_has_prefix(l->key, c->prefix))
		return;
	g_array_append_val(c->locks, *l);
	memset(l, 0, sizeof(*l)); /* now the array's */
}

/* Read each session the locks name, once. */
static void resolve_sessions(ll_op *op, GArray *locks)
{
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
	for (guint i = 0; i < locks->len; i++) {
		ll_lock *l = &g_array_index(locks, ll_lock, i);
		if (!l->session)
			continue;
		ll_lock *first = g_hash_table_lookup(seen, l->session);
		if (first) {
			l->sess_state = first->sess_state;
			l->sess_last_us = first->sess_last_us;
			l->sess_res_us = first->sess_res_us;
			l->sess_lease_us = first->sess_lease_us;
			continue;
		}
		ll_session_resolve(op, l);
		g_hash_table_insert(seen, l->session, l);
	}
}

/* Keys with PREFIX have cn values starting with the prefix itself (plain keys)
 * or with its escaped form (escaped keys); the server's caseless match may
 * return more, which collect_one() drops. */
static char *list_filter(const char *prefix)
{
	if (!*prefix)
		return g_strdup("(objectClass=organizationalRole)");
	GString *f = g_string_new("(&(objectClass=organizationalRole)(|");
	g_autofree char *esc = ll_key_escape(prefix);
	const char *forms[] = { g_utf8_validate(prefix, -1, NULL) ? prefix : NULL, esc };
	for (size_t i = 0; i < G_N_ELEMENTS(forms); i++) {
		if (!forms[i])
			continue;
		/* Hashed names keep only the start of the name. */
		size_t len = ll_cn_prefix_len(forms[i], LL_CN_HASH_PREFIX);
		struct berval in = { .bv_len = len, .bv_val = (char *)forms[i] }, out = { 0 };
		if (ldap_bv2escaped_filter_value(&in, &out) != 0)
			continue;
		g_string_append_printf(f, "(cn=%s*)", out.bv_val);
		ber_memfree(out.bv_val);
	}
	g_string_append(f, "))");
	return g_string_free(f, FALSE);
}

static int ll_list(lockfs_backend *b, const char *prefix, lockfs_list_cb cb, void *user)
{
	ll_backend *be = (ll_backend *)b;
	ll_op op;
	if (ll_op_begin(be, &op) != 0)
		return -EIO;
	g_autofree char *filter = list_filter(prefix ? prefix : "");
	struct collect c = { prefix ? prefix : "", g_array_new(FALSE, FALSE, sizeof(ll_lock)) };
	int rc = ll_search_locks(&op, filter, collect_one, &c);
	int r = rc == LDAP_SUCCESS ? 0 : failed(&op, "list locks under", be->cfg.base);
	if (rc == LDAP_SIZELIMIT_EXCEEDED)
		lockfs_log(
		        G_LOG_LEVEL_WARNING, NULL,
		        "ldap: lift the bind identity's size limit to list every lock (OpenLDAP: "
		        "limits dn.exact=\"BIND_DN\" size=unlimited)");
	if (r == 0)
		resolve_sessions(&op, c.locks);
	ll_op_end(&op);
	/* Call back without a connection held: callbacks may call us. */
	for (guint i = 0; i < c.locks->len; i++) {
		ll_lock *l = &g_array_index(c.locks, ll_lock, i);
		if (r == 0) {
			lockfs_lock_info info;
			fill_info(be, l, &info);
			cb(&info, user);
			lockfs_lock_info_clear(&info);
		}
		ll_lock_clear(l);
	}
	g_array_free(c.locks, TRUE);
	return r;
}

static int ll_clock(lockfs_backend *b, lockfs_clock_info *out)
{
	ll_backend *be = (ll_backend *)b;
	memset(out, 0, sizeof(*out));
	out->bound_us = be->cfg.clock_bound_us;
	return ll_clock_offset(be, &out->offset_us, &out->uncertainty_us, &out->age_us) ? 0
	                                                                                : -ENOENT;
}

static void ll_lease_free(lockfs_backend *b, lockfs_lease *lease)
{
	if (!lease)
		return;
	ll_backend *be = (ll_backend *)b;
	ll_lease *p = lease->priv;
	mine_drop(be, lease->key, p ? p->fence_value + 6 : lease->fence);
	if (p && p->session) {
		ll_session_untrack(be, p);
		if (!p->released && !g_atomic_int_get(&p->gone))
			ll_session_abandon(be, p->dn, p->fence_value, p->gen, 1);
		/* A swap never answered may reach the server yet: its note is
		 * this lease's alone, and the session would keep the entry for
		 * nobody.  (Not after a release: that found the old note gone,
		 * which every swap asserts.) */
		if (p->swap_value && !p->released)
			ll_session_abandon(be, p->dn, p->swap_value, p->gen, UNANSWERED_ROUNDS);
		g_free(p->session);
	}
	if (p) {
		g_mutex_clear(&p->mu);
		g_free(p->dn);
		g_free(p->fence_value);
		g_free(p->swap_value);
		lockfs_holder_clear(&p->holder);
		if (p->content)
			g_bytes_unref(p->content);
		g_free(p);
	}
	g_free(lease->key);
	g_free(lease);
}

/* ---- restart (backend.h, "Restart") ---- */

/* Lease tokens: what renews the lease, the session or the entry itself
 * (sessions = no).  Key and fence name the entry; the session is resume()'s. */
#define TOKEN_SESSION "session"
#define TOKEN_ENTRY "entry"

static char *ll_identity(lockfs_backend *b)
{
	ll_backend *be = (ll_backend *)b;
	return g_strdup_printf("ldap uri=%s base=%s", be->cfg.uri, be->cfg.base);
}

static int ll_session_token_of(lockfs_backend *b, GString *out)
{
	return ll_session_token((ll_backend *)b, out);
}

static int ll_resume(lockfs_backend *b, const char *token)
{
	return ll_session_resume((ll_backend *)b, token);
}

/* "session" or "entry", and while the fence is not checked yet (confirm())
 * ":unchecked:END", END its block's end: a lease taken back before its
 * fence was checked is checked then, as it would have been. */
#define TOKEN_UNCHECKED ":unchecked:"

static int ll_lease_token(lockfs_backend *b, const lockfs_lease *lease, GString *out)
{
	(void)b;
	ll_lease *p = lease->priv;
	g_string_assign(out, p->session ? TOKEN_SESSION : TOKEN_ENTRY);
	g_mutex_lock(&p->mu);
	if (p->unchecked)
		g_string_append_printf(out, TOKEN_UNCHECKED "%" G_GUINT64_FORMAT, p->block_end);
	g_mutex_unlock(&p->mu);
	return 0;
}

/* TOKEN as lease_token() writes it: its kind, and whether (and up to which
 * block end) its fence is to be checked.  False for anything else. */
static bool token_parse(const char *token, bool *on_session, bool *unchecked, uint64_t *end)
{
	const char *rest = NULL;
	*unchecked = false;
	*end = 0;
	if (!token)
		return false;
	if (g_str_has_prefix(token, TOKEN_SESSION))
		*on_session = true, rest = token + strlen(TOKEN_SESSION);
	else if (g_str_has_prefix(token, TOKEN_ENTRY))
		*on_session = false, rest = token + strlen(TOKEN_ENTRY);
	else
		return false;
	if (!*rest)
		return true;
	if (!g_str_has_prefix(rest, TOKEN_UNCHECKED))
		return false;
	rest += strlen(TOKEN_UNCHECKED);
	*unchecked = true;
	return g_ascii_isdigit(rest[0]) && (rest[0] != '0' || !rest[1]) &&
	       g_ascii_string_to_unsigned(rest, 10, 0, G_MAXUINT64, end, NULL);
}

/* A fence as this backend writes them: a u64 in decimal, no leading zero. */
static bool fence_ok(const char *fence)
{
	guint64 v = 0;
	if (!fence || !g_ascii_isdigit(fence[0]) || (fence[0] == '0' && fence[1]) ||
	    !g_ascii_string_to_unsigned(fence, 10, 1, G_MAXUINT64, &v, NULL))
		return false;
	return true;
}

/* Adopt the entry CUR, found to be the lease's: a lease as acquire() makes
 * one, whose fence is final unless UNCHECKED (recorded before confirm(); then
 * checked against block END as a grant's is), and the holder record as
 * the filesystem kept it, with the entry's times.  Without a session the
 * entry is renewed now, as renew() does; with one, adopt() renewed it. */
static int adopt_found(ll_op *op, const char *dn, const ll_lock *cur, const lockfs_holder *who,
                       const void *content, size_t content_len, const char *session, uint64_t gen,
                       uint64_t end, bool unchecked, lockfs_lease **out)
{
	ll_backend *be = op->be;
	lockfs_holder h;
	lockfs_holder_copy(&h, who);
	h.acquired_us = cur->holder.acquired_us;
	h.heartbeat_us = cur->holder.heartbeat_us;
	/* The heartbeat's age as the previous instance left it (same host,
	 * same clock): adopting a lock makes no heartbeat. */
	int64_t age = MAX(ll_now_us(be) - h.heartbeat_us, 0);
	g_autoptr(GBytes) bytes =
	        content ? g_bytes_new(content, MIN(content_len, (size_t)LOCKFS_CONTENT_MAX))
	                : (cur->content ? g_bytes_ref(cur->content) : NULL);
	lockfs_lease *lease = lease_make(cur->key, dn, cur->fence_value, end, unchecked,
	                                 lockfs_mono_us() - age, &h, bytes, session, gen);
	lockfs_holder_clear(&h);
	int r = 0;
	if (!session) {
		ll_lease *p = lease->priv;
		r = write_notes(op, cur->key, p, ll_now_us(be));
		if (r == 0 && (be->caps & LL_CAP_DDS)) {
			int rc = refresh(op, p->dn);
			r = rc == LDAP_SUCCESS ? 0 : rc == LDAP_NO_SUCH_OBJECT ? -ESTALE : -EIO;
		}
		if (r == -EIO)
			failed(op, "renew", cur->key);
	}
	if (r != 0) {
		ll_lease_free(&be->base, lease);
		return r;
	}
	lease_register(be, lease);
	*out = lease;
	return 0;
}

static int ll_adopt(lockfs_backend *b, const char *key, const char *fence, const char *token,
                    const lockfs_holder *who, const void *content, size_t content_len,
                    lockfs_lease **out)
{
	ll_backend *be = (ll_backend *)b;
	bool on_session, unchecked;
	uint64_t end;
	if (!token_parse(token, &on_session, &unchecked, &end) || !fence_ok(fence))
		return -EINVAL;
	int r = 0;
	g_autofree char *dn = lock_dn(be, key, &r);
	if (!dn)
		return r;
	if (on_session != be->cfg.sessions) {
		lockfs_log(G_LOG_LEVEL_WARNING, key,
		           "ldap: %s was taken with sessions = %s: this mount cannot renew it", key,
		           on_session ? "yes" : "no");
		return -ESTALE;
	}
	g_autofree char *session = NULL;
	uint64_t gen = 0;
	if (on_session && (r = ll_session_for_adopt(be, &gen, &session)) != 0)
		return r;
	ll_op op;
	if (ll_op_begin(be, &op) != 0)
		return -EIO;
	g_autofree char *fence_value = g_strconcat("fence=", fence, NULL);
	ll_lock cur;
	int rc = ll_read_lock(&op, dn, &cur);
	if (rc == LDAP_NO_SUCH_OBJECT)
		r = -ESTALE;
	else if (rc != LDAP_SUCCESS)
		r = failed(&op, "look up", key);
	else if (!cur.key || strcmp(cur.key, key) != 0 ||
	         g_strcmp0(cur.fence_value, fence_value) != 0 ||
	         g_strcmp0(cur.session, session) != 0)
		r = -ESTALE; /* another's now, or another lease of ours */
	else
		r = adopt_found(&op, dn, &cur, who, content, content_len, session, gen, end,
		                unchecked, out);
	ll_lock_clear(&cur);
	ll_op_end(&op);
	if (r == 0 && session) {
		g_autofree char *cn = ll_key_encode(key);
		ll_session_adopted(be, cn);
	}
	return r;
}

/* Lets go of nothing (backend.h, "Restart"): the session entry and every
 * lock entry stay, for a later instance to resume and adopt, or to run out
 * with their lease. */
static void ll_destroy(lockfs_backend *b)
{
	ll_backend *be = (ll_backend *)b;
	ll_session_clear(be);
	if (be->idle) {
		ll_unbind_all(be->idle);
		g_ptr_array_free(be->idle, TRUE);
	}
	if (be->mine)
		g_hash_table_destroy(be->mine);
	ll_config_clear(&be->cfg);
	g_free(be->fence_dn);
	g_free(be->fence_attr);
	g_free(be->last_error);
	g_mutex_clear(&be->pool_mu);
	g_mutex_clear(&be->mine_mu);
	g_mutex_clear(&be->log_mu);
	g_mutex_clear(&be->fence_mu);
	g_mutex_clear(&be->clock_mu);
	g_free(be);
}

static lockfs_backend *ldap_backend_new(const lockfs_config *cfg, const char *mount_id,
                                        GError **error)
{
	(void)mount_id; /* the directory is the durable state */
	ll_backend *be = g_new0(ll_backend, 1);
	be->base = (lockfs_backend){
		LOCKFS_BACKEND_INIT("ldap", LOCKFS_BACKEND_SHARED | LOCKFS_BACKEND_LEASES),
		.acquire = ll_acquire,
		.heartbeat = ll_heartbeat,
		.renew = ll_renew,
		.release = ll_release,
		.break_lock = ll_break,
		.inspect = ll_inspect,
		.list = ll_list,
		.confirm = ll_confirm,
		.lease_free = ll_lease_free,
		.destroy = ll_destroy,
		.clock = ll_clock,
		.identity = ll_identity,
		.session_token = ll_session_token_of,
		.resume = ll_resume,
		.lease_token = ll_lease_token,
		.adopt = ll_adopt,
	};
	g_mutex_init(&be->pool_mu);
	g_mutex_init(&be->mine_mu);
	g_mutex_init(&be->log_mu);
	g_mutex_init(&be->fence_mu);
	g_mutex_init(&be->clock_mu);
	ll_session_init(be);
	be->idle = g_ptr_array_new();
	be->mine = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	if (!ll_config_load(&be->cfg, cfg, error)) {
		ll_destroy(&be->base);
		return NULL;
	}
	be->fence_dn = g_strconcat("ou=fence,", be->cfg.base, NULL);
	if (!be->cfg.verify && (be->cfg.starttls || be->cfg.scheme == LL_URI_LDAPS))
		lockfs_log(G_LOG_LEVEL_WARNING, NULL,
		           "ldap: verify = false: the certificate of %s is not checked, so anyone "
		           "on the network path can pose as the server",
		           be->cfg.uri);
	if (!ll_setup(be, error)) {
		ll_destroy(&be->base);
		return NULL;
	}
	return &be->base;
}

/* Locks as entries under a base in an LDAP directory, shared with every host
 * binding to the same server. */
const lockfs_backend_type lockfs_ldap_backend_type = {
	LOCKFS_BACKEND_TYPE_INIT("ldap"),
	.group = "ldap",
	.keys = (const char *const[]){ "uri", "bind_dn", "password_file", "sasl_mech", "starttls",
	                               "ca_file", "verify", "base", "dynamic", "max_clock_offset",
	                               "sessions", NULL },
	.create = ldap_backend_new,
};
