/* The mount's session entry (issue 14): one entry per mount, cn=%session%…,
 * whose last write renews every lock naming it (session= in the lock's
 * notes).  So keeping N locks costs one write a renew interval (and a dds
 * refresh), not two per lock.
 *
 * Like etcd's one lease per mount: renew() of any lock answers at once when
 * a session write that succeeded was *sent* within the last renew interval
 * before the call, else it makes one (one at a time; callers meanwhile wait
 * and share it).  Because a renewal may count on a write sent up to a renew
 * interval before the call the filesystem dates it from, the session's lease
 * is ttl + renew interval (its lease_ms= note, which contenders judge it by):
 * the holder declares a lock lost ttl less a fifth after that call, a fifth
 * of ttl before any contender may.
 *
 * What a per-lock write used to tell the holder — that its lock was broken
 * (stale, or by lockfsctl unlock) — one search a round tells it now: the cn
 * values of the entries naming the session.  A lock of ours missing from it
 * answers -ESTALE to its next renew().
 *
 * Restart (issue 25): destroy() leaves the session entry, and a new instance
 * of the mount resumes it (ll_session_resume()) while it is still live by
 * the rule others judge it by; the lock entries naming it that adopt() does
 * not take back are deleted once adoption is over (ll_session_settle()). */
#include "ldap_int.h"

#include <errno.h>
#include <lockfs/backend_support.h>
#include <string.h>
#include <unistd.h>

/* An entry to delete at the next rounds (ll_session_abandon()). */
typedef struct {
	char *dn, *fence_value;
	int rounds; /* tries left */
} ll_abandoned;

/* A session read live: its last write, which later writes only move on,
 * so while it alone says the session is live, it is (sessions_seen). */
typedef struct {
	int64_t last_us, res_us, lease_us;
} ll_session_seen;

/* Remembered sessions at most: a base has a few per host. */
#define SEEN_MAX 4096

static void abandoned_free(gpointer p)
{
	ll_abandoned *a = p;
	if (!a)
		return;
	g_free(a->dn);
	g_free(a->fence_value);
	g_free(a);
}

void ll_session_init(ll_backend *be)
{
	g_mutex_init(&be->sess_mu);
	g_cond_init(&be->sess_cv);
	be->sess_held = g_hash_table_new(g_direct_hash, g_direct_equal);
	be->sess_seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	be->sess_abandoned = g_ptr_array_new_with_free_func(abandoned_free);
}

void ll_session_clear(ll_backend *be)
{
	g_free(be->sess_cn);
	g_free(be->sess_started);
	if (be->sess_held)
		g_hash_table_destroy(be->sess_held);
	if (be->sess_seen)
		g_hash_table_destroy(be->sess_seen);
	if (be->sess_abandoned)
		g_ptr_array_free(be->sess_abandoned, TRUE);
	if (be->sess_orphans)
		g_hash_table_destroy(be->sess_orphans);
	g_mutex_clear(&be->sess_mu);
	g_cond_clear(&be->sess_cv);
}

/* The session's notes: who, since when, its last write (renewed=, by our
 * clock, for the shown times), and its lease. */
static GPtrArray *session_notes(ll_backend *be, const char *started)
{
	GPtrArray *d = g_ptr_array_new_with_free_func(g_free);
	g_autofree char *now = ll_time_format(ll_now_us(be));
	g_ptr_array_add(d, g_strconcat("host=", be->cfg.host, NULL));
	g_ptr_array_add(d, g_strdup_printf("pid=%d", (int)getpid()));
	g_ptr_array_add(d, g_strdup(started));
	g_ptr_array_add(d, g_strconcat("renewed=", now, NULL));
	g_ptr_array_add(d, g_strdup_printf("lease_ms=%" G_GINT64_FORMAT,
	                                   (be->cfg.ttl_us + be->cfg.renew_us) / 1000));
	return d;
}

/* The dds TTL of the session: its lease in whole seconds, one more since
 * servers count from the start of the current second. */
static int session_ttl_s(ll_backend *be)
{
	return (int)((be->cfg.ttl_us + be->cfg.renew_us + G_USEC_PER_SEC - 1) / G_USEC_PER_SEC) + 1;
}

static int dds_refresh(ll_op *op, const char *dn)
{
	return ll_refresh_to(op, dn, session_ttl_s(op->be), "the session entry");
}

static int create(ll_op *op, char **cn_out, char **started_out)
{
	ll_backend *be = op->be;
	g_autofree char *cn = ll_session_cn(be->cfg.host);
	g_autofree char *dn = ll_dn(cn, be->cfg.base);
	g_autofree char *t = ll_time_format(ll_now_us(be));
	g_autofree char *started = g_strconcat("started=", t, NULL);
	g_autoptr(GPtrArray) desc = session_notes(be, started);
	const char *plain[] = { "top", "organizationalRole", NULL };
	const char *dynamic[] = { "top", "organizationalRole", "dynamicObject", NULL };
	bool dyn = be->caps & LL_CAP_DDS;
	int rc = ll_add(op, dn, dyn ? dynamic : plain, "cn", cn, desc);
	if (rc == LDAP_SUCCESS && dyn && (rc = dds_refresh(op, dn)) != LDAP_SUCCESS)
		ll_delete(op, dn, NULL);
	if (rc != LDAP_SUCCESS) {
		g_autofree char *why = ll_error_text(op);
		lockfs_log(G_LOG_LEVEL_WARNING, NULL, "ldap: cannot make the session entry %s: %s",
		           dn, why);
		return -EIO;
	}
	*cn_out = g_steal_pointer(&cn);
	*started_out = g_steal_pointer(&started);
	return 0;
}

/* Rewrite the session's notes (its modifyTimestamp and entryCSN are then
 * the renewal's time on the server's clock) and, with dds, refresh it.
 * -ESTALE: it is gone. */
static int refresh(ll_op *op, const char *cn, const char *started)
{
	ll_backend *be = op->be;
	g_autofree char *dn = ll_dn(cn, be->cfg.base);
	g_autoptr(GPtrArray) desc = session_notes(be, started);
	int rc = ll_replace_notes(op, dn, started, desc);
	if (rc == LDAP_SUCCESS && (be->caps & LL_CAP_DDS))
		rc = dds_refresh(op, dn);
	if (rc == LDAP_NO_SUCH_OBJECT || rc == LDAP_NO_SUCH_ATTRIBUTE)
		return -ESTALE;
	if (rc != LDAP_SUCCESS) {
		g_autofree char *why = ll_error_text(op);
		lockfs_log(G_LOG_LEVEL_WARNING, NULL, "ldap: cannot renew the session %s: %s", cn,
		           why);
		return -EIO;
	}
	return 0;
}

/* Delete the entries of leases freed without a release, each only while it
 * still has its fence (never a newer holder's).  An add whose answer was
 * lost may reach the server late: it stays in GONE for the next rounds, as
 * does whatever the call's deadline left untried; the rest are set to NULL. */
static void delete_abandoned(ll_op *op, GPtrArray *gone)
{
	for (guint i = 0; i < gone->len; i++) {
		ll_abandoned *a = gone->pdata[i];
		if (op->broken || lockfs_mono_us() >= op->deadline_mono_us)
			return; /* the rest next round */
		int rc = ll_delete_if_note(op, a->dn, a->fence_value);
		if (rc == LDAP_SUCCESS || --a->rounds <= 0) {
			abandoned_free(a);
			gone->pdata[i] = NULL;
		}
	}
}

static void each_present(const char *cn, void *user)
{
	g_hash_table_add(user, g_strdup(cn));
}

static void mark_gone(ll_backend *be, ll_lease *p, const char *dn, const char *fence_value)
{
	/* Only the very lease still tracked: one released meanwhile was freed
	 * (and its memory may be a new lease's, with another fence). */
	g_mutex_lock(&be->sess_mu);
	if (g_hash_table_contains(be->sess_held, p) && !p->released &&
	    g_strcmp0(p->fence_value, fence_value) == 0) {
		g_atomic_int_set(&p->gone, 1);
		lockfs_log(G_LOG_LEVEL_WARNING, NULL,
		           "ldap: %s is no longer this mount's lock (broken by another host, or "
		           "deleted)",
		           dn);
	}
	g_mutex_unlock(&be->sess_mu);
}

/* A lease as check_mine() found it, copied while it was tracked. */
typedef struct {
	char *dn, *fence_value, *swap_value;
	ll_lease *lease; /* compared, never followed, until mark_gone() */
} held_copy;

static void held_copy_clear(gpointer p)
{
	held_copy *h = p;
	g_free(h->dn);
	g_free(h->fence_value);
	g_free(h->swap_value);
}

/* Which of our locks on session CN (generation GEN) are gone or another's:
 * one search for the entries naming the session.  Only leases whose add was
 * answered before the search count (a later one may not be found yet).
 * Where the search fails (a size limit below the locks held), one compare
 * of each lock's fence instead: what a per-lock renewal cost, in reads. */
static void check_mine(ll_op *op, const char *cn, uint64_t gen)
{
	ll_backend *be = op->be;
	g_autoptr(GArray) held = g_array_new(FALSE, FALSE, sizeof(held_copy));
	g_array_set_clear_func(held, held_copy_clear);
	g_mutex_lock(&be->sess_mu);
	GHashTableIter it;
	gpointer k;
	g_hash_table_iter_init(&it, be->sess_held);
	while (g_hash_table_iter_next(&it, &k, NULL)) {
		ll_lease *p = k;
		if (p->gen == gen && !g_atomic_int_get(&p->gone)) {
			held_copy h = { g_strdup(p->dn), g_strdup(p->fence_value),
				        g_strdup(p->swap_value), p };
			g_array_append_val(held, h);
		}
	}
	g_mutex_unlock(&be->sess_mu);
	if (!held->len)
		return;
	g_autofree char *note = g_strconcat("session=", cn, NULL);
	g_autofree char *filter = ll_filter_eq("description", note);
	g_autoptr(GHashTable) present =
	        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	int rc = ll_search_cns(op, filter, each_present, present);
	if (rc != LDAP_SUCCESS && !op->broken && ll_log_due(be, &be->sess_logged_mono_us)) {
		g_autofree char *why = ll_error_text(op);
		lockfs_log(G_LOG_LEVEL_WARNING, NULL,
		           "ldap: cannot search for the locks of session %s (%s): checking each "
		           "lock instead; %s",
		           cn, why,
		           rc == LDAP_SIZELIMIT_EXCEEDED
		                   ? "lift the bind identity's size limit (OpenLDAP: limits "
		                     "dn.exact=\"BIND_DN\" size=unlimited)"
		                   : "let the bind identity search the base");
	}
	for (guint i = 0; i < held->len && !op->broken; i++) {
		held_copy *h = &g_array_index(held, held_copy, i);
		if (rc == LDAP_SUCCESS) {
			g_autofree char *lcn = ll_dn_cn(h->dn);
			if (lcn && g_hash_table_contains(present, lcn))
				continue;
		} else {
			int c = ll_compare(op, h->dn, "description", h->fence_value);
			/* Or the note of a fence swap whose answer was lost. */
			if (c == LDAP_COMPARE_FALSE && h->swap_value)
				c = ll_compare(op, h->dn, "description", h->swap_value);
			if (c != LDAP_COMPARE_FALSE && c != LDAP_NO_SUCH_OBJECT)
				continue; /* ours, or not known now */
		}
		mark_gone(be, h->lease, h->dn, h->fence_value);
	}
}

/* One round of ll_session_fresh(): a write to the session entry (a
 * refresh, or a new session), then what is due once a round. */
typedef struct {
	char *cur;        /* the session to refresh, or NULL: make one */
	char *started;    /* its started= note */
	uint64_t cur_gen; /* its generation */
	GPtrArray *gone;  /* entries held for nobody, to delete this round */
	ll_op op;
	bool have_op;
	char *new_cn, *new_started; /* the session made, when there was none */
	int64_t sent;               /* when the write was sent */
} sess_round;

/* Begin a round: what it works on, taken under sess_mu. */
static void round_begin(ll_backend *be, sess_round *rd)
{
	rd->cur = be->sess_lost ? NULL : g_strdup(be->sess_cn);
	rd->started = g_strdup(be->sess_started);
	rd->cur_gen = be->sess_gen;
	rd->gone = be->sess_abandoned;
	be->sess_abandoned = g_ptr_array_new_with_free_func(abandoned_free);
}

/* The round's write, without sess_mu, bounded by DEADLINE. */
static int round_write(ll_backend *be, sess_round *rd, int64_t deadline)
{
	rd->have_op = ll_op_begin(be, &rd->op) == 0;
	if (!rd->have_op)
		return -EIO;
	if (rd->op.deadline_mono_us > deadline)
		rd->op.deadline_mono_us = deadline;
	rd->sent = lockfs_mono_us();
	return rd->cur ? refresh(&rd->op, rd->cur, rd->started)
	               : create(&rd->op, &rd->new_cn, &rd->new_started);
}

/* End the round whose write answered R: called and returning with sess_mu
 * held, which it lets go of while it reads and deletes. */
static void round_end(ll_backend *be, sess_round *rd, int r)
{
	be->sess_busy = false;
	g_cond_broadcast(&be->sess_cv);
	if (r == 0) {
		if (!rd->cur) {
			g_free(be->sess_cn);
			g_free(be->sess_started);
			be->sess_cn = rd->new_cn;
			be->sess_started = rd->new_started;
			be->sess_gen++;
			be->sess_lost = false;
		}
		be->sess_ok_sent = rd->sent;
		/* Once a round, after the renewals waiting were let go: which
		 * of our locks were broken, and the entries held for nobody. */
		g_mutex_unlock(&be->sess_mu);
		if (rd->cur)
			check_mine(&rd->op, rd->cur, rd->cur_gen);
		delete_abandoned(&rd->op, rd->gone);
		g_mutex_lock(&be->sess_mu);
	}
	/* What is left for the next round: the same session's only (a lost
	 * session's entries are judged run out with it). */
	bool keep = rd->cur && (r == 0 || r == -EIO);
	for (guint i = 0; i < rd->gone->len; i++)
		if (rd->gone->pdata[i] && keep)
			g_ptr_array_add(be->sess_abandoned, g_steal_pointer(&rd->gone->pdata[i]));
	g_ptr_array_free(rd->gone, TRUE);
	if (rd->have_op) {
		g_mutex_unlock(&be->sess_mu);
		ll_op_end(&rd->op);
		g_mutex_lock(&be->sess_mu);
	}
}

/* The round's session is gone at the server: every lock on it is lost.
 * Under sess_mu. */
static void session_lost(ll_backend *be, const sess_round *rd)
{
	/* A session with no lock on it lapses quietly: an idle mount is not
	 * kept alive. */
	guint on_it = 0;
	GHashTableIter it;
	gpointer k;
	g_hash_table_iter_init(&it, be->sess_held);
	while (g_hash_table_iter_next(&it, &k, NULL))
		on_it += ((ll_lease *)k)->gen == rd->cur_gen;
	if (!be->sess_lost)
		lockfs_log(on_it ? G_LOG_LEVEL_WARNING : G_LOG_LEVEL_DEBUG, NULL,
		           "ldap: the session entry %s is gone (it expired at the "
		           "server, or was deleted): every lock of this mount on it "
		           "is lost (%u)",
		           rd->cur, on_it);
	be->sess_lost = true;
}

int ll_session_fresh(ll_backend *be, int64_t start, uint64_t want, uint64_t *gen, char **cn)
{
	int64_t deadline = start + be->cfg.timeout_us;
	g_mutex_lock(&be->sess_mu);
	for (;;) {
		if (want && (be->sess_gen != want || be->sess_lost)) {
			g_mutex_unlock(&be->sess_mu);
			return -ESTALE;
		}
		if (be->sess_cn && !be->sess_lost && be->sess_ok_sent >= start - be->cfg.renew_us) {
			if (gen)
				*gen = be->sess_gen;
			if (cn)
				*cn = g_strdup(be->sess_cn);
			g_mutex_unlock(&be->sess_mu);
			return 0;
		}
		if (be->sess_busy) {
			if (!lockfs_cond_wait_until(&be->sess_cv, &be->sess_mu, deadline)) {
				g_mutex_unlock(&be->sess_mu);
				return -EIO;
			}
			continue;
		}
		be->sess_busy = true;
		sess_round rd = { 0 };
		round_begin(be, &rd);
		g_mutex_unlock(&be->sess_mu);
		int r = round_write(be, &rd, deadline);
		g_mutex_lock(&be->sess_mu);
		round_end(be, &rd, r);
		if (r == -ESTALE)
			session_lost(be, &rd);
		g_free(rd.cur);
		g_free(rd.started);
		if (r == 0 || r == -ESTALE)
			continue;
		g_mutex_unlock(&be->sess_mu);
		return r;
	}
}

void ll_session_track(ll_backend *be, ll_lease *p)
{
	g_mutex_lock(&be->sess_mu);
	g_hash_table_add(be->sess_held, p);
	g_mutex_unlock(&be->sess_mu);
}

void ll_session_untrack(ll_backend *be, ll_lease *p)
{
	g_mutex_lock(&be->sess_mu);
	g_hash_table_remove(be->sess_held, p);
	g_mutex_unlock(&be->sess_mu);
}

void ll_session_abandon(ll_backend *be, const char *dn, const char *fence_value, uint64_t gen,
                        int rounds)
{
	ll_abandoned *a = g_new0(ll_abandoned, 1);
	a->dn = g_strdup(dn);
	a->fence_value = g_strdup(fence_value);
	a->rounds = rounds;
	g_mutex_lock(&be->sess_mu);
	/* Only the current session's: an old one's locks went with it. */
	if (gen == be->sess_gen && !be->sess_lost) {
		g_ptr_array_add(be->sess_abandoned, a);
		a = NULL;
	}
	g_mutex_unlock(&be->sess_mu);
	abandoned_free(a);
}

/* Whether the session's last write as remembered still says it is live
 * now: then it is, whatever was written since (a write only moves it on),
 * and a lookup costs one read, not two.  Anything else is read again: a
 * session is never found run out, or gone, from memory. */
static bool seen_live(ll_backend *be, ll_lock *l)
{
	ll_server_now now;
	ll_server_now_of(be, NULL, &now);
	if (!now.hi_us)
		return false;
	g_mutex_lock(&be->sess_mu);
	ll_session_seen *s = g_hash_table_lookup(be->sess_seen, l->session);
	bool live =
	        s && s->last_us <= now.hi_us && now.lo_us - (s->last_us + s->res_us) <= s->lease_us;
	if (live) {
		l->sess_last_us = s->last_us;
		l->sess_res_us = s->res_us;
		l->sess_lease_us = s->lease_us;
		l->sess_state = LL_SESS_LIVE;
	}
	g_mutex_unlock(&be->sess_mu);
	return live;
}

static void seen_note(ll_backend *be, const ll_lock *l)
{
	g_mutex_lock(&be->sess_mu);
	if (l->sess_state != LL_SESS_LIVE) {
		g_hash_table_remove(be->sess_seen, l->session);
	} else {
		if (g_hash_table_size(be->sess_seen) >= SEEN_MAX)
			g_hash_table_remove_all(be->sess_seen);
		ll_session_seen *s = g_new(ll_session_seen, 1);
		*s = (ll_session_seen){ l->sess_last_us, l->sess_res_us, l->sess_lease_us };
		g_hash_table_replace(be->sess_seen, g_strdup(l->session), s);
	}
	g_mutex_unlock(&be->sess_mu);
}

int ll_session_resolve(ll_op *op, ll_lock *l)
{
	l->sess_state = LL_SESS_UNREAD;
	if (!ll_is_session_cn(l->session))
		return LDAP_SUCCESS; /* not a session of ours: never judged gone */
	if (seen_live(op->be, l))
		return LDAP_SUCCESS;
	g_autofree char *dn = ll_dn(l->session, op->be->cfg.base);
	if (!dn)
		return LDAP_SUCCESS;
	ll_lock s;
	int rc = ll_read_lock(op, dn, &s);
	if (rc == LDAP_NO_SUCH_OBJECT) {
		l->sess_state = LL_SESS_GONE;
		seen_note(op->be, l);
		return LDAP_SUCCESS;
	}
	if (rc == LDAP_SUCCESS && s.lease_us > 0) {
		l->sess_last_us = ll_server_last(&s, &l->sess_res_us);
		l->sess_lease_us = s.lease_us;
		if (l->sess_last_us)
			l->sess_state = LL_SESS_LIVE;
		seen_note(op->be, l);
	}
	ll_lock_clear(&s);
	return rc;
}

/* ---- restart ---- */

int ll_session_token(ll_backend *be, GString *out)
{
	g_mutex_lock(&be->sess_mu);
	bool have = be->sess_cn && !be->sess_lost;
	if (have)
		g_string_assign(out, be->sess_cn);
	g_mutex_unlock(&be->sess_mu);
	return have ? 0 : -ENOENT;
}

/* Whether TOKEN is a cn ll_session_cn() makes for this host: "%session%",
 * the host escaped (as cut there), '-', a pid, '-', 16 lowercase hex
 * digits.  It ends up in a DN and a filter: nothing else passes. */
static bool token_ok(ll_backend *be, const char *token)
{
	g_autofree char *h = ll_key_escape(be->cfg.host);
	g_autofree char *prefix =
	        g_strdup_printf("%%session%%%.*s-", (int)ll_cn_prefix_len(h, 28), h);
	if (!token || strlen(token) > LL_CN_MAX || !g_str_has_prefix(token, prefix))
		return false;
	const char *p = token + strlen(prefix);
	size_t n = 0;
	while (g_ascii_isdigit(p[n]))
		n++;
	if (n == 0 || n > 10 || p[0] == '0' || p[n] != '-')
		return false;
	p += n + 1;
	for (int i = 0; i < 16; i++)
		if (!g_ascii_isdigit(p[i]) && !(p[i] >= 'a' && p[i] <= 'f'))
			return false;
	return p[16] == '\0';
}

/* Whether the session entry DN is this host's and still live when a write
 * sent now lands: its last write on the server's clock plus its lease_ms=,
 * the rule others judge it by, with the network timeout to spare.  0 with
 * its started= note in *STARTED, -ESTALE or -EIO. */
static int resume_check(ll_op *op, const char *dn, char **started)
{
	ll_backend *be = op->be;
	ll_lock s;
	int rc = ll_read_lock(op, dn, &s);
	if (rc == LDAP_NO_SUCH_OBJECT)
		return -ESTALE;
	int r = rc == LDAP_SUCCESS ? -ESTALE : -EIO;
	if (rc == LDAP_SUCCESS && s.lease_us > 0 && s.holder.acquired_us &&
	    g_strcmp0(s.holder.host, be->cfg.host) == 0) {
		ll_server_now now = { 0, 0 };
		int64_t res = 0, last = ll_server_last(&s, &res);
		if (ll_clock_measure(op, LL_CLOCK_FRESH_US) == LDAP_SUCCESS)
			ll_server_now_of(be, &s, &now);
		if (!last || !now.hi_us) {
			r = -EIO; /* cannot judge it: nor could others break its locks */
		} else if (now.hi_us - last + be->cfg.timeout_us <= s.lease_us) {
			g_autofree char *t = ll_time_format(s.holder.acquired_us);
			*started = g_strconcat("started=", t, NULL);
			r = 0;
		}
	}
	ll_lock_clear(&s);
	return r;
}

static void orphan_add(ll_lock *l, void *user)
{
	g_autofree char *cn = ll_dn_cn(l->dn);
	if (!cn || !l->fence_value)
		return;
	ll_abandoned *a = g_new0(ll_abandoned, 1);
	a->dn = g_strdup(l->dn);
	a->fence_value = g_strdup(l->fence_value);
	a->rounds = 3;
	g_hash_table_replace(user, g_steal_pointer(&cn), a);
}

/* The lock entries naming session CN (cn → ll_abandoned *), or NULL when
 * they cannot be found: those adopt() does not take back are then left
 * for the session to keep. */
static GHashTable *find_orphans(ll_op *op, const char *cn)
{
	GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, abandoned_free);
	g_autofree char *note = g_strconcat("session=", cn, NULL);
	g_autofree char *filter = ll_filter_eq("description", note);
	if (filter && ll_search_locks(op, filter, orphan_add, t) == LDAP_SUCCESS)
		return t;
	g_autofree char *why = ll_error_text(op);
	lockfs_log(G_LOG_LEVEL_WARNING, NULL,
	           "ldap: cannot search for the locks of the resumed session %s (%s): those "
	           "not taken back stay held while it lives",
	           cn, why);
	g_hash_table_destroy(t);
	return NULL;
}

int ll_session_resume(ll_backend *be, const char *token)
{
	if (!token_ok(be, token))
		return -EINVAL;
	g_autofree char *dn = ll_dn(token, be->cfg.base);
	if (!dn)
		return -EINVAL;
	if (!be->cfg.sessions)
		return -ESTALE; /* sessions = no: each lock is renewed on its own */
	ll_op op;
	if (ll_op_begin(be, &op) != 0)
		return -EIO;
	char *started = NULL;
	int64_t sent = 0;
	int r = resume_check(&op, dn, &started);
	if (r == 0) {
		sent = lockfs_mono_us();
		r = refresh(&op, token, started);
	}
	GHashTable *orphans = r == 0 ? find_orphans(&op, token) : NULL;
	if (r == -EIO) {
		g_autofree char *why = ll_error_text(&op);
		lockfs_log(G_LOG_LEVEL_WARNING, NULL, "ldap: cannot resume the session %s: %s",
		           token, why);
	}
	ll_op_end(&op);
	if (r != 0) {
		g_free(started);
		return r;
	}
	g_mutex_lock(&be->sess_mu);
	g_free(be->sess_cn);
	g_free(be->sess_started);
	be->sess_cn = g_strdup(token);
	be->sess_started = started;
	be->sess_gen++;
	be->sess_lost = false;
	be->sess_ok_sent = sent;
	if (be->sess_orphans)
		g_hash_table_destroy(be->sess_orphans);
	be->sess_orphans = orphans;
	g_mutex_unlock(&be->sess_mu);
	lockfs_log(G_LOG_LEVEL_INFO, NULL, "ldap: resumed the session %s (%u locks on it)", token,
	           orphans ? g_hash_table_size(orphans) : 0);
	return 0;
}

int ll_session_for_adopt(ll_backend *be, uint64_t *gen, char **cn)
{
	g_mutex_lock(&be->sess_mu);
	uint64_t want = be->sess_cn && !be->sess_lost ? be->sess_gen : 0;
	g_mutex_unlock(&be->sess_mu);
	if (!want)
		return -ESTALE; /* not resumed, or lost since */
	return ll_session_fresh(be, lockfs_mono_us(), want, gen, cn);
}

void ll_session_adopted(ll_backend *be, const char *cn)
{
	g_mutex_lock(&be->sess_mu);
	if (be->sess_orphans)
		g_hash_table_remove(be->sess_orphans, cn);
	g_mutex_unlock(&be->sess_mu);
}

void ll_session_settle(ll_backend *be)
{
	g_mutex_lock(&be->sess_mu);
	GHashTable *t = g_steal_pointer(&be->sess_orphans);
	guint n = 0;
	if (t && !be->sess_lost) {
		GHashTableIter it;
		gpointer k, v;
		g_hash_table_iter_init(&it, t);
		while (g_hash_table_iter_next(&it, &k, &v)) {
			g_hash_table_iter_steal(&it);
			g_free(k);
			g_ptr_array_add(be->sess_abandoned, v);
			n++;
		}
	}
	g_mutex_unlock(&be->sess_mu);
	if (n)
		lockfs_log(G_LOG_LEVEL_WARNING, NULL,
		           "ldap: %u locks of the resumed session were not taken back: held for "
		           "nobody, they are deleted",
		           n);
	if (t)
		g_hash_table_destroy(t);
}
