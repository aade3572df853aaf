/* The LDAP backend's plumbing: its configuration, connections (TLS, bind and
 * timeouts), what the server offers, the base entries and the fence counter. */
#include "ldap_int.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <lockfs/backend_support.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GROUP "ldap"
#define IDLE_MAX 8
#define BACKOFF_MIN_US (100 * 1000)
#define BACKOFF_MAX_US (2 * G_USEC_PER_SEC)
#define PAGE_SIZE 500
/* The counter's integer attribute where Modify-Increment is offered: a stock
 * one (RFC 2307, nis.schema) with integerMatch, which compare-and-swap needs,
 * and that nobody constrains to be unique, unlike uidNumber.  Without it in
 * the schema the counter is a description value. */
#define FENCE_INT_ATTR "oncRpcNumber"

#define OID_REFRESH "1.3.6.1.4.1.1466.101.119.1"

G_DEFINE_QUARK(lockfs - ldap - error - quark, ll_error)

/* ---- configuration ---- */

/* An error about KEY of [ldap] in the form of every configuration error. */
#define key_error(error, cfg, key, code, ...) \
	lockfs_config_key_error(cfg, GROUP, key, error, code, __VA_ARGS__)

/* *DN in LDAPv3 form, from a DN that may also separate its parts with ';' (as
 * RFC 1779 allowed): mount options are split at commas.  False if not a DN. */
static bool normalize_dn(char **dn)
{
	LDAPDN parsed = NULL;
	char *out = NULL;
	if (!*dn || !**dn || ldap_str2dn(*dn, &parsed, LDAP_DN_FORMAT_LDAP) != LDAP_SUCCESS ||
	    !parsed)
		return false;
	int rc = ldap_dn2str(parsed, &out, LDAP_DN_FORMAT_LDAPV3 | LDAP_DN_PRETTY);
	ldap_dnfree(parsed);
	if (rc != LDAP_SUCCESS || !out)
		return false;
	g_free(*dn);
	*dn = g_strdup(out);
	ldap_memfree(out);
	return true;
}

static bool get_uri(ll_config *c, const lockfs_config *cfg, GError **error)
{
	if (!lockfs_config_get_string(cfg, GROUP, "uri", NULL, &c->uri, error))
		return false;
	if (!c->uri || !*c->uri) {
		key_error(error, cfg, "uri", LOCKFS_CONFIG_ERROR_VALUE,
		          "not set; write the server, e.g. uri = ldap://ldap.example.com");
		return false;
	}
	if (strpbrk(c->uri, " \t,")) {
		key_error(error, cfg, "uri", LOCKFS_CONFIG_ERROR_VALUE,
		          "'%s' names more than one server; give one: lock writes must go to a "
		          "single provider (see lockfs.conf(5))",
		          c->uri);
		return false;
	}
	LDAPURLDesc *lud = NULL;
	if (ldap_url_parse(c->uri, &lud) != LDAP_URL_SUCCESS) {
		key_error(
		        error, cfg, "uri", LOCKFS_CONFIG_ERROR_VALUE,
		        "'%s' is not an LDAP URI; write ldap://HOST[:PORT], ldaps://HOST[:PORT] or "
		        "ldapi://%%2Fpath%%2Fto%%2Fsocket",
		        c->uri);
		return false;
	}
	bool ok = true;
	if (g_ascii_strcasecmp(lud->lud_scheme, "ldap") == 0)
		c->scheme = LL_URI_LDAP;
	else if (g_ascii_strcasecmp(lud->lud_scheme, "ldaps") == 0)
		c->scheme = LL_URI_LDAPS;
	else if (g_ascii_strcasecmp(lud->lud_scheme, "ldapi") == 0)
		c->scheme = LL_URI_LDAPI;
	else
		ok = false;
	if (!ok)
		key_error(error, cfg, "uri", LOCKFS_CONFIG_ERROR_VALUE,
		          "scheme '%s' is not supported; use ldap://, ldaps:// or ldapi://",
		          lud->lud_scheme);
	ldap_free_urldesc(lud);
	return ok;
}

static bool get_auth(ll_config *c, const lockfs_config *cfg, GError **error)
{
	g_autofree char *pwfile = NULL, *mech = NULL;
	if (!lockfs_config_get_string(cfg, GROUP, "bind_dn", NULL, &c->bind_dn, error) ||
	    !lockfs_config_get_string(cfg, GROUP, "password_file", NULL, &pwfile, error) ||
	    !lockfs_config_get_string(cfg, GROUP, "sasl_mech", NULL, &mech, error))
		return false;
	if (mech) {
		if (g_ascii_strcasecmp(mech, "EXTERNAL") != 0) {
			key_error(error, cfg, "sasl_mech", LOCKFS_CONFIG_ERROR_VALUE,
			          "'%s' is not supported; use EXTERNAL (over ldapi://), or bind_dn "
			          "and password_file",
			          mech);
			return false;
		}
		if (c->scheme != LL_URI_LDAPI) {
			key_error(
			        error, cfg, "sasl_mech", LOCKFS_CONFIG_ERROR_CONFLICT,
			        "EXTERNAL needs an ldapi:// uri (the server knows the local user); "
			        "use bind_dn and password_file over the network");
			return false;
		}
		if (c->bind_dn || pwfile) {
			key_error(error, cfg, "sasl_mech", LOCKFS_CONFIG_ERROR_CONFLICT,
			          "EXTERNAL takes no bind_dn or password_file; remove them");
			return false;
		}
		c->external = true;
		return true;
	}
	if (c->bind_dn && !pwfile) {
		key_error(error, cfg, "bind_dn", LOCKFS_CONFIG_ERROR_CONFLICT,
		          "set without password_file; add password_file = FILE (mode 600)");
		return false;
	}
	if (pwfile && !c->bind_dn) {
		key_error(error, cfg, "password_file", LOCKFS_CONFIG_ERROR_CONFLICT,
		          "set without bind_dn; add the DN to bind as");
		return false;
	}
	if (c->bind_dn) {
		/* A DN, or a name the server maps (AD: user@example.com). */
		if (strchr(c->bind_dn, '=') && !normalize_dn(&c->bind_dn)) {
			key_error(error, cfg, "bind_dn", LOCKFS_CONFIG_ERROR_VALUE,
			          "'%s' is not a DN; write e.g. "
			          "cn=lockfs,ou=services,dc=example,dc=com",
			          c->bind_dn);
			return false;
		}
		c->password = lockfs_secret_read(cfg, GROUP, "password_file", pwfile, error);
		if (!c->password)
			return false;
	}
	return true;
}

static bool get_tls(ll_config *c, const lockfs_config *cfg, GError **error)
{
	if (!lockfs_config_get_bool(cfg, GROUP, "starttls", c->scheme == LL_URI_LDAP, &c->starttls,
	                            error) ||
	    !lockfs_config_get_bool(cfg, GROUP, "verify", true, &c->verify, error) ||
	    !lockfs_config_get_string(cfg, GROUP, "ca_file", NULL, &c->ca_file, error))
		return false;
	if (c->starttls && c->scheme != LL_URI_LDAP) {
		key_error(error, cfg, "starttls", LOCKFS_CONFIG_ERROR_CONFLICT,
		          "applies to ldap:// only (%s); remove it",
		          c->scheme == LL_URI_LDAPS ? "ldaps:// is TLS from the start"
		                                    : "ldapi:// is a local socket");
		return false;
	}
	if (c->ca_file && g_access(c->ca_file, R_OK) != 0) {
		key_error(error, cfg, "ca_file", LOCKFS_CONFIG_ERROR_IO, "cannot read %s: %s",
		          c->ca_file, g_strerror(errno));
		return false;
	}
	return true;
}

bool ll_config_load(ll_config *c, const lockfs_config *cfg, GError **error)
{
	const lockfs_settings *s = lockfs_config_settings(cfg);
	memset(c, 0, sizeof(*c));
	c->timeout_us = s->network_timeout_ms * 1000;
	c->ttl_us = s->ttl_ms * 1000;
	c->stale_after_us = s->stale_after_ms * 1000;
	c->renew_us = (s->renew_ms ? s->renew_ms : s->ttl_ms / 3) * 1000;
	c->host = g_strdup(s->host ? s->host : lockfs_holder_host());
	if (!get_uri(c, cfg, error) || !get_auth(c, cfg, error) || !get_tls(c, cfg, error))
		return false;

	if (!lockfs_config_get_string(cfg, GROUP, "base", NULL, &c->base, error))
		return false;
	if (!normalize_dn(&c->base)) {
		key_error(error, cfg, "base", LOCKFS_CONFIG_ERROR_VALUE,
		          c->base && *c->base
		                  ? "'%s' is not a DN; write e.g. ou=locks,dc=example,dc=com"
		                  : "not set%s; write the entry locks live under, e.g. "
		                    "base = ou=locks,dc=example,dc=com",
		          c->base && *c->base ? c->base : "");
		return false;
	}

	int64_t bound_ms = 0;
	if (!lockfs_config_get_duration(cfg, GROUP, "max_clock_offset", LL_CLOCK_BOUND_DEFAULT_MS,
	                                &bound_ms, error))
		return false;
	if (bound_ms <= 0) {
		key_error(error, cfg, "max_clock_offset", LOCKFS_CONFIG_ERROR_VALUE,
		          "must be more than 0; the default is 5m");
		return false;
	}
	c->clock_bound_us = bound_ms * 1000;

	if (!lockfs_config_get_bool(cfg, GROUP, "sessions", true, &c->sessions, error))
		return false;

	g_autofree char *dyn = NULL;
	if (!lockfs_config_get_string(cfg, GROUP, "dynamic", "auto", &dyn, error))
		return false;
	if (g_ascii_strcasecmp(dyn, "auto") == 0) {
		c->dynamic = -1;
	} else if (g_ascii_strcasecmp(dyn, "yes") == 0 || g_ascii_strcasecmp(dyn, "true") == 0) {
		c->dynamic = 1;
	} else if (g_ascii_strcasecmp(dyn, "no") == 0 || g_ascii_strcasecmp(dyn, "false") == 0) {
		c->dynamic = 0;
	} else {
		key_error(error, cfg, "dynamic", LOCKFS_CONFIG_ERROR_VALUE,
		          "'%s' is not auto, yes or no", dyn);
		return false;
	}
	return true;
}

void ll_config_clear(ll_config *c)
{
	g_free(c->uri);
	g_free(c->bind_dn);
	if (c->password)
		memset(c->password, 0, strlen(c->password));
	g_free(c->password);
	g_free(c->ca_file);
	g_free(c->base);
	g_free(c->host);
	memset(c, 0, sizeof(*c));
}

/* ---- connections ---- */

int ll_ttl_seconds(ll_backend *be)
{
	return (int)((be->cfg.ttl_us + G_USEC_PER_SEC - 1) / G_USEC_PER_SEC) + 1;
}

int64_t ll_now_us(ll_backend *be)
{
	return lockfs_now_us() + LL_CLOCK_OFFSET_US(be);
}

static struct timeval tv_of(int64_t us)
{
	if (us < 1000)
		us = 1000;
	return (struct timeval){ .tv_sec = us / G_USEC_PER_SEC, .tv_usec = us % G_USEC_PER_SEC };
}

/* Bound what LD does next by the time left until DEADLINE; false when none is. */
static bool set_deadline(LDAP *ld, int64_t deadline)
{
	int64_t left = deadline - lockfs_mono_us();
	if (left <= 0)
		return false;
	struct timeval tv = tv_of(left);
	ldap_set_option(ld, LDAP_OPT_TIMEOUT, &tv);
	ldap_set_option(ld, LDAP_OPT_NETWORK_TIMEOUT, &tv);
	return true;
}

static char *diag_of(LDAP *ld)
{
	char *msg = NULL;
	ldap_get_option(ld, LDAP_OPT_DIAGNOSTIC_MESSAGE, &msg);
	char *copy = msg && *msg ? g_strdup(msg) : NULL;
	ldap_memfree(msg);
	return copy;
}

static char *failure(LDAP *ld, const char *step, int rc, const char *hint)
{
	if (rc == LDAP_TIMEOUT)
		hint = "no answer within network_timeout";
	g_autofree char *diag = ld ? diag_of(ld) : NULL;
	return g_strdup_printf("%s failed: %s (%d)%s%s%s%s", step, ldap_err2string(rc), rc,
	                       diag ? ": " : "", diag ? diag : "", hint ? "; " : "",
	                       hint ? hint : "");
}

/* Connect, StartTLS and bind, all within DEADLINE together. */
static LDAP *conn_open(ll_backend *be, int64_t deadline, char **why)
{
	const ll_config *c = &be->cfg;
	LDAP *ld = NULL;
	int rc = ldap_initialize(&ld, c->uri);
	if (rc != LDAP_SUCCESS) {
		*why = failure(NULL, "ldap_initialize", rc, NULL);
		return NULL;
	}
	int v3 = LDAP_VERSION3;
	ldap_set_option(ld, LDAP_OPT_PROTOCOL_VERSION, &v3);
	ldap_set_option(ld, LDAP_OPT_REFERRALS, LDAP_OPT_OFF);
	if (c->scheme == LL_URI_LDAPS || c->starttls) {
		int req = c->verify ? LDAP_OPT_X_TLS_DEMAND : LDAP_OPT_X_TLS_NEVER;
		ldap_set_option(ld, LDAP_OPT_X_TLS_REQUIRE_CERT, &req);
		if (c->ca_file)
			ldap_set_option(ld, LDAP_OPT_X_TLS_CACERTFILE, c->ca_file);
		int server = 0;
		ldap_set_option(ld, LDAP_OPT_X_TLS_NEWCTX, &server);
	}
	const char *tls_hint = "check ca_file and the server's certificate (its name must match "
	                       "the uri)";
	if (!set_deadline(ld, deadline)) {
		rc = LDAP_TIMEOUT;
		*why = failure(ld, "connect", rc, "raise network_timeout");
		goto fail;
	}
	rc = ldap_connect(ld);
	if (rc != LDAP_SUCCESS) {
		*why = failure(ld, "connect", rc, c->scheme == LL_URI_LDAPS ? tls_hint : NULL);
		goto fail;
	}
	if (c->starttls) {
		if (!set_deadline(ld, deadline)) {
			*why = failure(ld, "StartTLS", LDAP_TIMEOUT, "raise network_timeout");
			goto fail;
		}
		rc = ldap_start_tls_s(ld, NULL, NULL);
		if (rc != LDAP_SUCCESS) {
			*why = failure(ld, "StartTLS", rc, tls_hint);
			goto fail;
		}
	}
	if (c->external || c->bind_dn) {
		if (!set_deadline(ld, deadline)) {
			*why = failure(ld, "bind", LDAP_TIMEOUT, "raise network_timeout");
			goto fail;
		}
		if (c->external) {
			/* An empty initial response: without one the server asks for it
			 * (bind in progress) and a single call is not enough. */
			struct berval none = { .bv_len = 0, .bv_val = "" };
			rc = ldap_sasl_bind_s(ld, NULL, "EXTERNAL", &none, NULL, NULL, NULL);
		} else {
			struct berval cred = { .bv_len = strlen(c->password),
				               .bv_val = c->password };
			rc = ldap_sasl_bind_s(ld, c->bind_dn, LDAP_SASL_SIMPLE, &cred, NULL, NULL,
			                      NULL);
		}
		if (rc != LDAP_SUCCESS) {
			g_autofree char *step = c->external
			                                ? g_strdup("SASL EXTERNAL bind")
			                                : g_strdup_printf("bind as %s", c->bind_dn);
			*why = failure(ld, step, rc,
			               rc == LDAP_INVALID_CREDENTIALS
			                       ? "check bind_dn and password_file"
			                       : NULL);
			goto fail;
		}
	}
	return ld;
fail:
	ldap_unbind_ext(ld, NULL, NULL);
	return NULL;
}

/* An idle connection the server closed (restart, idle timeout, notice of
 * disconnection) is readable: drop it rather than fail the next call on it. */
static bool conn_alive(LDAP *ld)
{
	int fd = -1;
	if (ldap_get_option(ld, LDAP_OPT_DESC, &fd) != LDAP_OPT_SUCCESS || fd < 0)
		return false;
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
	return poll(&p, 1, 0) == 0;
}

/* libldap writes to sockets with write(2): a server gone away would kill the
 * process with SIGPIPE.  Block it on this thread for the call and consume
 * what the call raised, so the process's own handling is left alone. */
static void sigpipe_block(ll_op *op)
{
	sigset_t set, pending;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &op->old_mask);
	sigpending(&pending);
	op->pipe_pending = sigismember(&pending, SIGPIPE);
}

static void sigpipe_restore(ll_op *op)
{
	sigset_t set, pending;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigpending(&pending);
	if (!op->pipe_pending && sigismember(&pending, SIGPIPE)) {
		struct timespec zero = { 0, 0 };
		sigtimedwait(&set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &op->old_mask, NULL);
}

int ll_op_begin(ll_backend *be, ll_op *op)
{
	memset(op, 0, sizeof(*op));
	op->be = be;
	sigpipe_block(op);
	int64_t now = lockfs_mono_us();
	op->deadline_mono_us = now + be->cfg.timeout_us;
	g_mutex_lock(&be->pool_mu);
	while (be->idle->len && !op->ld) {
		LDAP *ld = g_ptr_array_steal_index(be->idle, be->idle->len - 1);
		if (conn_alive(ld))
			op->ld = ld;
		else
			ldap_unbind_ext(ld, NULL, NULL);
	}
	bool waiting = now < be->retry_mono_us;
	g_mutex_unlock(&be->pool_mu);
	if (op->ld)
		return 0;
	if (waiting) { /* backing off after a failed connect: fail fast */
		sigpipe_restore(op);
		return -EIO;
	}

	char *why = NULL;
	LDAP *ld = conn_open(be, op->deadline_mono_us, &why);
	g_mutex_lock(&be->pool_mu);
	if (!ld) {
		be->backoff_us = CLAMP(be->backoff_us * 2, BACKOFF_MIN_US, BACKOFF_MAX_US);
		be->retry_mono_us = lockfs_mono_us() + be->backoff_us;
		/* At mount the error is the mount's one line; later, log each new one. */
		if (be->set_up && (!be->last_error || strcmp(be->last_error, why) != 0))
			lockfs_log(G_LOG_LEVEL_WARNING, NULL,
			           "ldap: cannot use %s: %s; locks answer EIO until it is back",
			           be->cfg.uri, why);
		g_free(be->last_error);
		be->last_error = why;
		g_mutex_unlock(&be->pool_mu);
		sigpipe_restore(op);
		return -EIO;
	}
	if (be->last_error)
		lockfs_log(G_LOG_LEVEL_INFO, NULL, "ldap: %s is reachable again", be->cfg.uri);
	g_clear_pointer(&be->last_error, g_free);
	be->backoff_us = 0;
	be->retry_mono_us = 0;
	g_mutex_unlock(&be->pool_mu);
	op->ld = ld;
	return 0;
}

void ll_op_end(ll_op *op)
{
	ll_backend *be = op->be;
	if (op->ld) {
		bool keep = !op->broken;
		g_mutex_lock(&be->pool_mu);
		if (keep && be->idle->len < IDLE_MAX)
			g_ptr_array_add(be->idle, op->ld);
		else
			keep = false;
		g_mutex_unlock(&be->pool_mu);
		if (!keep)
			ldap_unbind_ext(op->ld, NULL, NULL);
		op->ld = NULL;
	}
	g_clear_pointer(&op->diag, g_free);
	sigpipe_restore(op);
}

void ll_unbind_all(GPtrArray *conns)
{
	ll_op op = { 0 };
	sigpipe_block(&op);
	for (guint i = 0; i < conns->len; i++)
		ldap_unbind_ext(conns->pdata[i], NULL, NULL);
	g_ptr_array_set_size(conns, 0);
	sigpipe_restore(&op);
}

/* Before an operation: the time left, or LDAP_TIMEOUT. */
static bool op_start(ll_op *op)
{
	if (!op->ld || !set_deadline(op->ld, op->deadline_mono_us)) {
		op->rc = LDAP_TIMEOUT;
		return false;
	}
	return true;
}

/* After an operation: remember its result; a client-side failure (server
 * down, timed out with the answer still owed) makes the connection unusable. */
static int op_done(ll_op *op, int rc)
{
	op->rc = rc;
	g_clear_pointer(&op->diag, g_free);
	if (rc < 0)
		op->broken = true;
	if (rc != LDAP_SUCCESS && rc != LDAP_COMPARE_TRUE && rc != LDAP_COMPARE_FALSE)
		op->diag = diag_of(op->ld);
	return rc;
}

char *ll_error_text(const ll_op *op)
{
	return g_strdup_printf("%s (%d)%s%s", ldap_err2string(op->rc), op->rc, op->diag ? ": " : "",
	                       op->diag ? op->diag : "");
}

int ll_errno(int rc)
{
	switch (rc) {
	case LDAP_SUCCESS:
		return 0;
	case LDAP_ALREADY_EXISTS:
		return -EEXIST;
	case LDAP_NO_SUCH_OBJECT:
		return -ENOENT;
	case LDAP_INVALID_DN_SYNTAX:
	case LDAP_NAMING_VIOLATION:
	case LDAP_CONSTRAINT_VIOLATION:
	case LDAP_INVALID_SYNTAX:
		return -EINVAL;
	default:
		return -EIO;
	}
}

static char **strv_of(GPtrArray *a)
{
	char **v = g_new0(char *, a->len + 1);
	for (guint i = 0; i < a->len; i++)
		v[i] = a->pdata[i];
	return v;
}

/* An assertion control for FILTER (NULL: none), as a NULL-terminated list. */
static bool assert_ctrls(ll_op *op, const char *filter, LDAPControl **ctrls)
{
	ctrls[0] = ctrls[1] = NULL;
	if (!filter)
		return true;
	int rc = ldap_create_assertion_control(op->ld, (char *)filter, 1, &ctrls[0]);
	if (rc != LDAP_SUCCESS) {
		op_done(op, rc);
		return false;
	}
	return true;
}

/* ---- the server's clock ---- */

/* What the server stamps a write with: entryCSN (OpenLDAP, microseconds) and
 * the timestamps (whole seconds). */
static char *stamp_attrs[] = { "entryCSN", "modifyTimestamp", "createTimestamp", NULL };

/* A post-read control (RFC 4527) asking for the stamps of the entry written,
 * not critical: a server that does not know it writes all the same. */
static void stamp_ctrl(ll_op *op, LDAPControl **ctrls)
{
	ctrls[0] = ctrls[1] = NULL;
	if (!(op->be->caps & LL_CAP_POSTREAD))
		return;
	BerElement *ber = ber_alloc_t(LBER_USE_DER);
	struct berval val = { 0 };
	if (ber && ber_printf(ber, "{v}", stamp_attrs) >= 0 && ber_flatten2(ber, &val, 0) >= 0)
		ldap_control_create(LDAP_CONTROL_POST_READ, 0, &val, 1, &ctrls[0]);
	if (ber)
		ber_free(ber, 1);
}

struct stamps {
	int64_t csn_us, modify_us, create_us;
};

static void stamp_value(struct stamps *st, const struct berval *type, const struct berval *v)
{
	if (!v->bv_val || v->bv_len >= 64 || memchr(v->bv_val, '\0', v->bv_len))
		return;
	g_autofree char *s = g_strndup(v->bv_val, v->bv_len);
	int64_t us = 0;
#define TYPE_IS(name) \
	(type->bv_len == strlen(name) && g_ascii_strncasecmp(type->bv_val, name, type->bv_len) == 0)
	if (TYPE_IS("entryCSN") && ll_csn_parse(s, &us))
		st->csn_us = us;
	else if (TYPE_IS("modifyTimestamp") && ll_gentime_parse(s, &us))
		st->modify_us = us;
	else if (TYPE_IS("createTimestamp") && ll_gentime_parse(s, &us))
		st->create_us = us;
#undef TYPE_IS
}

/* The stamps in a post-read control's entry. */
static void parse_stamps(LDAPControl *c, struct stamps *st)
{
	BerElement *b = ber_init(&c->ldctl_value);
	struct berval bv;
	if (b && ber_scanf(b, "{m{" /*}}*/, &bv) != LBER_ERROR) {
		struct berval type;
		while (ber_scanf(b, "{m" /*}*/, &type) != LBER_ERROR) {
			BerVarray vals = NULL;
			if (ber_scanf(b, "[W]", &vals) == LBER_ERROR)
				break;
			for (int i = 0; vals && vals[i].bv_val; i++)
				stamp_value(st, &type, &vals[i]);
			ber_bvarray_free(vals);
		}
	}
	if (b)
		ber_free(b, 1);
}

/* A reading of the server's clock from the stamps of a write sent and
 * answered at these times; false when the stamps tell no time. */
static bool sample_of(const struct stamps *st, int64_t sent_mono, int64_t recv_mono,
                      int64_t sent_wall, int64_t recv_wall, ll_clock_sample *out)
{
	ll_lock l = { .csn_us = st->csn_us,
		      .modify_us = st->modify_us,
		      .create_us = st->create_us };
	int64_t res = 0, srv = ll_server_last(&l, &res);
	if (!srv)
		return false;
	*out = (ll_clock_sample){ .srv_us = srv,
		                  .res_us = res,
		                  .sent_mono_us = sent_mono,
		                  .recv_mono_us = recv_mono,
		                  .sent_wall_us = sent_wall,
		                  .recv_wall_us = recv_wall };
	return true;
}

/* The result of write MSGID, sent at these times: its code, and the server's
 * time from the post-read control, kept as a reading of its clock. */
static int stamped_result(ll_op *op, int msgid, int64_t sent_mono, int64_t sent_wall)
{
	LDAPMessage *res = NULL;
	struct timeval tv = tv_of(op->deadline_mono_us - lockfs_mono_us());
	int got = ldap_result(op->ld, msgid, LDAP_MSG_ALL, &tv, &res);
	if (got <= 0) {
		int err = LDAP_TIMEOUT;
		if (got < 0)
			ldap_get_option(op->ld, LDAP_OPT_RESULT_CODE, &err);
		ldap_msgfree(res);
		return op_done(op, err == LDAP_SUCCESS || err > 0 ? LDAP_SERVER_DOWN : err);
	}
	int64_t recv_mono = lockfs_mono_us(), recv_wall = ll_now_us(op->be);
	int err = LDAP_OTHER;
	LDAPControl **rctrls = NULL;
	int rc = ldap_parse_result(op->ld, res, &err, NULL, NULL, NULL, &rctrls, 1);
	if (rc != LDAP_SUCCESS)
		return op_done(op, rc);
	LDAPControl *c = err == LDAP_SUCCESS
	                         ? ldap_control_find(LDAP_CONTROL_POST_READ, rctrls, NULL)
	                         : NULL;
	if (c) {
		struct stamps st = { 0 };
		ll_clock_sample s;
		parse_stamps(c, &st);
		if (sample_of(&st, sent_mono, recv_mono, sent_wall, recv_wall, &s))
			ll_clock_note(op->be, &s);
	}
	ldap_controls_free(rctrls);
	return op_done(op, err);
}

void ll_clock_note(ll_backend *be, const ll_clock_sample *s)
{
	g_mutex_lock(&be->clock_mu);
	/* Calls overlap: keep the one answered last. */
	if (s->recv_mono_us >= be->clock.recv_mono_us)
		be->clock = *s;
	g_mutex_unlock(&be->clock_mu);
}

static bool clock_get(ll_backend *be, ll_clock_sample *s)
{
	g_mutex_lock(&be->clock_mu);
	*s = be->clock;
	g_mutex_unlock(&be->clock_mu);
	return s->recv_mono_us != 0;
}

void ll_server_now_of(ll_backend *be, const ll_lock *l, ll_server_now *out)
{
	int64_t m = lockfs_mono_us();
	ll_clock_sample s;
	ll_server_now a = { 0, 0 }, b = { 0, 0 };
	/* The server stamped our write between our sending it and its answer. */
	if (clock_get(be, &s)) {
		a.lo_us = s.srv_us + (m - s.recv_mono_us);
		a.hi_us = s.srv_us + s.res_us + (m - s.sent_mono_us);
	}
	/* A dynamic entry's entryTtl is its expiry less the server's now, both in
	 * whole seconds (rounded either way: a second more on each side). */
	if (l && l->ttl_s >= 0 && l->expire_us && l->read_recv_mono_us) {
		int64_t at = l->expire_us - l->ttl_s * G_USEC_PER_SEC;
		b.lo_us = at - G_USEC_PER_SEC + (m - l->read_recv_mono_us);
		b.hi_us = at + G_USEC_PER_SEC + (m - l->read_sent_mono_us);
	}
	if (a.hi_us && b.hi_us) {
		/* Both hold unless one is wrong: where they do not meet, neither
		 * is believed. */
		out->lo_us = MAX(a.lo_us, b.lo_us);
		out->hi_us = MIN(a.hi_us, b.hi_us);
		if (out->lo_us > out->hi_us)
			out->lo_us = out->hi_us = 0;
	} else {
		*out = a.hi_us ? a : b;
	}
}

bool ll_clock_offset(ll_backend *be, int64_t *offset_us, int64_t *unc_us, int64_t *age_us)
{
	ll_clock_sample s;
	if (!clock_get(be, &s))
		return false;
	/* The server's now by the reading carried forward on our monotonic
	 * clock (a step of our wall clock since then shows at once). */
	int64_t m = lockfs_mono_us(), wall = ll_now_us(be);
	int64_t lo = s.srv_us + (m - s.recv_mono_us),
	        hi = s.srv_us + s.res_us + (m - s.sent_mono_us);
	*offset_us = lo + (hi - lo) / 2 - wall;
	*unc_us = (hi - lo + 1) / 2;
	*age_us = m - s.recv_mono_us;
	return true;
}

char *ll_duration_text(int64_t us)
{
	int64_t a = us < 0 ? -us : us;
	if (a < 60 * G_USEC_PER_SEC)
		return g_strdup_printf("%.3f s", a / 1e6);
	int64_t s = (a + G_USEC_PER_SEC / 2) / G_USEC_PER_SEC;
	if (s < 3600)
		return g_strdup_printf("%" G_GINT64_FORMAT "m%02" G_GINT64_FORMAT "s", s / 60,
		                       s % 60);
	return g_strdup_printf("%" G_GINT64_FORMAT "h%02" G_GINT64_FORMAT "m", s / 3600,
	                       s / 60 % 60);
}

char *ll_offset_text(int64_t offset_us, int64_t unc_us)
{
	g_autofree char *d = ll_duration_text(offset_us);
	g_autofree char *u = ll_duration_text(unc_us);
	/* OFFSET is the server's clock less ours: positive, ours is behind. */
	return g_strdup_printf("%s %s the server's (+/- %s)", d,
	                       offset_us > 0 ? "behind" : "ahead of", u);
}

bool ll_clock_beyond(ll_backend *be, int64_t offset_us, int64_t unc_us)
{
	(void)unc_us; /* the estimate decides; its uncertainty is a round trip */
	return (offset_us < 0 ? -offset_us : offset_us) > be->cfg.clock_bound_us;
}

/* Add a probe entry and read its stamps: from the post-read control, or where
 * the server has none, by reading the entry back (a wider reading). */
int ll_clock_measure(ll_op *op, int64_t max_age_us)
{
	ll_backend *be = op->be;
	ll_clock_sample s;
	if (clock_get(be, &s) && lockfs_mono_us() - s.recv_mono_us <= max_age_us)
		return LDAP_SUCCESS;
	g_autofree char *cn = ll_probe_cn(be->cfg.host);
	g_autofree char *dn = ll_dn(cn, be->cfg.base);
	/* Dynamic where it can be: a probe left by a crash goes by itself. */
	const char *plain[] = { "top", "organizationalRole", NULL };
	const char *dynamic[] = { "top", "organizationalRole", "dynamicObject", NULL };
	const char *const *classes = (be->caps & LL_CAP_DDS) ? dynamic : plain;
	g_autoptr(GPtrArray) desc = g_ptr_array_new();
	g_ptr_array_add(desc, "lockfs: probe for the server's clock");
	int64_t sent_mono = lockfs_mono_us(), sent_wall = ll_now_us(be);
	int64_t before = s.recv_mono_us;
	int rc = ll_add(op, dn, classes, "cn", cn, desc);
	if (rc != LDAP_SUCCESS)
		return rc;
	if (!clock_get(be, &s) || s.recv_mono_us == before) {
		struct stamps st = { 0 };
		LDAPMessage *res = NULL;
		if (op_start(op)) {
			struct timeval tv = tv_of(op->deadline_mono_us - lockfs_mono_us());
			rc = op_done(op, ldap_search_ext_s(op->ld, dn, LDAP_SCOPE_BASE,
			                                   "(objectClass=*)", stamp_attrs, 0, NULL,
			                                   NULL, &tv, 1, &res));
			LDAPMessage *e = rc == LDAP_SUCCESS ? ldap_first_entry(op->ld, res) : NULL;
			for (char **a = stamp_attrs; e && *a; a++) {
				struct berval **v = ldap_get_values_len(op->ld, e, *a);
				struct berval type = { .bv_len = strlen(*a), .bv_val = *a };
				if (v && v[0])
					stamp_value(&st, &type, v[0]);
				ldap_value_free_len(v);
			}
			ldap_msgfree(res);
		}
		if (sample_of(&st, sent_mono, lockfs_mono_us(), sent_wall, ll_now_us(be), &s))
			ll_clock_note(be, &s);
		else if (rc == LDAP_SUCCESS)
			rc = op->rc = LDAP_NO_SUCH_ATTRIBUTE;
	}
	int drc = ll_delete(op, dn, NULL);
	if (drc != LDAP_SUCCESS)
		lockfs_log(
		        G_LOG_LEVEL_WARNING, NULL,
		        "ldap: cannot delete the clock probe %s (%s); it is not a lock, delete it "
		        "by hand",
		        dn, ldap_err2string(drc));
	return rc;
}

int ll_add(ll_op *op, const char *dn, const char *const *classes, const char *rdn_attr,
           const char *rdn_value, GPtrArray *desc)
{
	if (!op_start(op))
		return op->rc;
	char *rdnv[] = { (char *)rdn_value, NULL };
	g_autofree char **descv = desc ? strv_of(desc) : NULL;
	LDAPMod oc = { .mod_op = LDAP_MOD_ADD,
		       .mod_type = "objectClass",
		       .mod_values = (char **)classes };
	LDAPMod rdn = { .mod_op = LDAP_MOD_ADD, .mod_type = (char *)rdn_attr, .mod_values = rdnv };
	LDAPMod d = { .mod_op = LDAP_MOD_ADD, .mod_type = "description", .mod_values = descv };
	LDAPMod *mods[] = { &oc, &rdn, desc && desc->len ? &d : NULL, NULL };
	LDAPControl *ctrls[2] = { NULL, NULL };
	stamp_ctrl(op, ctrls);
	int64_t sent_mono = lockfs_mono_us(), sent_wall = ll_now_us(op->be);
	int msgid = 0;
	int rc = ldap_add_ext(op->ld, dn, mods, ctrls, NULL, &msgid);
	if (ctrls[0])
		ldap_control_free(ctrls[0]);
	if (rc != LDAP_SUCCESS)
		return op_done(op, rc);
	return stamped_result(op, msgid, sent_mono, sent_wall);
}

int ll_delete(ll_op *op, const char *dn, const char *assert_filter)
{
	LDAPControl *ctrls[2];
	if (!op_start(op) || !assert_ctrls(op, assert_filter, ctrls))
		return op->rc;
	int rc = ldap_delete_ext_s(op->ld, dn, ctrls, NULL);
	if (ctrls[0])
		ldap_control_free(ctrls[0]);
	return op_done(op, rc);
}

int ll_delete_if_note(ll_op *op, const char *dn, const char *note)
{
	if (op->be->caps & LL_CAP_ASSERT) {
		g_autofree char *filter = ll_filter_eq("description", note);
		return ll_delete(op, dn, filter);
	}
	/* Without assertions: compare, then delete.  Only a break of the entry
	 * and a new grant within that one round trip could make the delete hit
	 * the next holder's. */
	int rc = ll_compare(op, dn, "description", note);
	if (rc == LDAP_COMPARE_TRUE)
		return ll_delete(op, dn, NULL);
	return rc == LDAP_COMPARE_FALSE ? (op->rc = LDAP_ASSERTION_FAILED) : rc;
}

int ll_rename(ll_op *op, const char *dn, const char *new_cn, const char *assert_filter)
{
	LDAPAVA ava = {
		.la_attr = { .bv_len = 2, .bv_val = "cn" },
		.la_value = { .bv_len = strlen(new_cn), .bv_val = (char *)new_cn },
		.la_flags = LDAP_AVA_STRING,
	};
	LDAPAVA *rdnv[] = { &ava, NULL };
	char *rdn = NULL;
	LDAPControl *ctrls[2];
	int rc = ldap_rdn2str(rdnv, &rdn, LDAP_DN_FORMAT_LDAPV3 | LDAP_DN_PRETTY);
	if (rc != LDAP_SUCCESS) {
		op->rc = rc;
		return rc;
	}
	if (!op_start(op) || !assert_ctrls(op, assert_filter, ctrls)) {
		ldap_memfree(rdn);
		return op->rc;
	}
	rc = ldap_rename_s(op->ld, dn, rdn, NULL, 1, ctrls, NULL);
	ldap_memfree(rdn);
	if (ctrls[0])
		ldap_control_free(ctrls[0]);
	return op_done(op, rc);
}

int ll_compare(ll_op *op, const char *dn, const char *attr, const char *value)
{
	if (!op_start(op))
		return op->rc;
	struct berval bv = { .bv_len = strlen(value), .bv_val = (char *)value };
	return op_done(op, ldap_compare_ext_s(op->ld, dn, attr, &bv, NULL, NULL));
}

int ll_refresh(ll_op *op, const char *dn, int ttl_s, int *granted_s)
{
	if (!op_start(op))
		return op->rc;
	struct berval bv = { .bv_len = strlen(dn), .bv_val = (char *)dn };
	ber_int_t got = 0;
	int rc = op_done(op, ldap_refresh_s(op->ld, &bv, ttl_s, &got, NULL, NULL));
	if (granted_s)
		*granted_s = got;
	return rc;
}

int ll_refresh_to(ll_op *op, const char *dn, int ttl_s, const char *what)
{
	ll_backend *be = op->be;
	int granted = 0;
	int rc = ll_refresh(op, dn, ttl_s, &granted);
	if (rc == LDAP_SUCCESS && granted && granted < ttl_s &&
	    !g_atomic_int_exchange(&be->short_grant_logged, 1))
		lockfs_log(G_LOG_LEVEL_WARNING, NULL,
		           "ldap: the server grants %s %d s only, less than the %d s asked: their "
		           "locks may run out early; lower ttl or raise the server's maximum "
		           "(OpenLDAP: dds-max-ttl)",
		           what, granted, ttl_s);
	return rc;
}

bool ll_log_due(ll_backend *be, int64_t *last)
{
	int64_t now = lockfs_mono_us();
	g_mutex_lock(&be->log_mu);
	bool due = !*last || now - *last >= LL_LOG_EVERY_US;
	if (due)
		*last = now;
	g_mutex_unlock(&be->log_mu);
	return due;
}

int ll_replace_notes(ll_op *op, const char *dn, const char *guard, GPtrArray *desc)
{
	if (!op_start(op))
		return op->rc;
	char *guardv[] = { (char *)guard, NULL };
	g_autofree char **descv = strv_of(desc);
	LDAPMod del = { .mod_op = LDAP_MOD_DELETE,
		        .mod_type = "description",
		        .mod_values = guardv };
	LDAPMod rep = { .mod_op = LDAP_MOD_REPLACE,
		        .mod_type = "description",
		        .mod_values = descv };
	LDAPMod *mods[] = { &del, &rep, NULL };
	LDAPControl *ctrls[2] = { NULL, NULL };
	stamp_ctrl(op, ctrls);
	int64_t sent_mono = lockfs_mono_us(), sent_wall = ll_now_us(op->be);
	int msgid = 0;
	int rc = ldap_modify_ext(op->ld, dn, mods, ctrls, NULL, &msgid);
	if (ctrls[0])
		ldap_control_free(ctrls[0]);
	if (rc != LDAP_SUCCESS)
		return op_done(op, rc);
	return stamped_result(op, msgid, sent_mono, sent_wall);
}

int ll_swap_value(ll_op *op, const char *dn, const char *attr, const char *old_value,
                  const char *new_value)
{
	if (!op_start(op))
		return op->rc;
	char *oldv[] = { (char *)old_value, NULL }, *newv[] = { (char *)new_value, NULL };
	LDAPMod del = { .mod_op = LDAP_MOD_DELETE, .mod_type = (char *)attr, .mod_values = oldv };
	LDAPMod add = { .mod_op = LDAP_MOD_ADD, .mod_type = (char *)attr, .mod_values = newv };
	LDAPMod *mods[] = { &del, &add, NULL };
	return op_done(op, ldap_modify_ext_s(op->ld, dn, mods, NULL, NULL));
}

char *ll_filter_eq(const char *attr, const char *value)
{
	struct berval in = { .bv_len = strlen(value), .bv_val = (char *)value }, out = { 0 };
	if (ldap_bv2escaped_filter_value(&in, &out) != 0)
		return NULL;
	char *f = g_strdup_printf("(%s=%s)", attr, out.bv_val);
	ber_memfree(out.bv_val);
	return f;
}

/* ---- reading entries ---- */

static char *lock_attrs[] = { "description",
	                      "createTimestamp",
	                      "modifyTimestamp",
	                      "entryExpireTimestamp",
	                      "entryTtl",
	                      "entryCSN",
	                      NULL };

/* The values of ATTR as strings (values holding NUL are left out). */
static GPtrArray *values_of(LDAP *ld, LDAPMessage *e, const char *attr)
{
	GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
	struct berval **v = ldap_get_values_len(ld, e, attr);
	for (int i = 0; v && v[i]; i++)
		if (!memchr(v[i]->bv_val, '\0', v[i]->bv_len))
			g_ptr_array_add(out, g_strndup(v[i]->bv_val, v[i]->bv_len));
	ldap_value_free_len(v);
	return out;
}

static int64_t time_of(LDAP *ld, LDAPMessage *e, const char *attr)
{
	g_autoptr(GPtrArray) v = values_of(ld, e, attr);
	int64_t us = 0;
	if (v->len && !ll_gentime_parse(v->pdata[0], &us))
		us = 0;
	return us;
}

static void entry_to_lock(LDAP *ld, LDAPMessage *e, ll_lock *l)
{
	memset(l, 0, sizeof(*l));
	char *dn = ldap_get_dn(ld, e);
	l->dn = g_strdup(dn ? dn : "");
	ldap_memfree(dn);
	g_autoptr(GPtrArray) desc = values_of(ld, e, "description");
	ll_notes_parse(l, (char **)desc->pdata, desc->len);
	l->create_us = time_of(ld, e, "createTimestamp");
	l->modify_us = time_of(ld, e, "modifyTimestamp");
	l->expire_us = time_of(ld, e, "entryExpireTimestamp");
	g_autoptr(GPtrArray) csn = values_of(ld, e, "entryCSN");
	if (csn->len && !ll_csn_parse(csn->pdata[0], &l->csn_us))
		l->csn_us = 0;
	g_autoptr(GPtrArray) ttl = values_of(ld, e, "entryTtl");
	l->ttl_s = -1;
	if (ttl->len) {
		char *end = NULL;
		int64_t t = g_ascii_strtoll(ttl->pdata[0], &end, 10);
		if (end != ttl->pdata[0] && !*end && t >= 0 && t < G_MAXINT32)
			l->ttl_s = t;
	}
	g_autofree char *cn = ll_dn_cn(l->dn);
	if (cn && ll_cn_hashed(cn)) {
		g_autofree char *again = l->note_key ? ll_key_encode(l->note_key) : NULL;
		if (again && strcmp(again, cn) == 0)
			l->key = g_strdup(l->note_key);
	} else {
		l->key = ll_key_decode(cn);
	}
	/* A lock is what lockfs writes: a key and holder notes. */
	if (!l->fence_value || !l->holder.host)
		g_clear_pointer(&l->key, g_free);
}

int ll_read_lock(ll_op *op, const char *dn, ll_lock *out)
{
	memset(out, 0, sizeof(*out));
	if (!op_start(op))
		return op->rc;
	LDAPMessage *res = NULL;
	struct timeval tv = tv_of(op->deadline_mono_us - lockfs_mono_us());
	op->sent_mono_us = lockfs_mono_us();
	int rc = ldap_search_ext_s(op->ld, dn, LDAP_SCOPE_BASE, "(objectClass=*)", lock_attrs, 0,
	                           NULL, NULL, &tv, 1, &res);
	op->recv_mono_us = lockfs_mono_us();
	op_done(op, rc);
	if (rc == LDAP_SUCCESS) {
		LDAPMessage *e = ldap_first_entry(op->ld, res);
		if (e) {
			entry_to_lock(op->ld, e, out);
			out->read_sent_mono_us = op->sent_mono_us;
			out->read_recv_mono_us = op->recv_mono_us;
		} else
			op->rc = rc = LDAP_NO_SUCH_OBJECT;
	}
	ldap_msgfree(res);
	return rc;
}

/* One search, paged where the server offers it (servers cap result sizes). */
static int search_all(ll_op *op, const char *base, int scope, const char *filter, char **attrs,
                      void (*each)(LDAP *ld, LDAPMessage *e, void *user), void *user)
{
	struct berval cookie = { 0 };
	int rc;
	do {
		LDAPControl *page = NULL, *ctrls[2] = { NULL, NULL };
		if (!op_start(op)) {
			rc = op->rc;
			break;
		}
		if (op->be->caps & LL_CAP_PAGED) {
			rc = ldap_create_page_control(op->ld, PAGE_SIZE, &cookie, 0, &page);
			if (rc != LDAP_SUCCESS)
				break;
			ctrls[0] = page;
		}
		LDAPMessage *res = NULL;
		struct timeval tv = tv_of(op->deadline_mono_us - lockfs_mono_us());
		op->sent_mono_us = lockfs_mono_us();
		rc = op_done(op, ldap_search_ext_s(op->ld, base, scope, filter, attrs, 0, ctrls,
		                                   NULL, &tv, 0, &res));
		op->recv_mono_us = lockfs_mono_us();
		if (page)
			ldap_control_free(page);
		ber_memfree(cookie.bv_val);
		cookie = (struct berval){ 0 };
		if (rc == LDAP_SUCCESS) {
			for (LDAPMessage *e = ldap_first_entry(op->ld, res); e;
			     e = ldap_next_entry(op->ld, e))
				each(op->ld, e, user);
			LDAPControl **rctrls = NULL;
			int err = LDAP_SUCCESS;
			if (ldap_parse_result(op->ld, res, &err, NULL, NULL, NULL, &rctrls, 0) ==
			    LDAP_SUCCESS) {
				LDAPControl *pr =
				        ldap_control_find(LDAP_CONTROL_PAGEDRESULTS, rctrls, NULL);
				ber_int_t count = 0;
				if (pr)
					ldap_parse_pageresponse_control(op->ld, pr, &count,
					                                &cookie);
				ldap_controls_free(rctrls);
			}
		}
		ldap_msgfree(res);
	} while (rc == LDAP_SUCCESS && cookie.bv_len > 0);
	ber_memfree(cookie.bv_val);
	return rc;
}

struct lock_cb {
	ll_op *op;
	void (*cb)(ll_lock *l, void *user);
	void *user;
};

static void each_lock(LDAP *ld, LDAPMessage *e, void *user)
{
	struct lock_cb *c = user;
	ll_lock l;
	entry_to_lock(ld, e, &l);
	l.read_sent_mono_us = c->op->sent_mono_us;
	l.read_recv_mono_us = c->op->recv_mono_us;
	if (l.key)
		c->cb(&l, c->user);
	ll_lock_clear(&l);
}

int ll_search_locks(ll_op *op, const char *filter, void (*cb)(ll_lock *l, void *user), void *user)
{
	struct lock_cb c = { op, cb, user };
	return search_all(op, op->be->cfg.base, LDAP_SCOPE_ONELEVEL, filter, lock_attrs, each_lock,
	                  &c);
}

struct cn_cb {
	void (*cb)(const char *cn, void *user);
	void *user;
};

static void each_cn(LDAP *ld, LDAPMessage *e, void *user)
{
	struct cn_cb *c = user;
	char *dn = ldap_get_dn(ld, e);
	g_autofree char *cn = dn ? ll_dn_cn(dn) : NULL;
	ldap_memfree(dn);
	if (cn)
		c->cb(cn, c->user);
}

int ll_search_cns(ll_op *op, const char *filter, void (*cb)(const char *cn, void *user), void *user)
{
	char *no_attrs[] = { LDAP_NO_ATTRS, NULL };
	struct cn_cb c = { cb, user };
	return search_all(op, op->be->cfg.base, LDAP_SCOPE_ONELEVEL, filter, no_attrs, each_cn, &c);
}

/* ---- set-up ---- */

struct root_dse {
	GPtrArray *controls, *extensions, *features, *contexts;
};

static void each_root(LDAP *ld, LDAPMessage *e, void *user)
{
	struct root_dse *r = user;
	r->controls = values_of(ld, e, "supportedControl");
	r->extensions = values_of(ld, e, "supportedExtension");
	r->features = values_of(ld, e, "supportedFeatures");
	r->contexts = values_of(ld, e, "namingContexts");
}

static bool has(GPtrArray *a, const char *s)
{
	for (guint i = 0; a && i < a->len; i++)
		if (strcmp(a->pdata[i], s) == 0)
			return true;
	return false;
}

/* Whether two DNs name the same entry (types and values compared caselessly). */
static bool dn_equal(const char *a, const char *b)
{
	LDAPDN x = NULL, y = NULL;
	bool eq = ldap_str2dn(a, &x, LDAP_DN_FORMAT_LDAPV3) == LDAP_SUCCESS &&
	          ldap_str2dn(b, &y, LDAP_DN_FORMAT_LDAPV3) == LDAP_SUCCESS;
	for (int i = 0; eq; i++) {
		if (!x || !y || !x[i] || !y[i]) {
			eq = (!x || !x[i]) && (!y || !y[i]);
			break;
		}
		for (int j = 0; eq; j++) {
			LDAPAVA *p = x[i][j], *q = y[i][j];
			if (!p || !q) {
				eq = !p && !q;
				break;
			}
			g_autofree char *pv =
			        g_utf8_casefold(p->la_value.bv_val, p->la_value.bv_len);
			g_autofree char *qv =
			        g_utf8_casefold(q->la_value.bv_val, q->la_value.bv_len);
			eq = p->la_attr.bv_len == q->la_attr.bv_len &&
			     g_ascii_strncasecmp(p->la_attr.bv_val, q->la_attr.bv_val,
			                         p->la_attr.bv_len) == 0 &&
			     strcmp(pv, qv) == 0;
		}
	}
	ldap_dnfree(x);
	ldap_dnfree(y);
	return eq;
}

static void each_nothing(LDAP *ld, LDAPMessage *e, void *user)
{
	(void)ld;
	(void)e;
	*(bool *)user = true;
}

/* 1 when DN exists, 0 when not, -1 on failure. */
static int entry_exists(ll_op *op, const char *dn)
{
	char *attrs[] = { LDAP_NO_ATTRS, NULL };
	bool found = false;
	int rc =
	        search_all(op, dn, LDAP_SCOPE_BASE, "(objectClass=*)", attrs, each_nothing, &found);
	if (rc == LDAP_NO_SUCH_OBJECT)
		return 0;
	return rc == LDAP_SUCCESS ? found : -1;
}

/* Up from the base (SUB: its DN and those above it, the base first) to the
 * first entry that exists, or to a naming context of CONTEXTS (its entry
 * may be missing in a new database): *FROM is the highest entry to create
 * (-1: none).  False with ERROR when there is no such anchor. */
static bool find_anchor(ll_op *op, GPtrArray *sub, GPtrArray *contexts, int *from, GError **error)
{
	const char *base = op->be->cfg.base;
	bool anchored = false;
	for (guint i = 0; i < sub->len && !anchored; i++) {
		int e = entry_exists(op, sub->pdata[i]);
		if (e < 0) {
			g_autofree char *why = ll_error_text(op);
			g_set_error(error, LL_ERROR, 0, "ldap: cannot look up base %s: %s", base,
			            why);
			return false;
		}
		if (e) {
			anchored = true;
			break;
		}
		*from = (int)i;
		for (guint c = 0; c < contexts->len && !anchored; c++)
			anchored = dn_equal(sub->pdata[i], contexts->pdata[c]);
	}
	if (!anchored) {
		g_ptr_array_add(contexts, NULL);
		g_autofree char *list = g_strjoinv(", ", (char **)contexts->pdata);
		g_ptr_array_remove_index(contexts, contexts->len - 1);
		g_set_error(error, LL_ERROR, 0,
		            "ldap: base %s is not under a naming context of %s (%s); fix base",
		            base, op->be->cfg.uri, *list ? list : "none");
		return false;
	}
	return true;
}

/* The object class lockfs gives a missing base entry named ATTR=..., or
 * NULL: one it does not create. */
static const char *base_class(const char *attr)
{
	if (strcmp(attr, "ou") == 0)
		return "organizationalUnit";
	if (strcmp(attr, "o") == 0)
		return "organization";
	if (strcmp(attr, "dc") == 0)
		return "domain";
	if (strcmp(attr, "cn") == 0)
		return "organizationalRole";
	if (strcmp(attr, "l") == 0)
		return "locality";
	return NULL;
}

/* Create the entries of DN (SUB: their DNs) from FROM down to the base. */
static bool create_down(ll_op *op, LDAPDN dn, GPtrArray *sub, int from, GError **error)
{
	for (int i = from; i >= 0; i--) {
		LDAPAVA *ava = dn[i][0];
		g_autofree char *attr = g_ascii_strdown(ava->la_attr.bv_val, ava->la_attr.bv_len);
		g_autofree char *value = g_strndup(ava->la_value.bv_val, ava->la_value.bv_len);
		const char *oc = base_class(attr);
		if (!oc || dn[i][1]) {
			g_set_error(
			        error, LL_ERROR, 0,
			        "ldap: base entry %s is missing and lockfs creates only ou=, o=, "
			        "dc=, cn= and l= entries; create it yourself",
			        (char *)sub->pdata[i]);
			return false;
		}
		const char *classes[] = { "top", oc, NULL };
		int rc = ll_add(op, sub->pdata[i], classes, attr, value, NULL);
		if (rc != LDAP_SUCCESS && rc != LDAP_ALREADY_EXISTS) {
			g_autofree char *why = ll_error_text(op);
			g_set_error(error, LL_ERROR, 0, "ldap: cannot create base entry %s: %s",
			            (char *)sub->pdata[i], why);
			return false;
		}
		if (rc == LDAP_SUCCESS)
			lockfs_log(G_LOG_LEVEL_INFO, NULL, "ldap: created %s",
			           (char *)sub->pdata[i]);
	}
	return true;
}

/* Create BASE and the entries above it that are missing, down from the
 * closest one that exists (or from the server's naming context). */
static bool ensure_base(ll_op *op, GPtrArray *contexts, GError **error)
{
	LDAPDN dn = NULL;
	ldap_str2dn(op->be->cfg.base, &dn, LDAP_DN_FORMAT_LDAPV3);
	int n = 0;
	while (dn && dn[n])
		n++;
	g_autoptr(GPtrArray) sub = g_ptr_array_new_with_free_func(ldap_memfree);
	for (int i = 0; i < n; i++) {
		char *s = NULL;
		ldap_dn2str(&dn[i], &s, LDAP_DN_FORMAT_LDAPV3 | LDAP_DN_PRETTY);
		g_ptr_array_add(sub, s);
	}
	int from = -1;
	bool ok = find_anchor(op, sub, contexts, &from, error) &&
	          create_down(op, dn, sub, from, error);
	ldap_dnfree(dn);
	return ok;
}

/* Whether dynamic entries work here for us: add one, refresh it, delete it.
 * OpenLDAP's dds does not list its refresh operation in the root DSE, and
 * access rules may forbid refresh, so only trying tells. */
static void each_ttl(LDAP *ld, LDAPMessage *e, void *user)
{
	GPtrArray **out = user;
	if (!*out)
		*out = values_of(ld, e, "entryTtl");
}

static bool probe_dds(ll_op *op, char **why)
{
	ll_backend *be = op->be;
	g_autofree char *cn = ll_probe_cn(be->cfg.host);
	g_autofree char *dn = ll_dn(cn, be->cfg.base);
	const char *classes[] = { "top", "organizationalRole", "dynamicObject", NULL };
	g_autoptr(GPtrArray) desc = g_ptr_array_new();
	g_ptr_array_add(desc, "lockfs: probe for dynamic entries");
	if (ll_add(op, dn, classes, "cn", cn, desc) != LDAP_SUCCESS) {
		*why = ll_error_text(op);
		return false;
	}
	/* What a new dynamic entry lives before any refresh (dds-default-ttl). */
	char *attrs[] = { "entryTtl", NULL };
	GPtrArray *ttl = NULL;
	if (search_all(op, dn, LDAP_SCOPE_BASE, "(objectClass=*)", attrs, each_ttl, &ttl) ==
	            LDAP_SUCCESS &&
	    ttl && ttl->len)
		be->dds_default_s = (int)g_ascii_strtoll(ttl->pdata[0], NULL, 10);
	if (ttl)
		g_ptr_array_unref(ttl);
	int ttl_s = ll_ttl_seconds(be), granted = 0;
	bool ok = ll_refresh(op, dn, ttl_s, &granted) == LDAP_SUCCESS;
	if (!ok)
		*why = ll_error_text(op);
	ll_delete(op, dn, NULL);
	if (ok && granted > ttl_s)
		lockfs_log(
		        G_LOG_LEVEL_INFO, NULL,
		        "ldap: the server keeps dynamic entries %d s at least (ttl is %d s): the "
		        "locks of a dead host go when a contender judges them expired, or then",
		        granted, ttl_s);
	return ok;
}

struct max_fence {
	uint64_t max;
};

static void each_max(ll_lock *l, void *user)
{
	struct max_fence *m = user;
	uint64_t f = g_ascii_strtoull(l->fence, NULL, 10);
	if (f > m->max)
		m->max = f;
}

struct counter {
	GPtrArray *desc, *ints;
	bool found;
};

static void each_counter(LDAP *ld, LDAPMessage *e, void *user)
{
	struct counter *c = user;
	c->found = true;
	c->desc = values_of(ld, e, "description");
	c->ints = values_of(ld, e, FENCE_INT_ATTR);
}

static void counter_clear(struct counter *c)
{
	if (c->desc)
		g_ptr_array_unref(c->desc);
	if (c->ints)
		g_ptr_array_unref(c->ints);
	memset(c, 0, sizeof(*c));
}

/* The counter's value string ("N", or "fence=N" in description), or NULL. */
static const char *counter_value(ll_backend *be, const struct counter *c, uint64_t *n)
{
	GPtrArray *vals = be->fence_in_desc ? c->desc : c->ints;
	const char *best = NULL;
	for (guint i = 0; vals && i < vals->len; i++) {
		const char *v = vals->pdata[i];
		if (be->fence_in_desc && !g_str_has_prefix(v, "fence="))
			continue;
		const char *num = be->fence_in_desc ? v + 6 : v;
		char *end = NULL;
		uint64_t x = g_ascii_strtoull(num, &end, 10);
		if (end == num || *end)
			continue;
		if (!best || x > *n) {
			best = v;
			*n = x;
		}
	}
	return best;
}

static int read_counter(ll_op *op, struct counter *c)
{
	char *attrs[] = { "description", FENCE_INT_ATTR, NULL };
	memset(c, 0, sizeof(*c));
	int rc = search_all(op, op->be->fence_dn, LDAP_SCOPE_BASE, "(objectClass=*)", attrs,
	                    each_counter, c);
	if (rc == LDAP_SUCCESS && !c->found)
		rc = op->rc = LDAP_NO_SUCH_OBJECT;
	return rc;
}

/* The counter entry, made when missing: it starts above every fence found in
 * the locks, so a counter deleted by hand does not repeat fences. */
static bool ensure_fence(ll_op *op, GError **error)
{
	ll_backend *be = op->be;
	for (int attempt = 0; attempt < 3; attempt++) {
		struct counter c;
		int rc = read_counter(op, &c);
		if (rc == LDAP_SUCCESS) {
			uint64_t n = 0;
			be->fence_in_desc = false;
			if (!counter_value(be, &c, &n)) {
				be->fence_in_desc = true;
				if (!counter_value(be, &c, &n)) {
					counter_clear(&c);
					g_set_error(
					        error, LL_ERROR, 0,
					        "ldap: %s holds no fence counter (no description "
					        "fence=N); delete it and lockfs makes it again",
					        be->fence_dn);
					return false;
				}
			}
			g_free(be->fence_attr);
			be->fence_attr =
			        g_strdup(be->fence_in_desc ? "description" : FENCE_INT_ATTR);
			counter_clear(&c);
			return true;
		}
		if (rc != LDAP_NO_SUCH_OBJECT)
			break;
		struct max_fence m = { 0 };
		rc = ll_search_locks(op, "(objectClass=organizationalRole)", each_max, &m);
		if (rc != LDAP_SUCCESS)
			break;
		g_autofree char *num = g_strdup_printf("%" G_GUINT64_FORMAT, m.max);
		g_autofree char *note = g_strdup_printf("fence=%" G_GUINT64_FORMAT, m.max);
		g_autoptr(GPtrArray) desc = g_ptr_array_new();
		rc = LDAP_OTHER;
		if (be->caps & LL_CAP_INCREMENT) {
			/* extensibleObject admits the integer attribute, no schema change. */
			const char *classes[] = { "top", "organizationalUnit", "extensibleObject",
				                  NULL };
			LDAPMod oc = { .mod_op = LDAP_MOD_ADD,
				       .mod_type = "objectClass",
				       .mod_values = (char **)classes };
			char *ouv[] = { "fence", NULL }, *numv[] = { num, NULL },
			     *dv[] = { "lockfs fence counter: never delete", NULL };
			LDAPMod ou = { .mod_op = LDAP_MOD_ADD,
				       .mod_type = "ou",
				       .mod_values = ouv };
			LDAPMod cnt = { .mod_op = LDAP_MOD_ADD,
				        .mod_type = FENCE_INT_ATTR,
				        .mod_values = numv };
			LDAPMod d = { .mod_op = LDAP_MOD_ADD,
				      .mod_type = "description",
				      .mod_values = dv };
			LDAPMod *mods[] = { &oc, &ou, &cnt, &d, NULL };
			if (op_start(op))
				rc = op_done(
				        op, ldap_add_ext_s(op->ld, be->fence_dn, mods, NULL, NULL));
			if (rc < 0)
				break;
		}
		if (rc != LDAP_SUCCESS && rc != LDAP_ALREADY_EXISTS) {
			const char *classes[] = { "top", "organizationalUnit", NULL };
			g_ptr_array_set_size(desc, 0);
			g_ptr_array_add(desc, note);
			rc = ll_add(op, be->fence_dn, classes, "ou", "fence", desc);
		}
		if (rc == LDAP_SUCCESS)
			lockfs_log(G_LOG_LEVEL_INFO, NULL,
			           "ldap: created the fence counter %s at %s", be->fence_dn, num);
		else if (rc != LDAP_ALREADY_EXISTS)
			break;
	}
	g_autofree char *why = ll_error_text(op);
	g_set_error(error, LL_ERROR, 0, "ldap: cannot set up the fence counter %s: %s",
	            be->fence_dn, why);
	return false;
}

/* The mount's one line on what the server offers, and a warning when the
 * server's clock cannot be read or is too far from ours. */
static void setup_report(ll_op *op, int crc)
{
	ll_backend *be = op->be;
	int64_t off = 0, unc = 0, age = 0;
	bool known = crc == LDAP_SUCCESS && ll_clock_offset(be, &off, &unc, &age);
	g_autofree char *clock = known ? ll_offset_text(off, unc) : g_strdup("unknown");
	lockfs_log(G_LOG_LEVEL_INFO, NULL,
	           "ldap: %s, base %s: dynamic entries %s, assertions %s, fence by %s, clock %s",
	           be->cfg.uri, be->cfg.base, be->caps & LL_CAP_DDS ? "yes" : "no",
	           be->caps & LL_CAP_ASSERT ? "yes" : "no",
	           !be->fence_in_desc && (be->caps & LL_CAP_INCREMENT) ? "increment"
	                                                               : "compare-and-swap",
	           clock);
	if (!known) {
		g_autofree char *why =
		        crc == LDAP_SUCCESS ? g_strdup("no stamps") : ll_error_text(op);
		lockfs_log(G_LOG_LEVEL_WARNING, NULL,
		           "ldap: cannot read the server's clock from the stamps of a write (%s): "
		           "until it can, this mount breaks no other host's lock; let the bind "
		           "user read modifyTimestamp and entryCSN",
		           why);
	} else if (ll_clock_beyond(be, off, unc)) {
		g_autofree char *bound = ll_duration_text(be->cfg.clock_bound_us);
		lockfs_log(
		        G_LOG_LEVEL_WARNING, NULL,
		        "ldap: this host's clock is %s, more than max_clock_offset (%s): this "
		        "mount takes and keeps locks but breaks no other host's until the clocks "
		        "agree; fix the clock (NTP)",
		        clock, bound);
	}
}

bool ll_setup(ll_backend *be, GError **error)
{
	ll_op op;
	if (ll_op_begin(be, &op) != 0) {
		g_mutex_lock(&be->pool_mu);
		g_set_error(error, LL_ERROR, 0, "ldap: cannot use %s: %s", be->cfg.uri,
		            be->last_error ? be->last_error : "unknown error");
		g_mutex_unlock(&be->pool_mu);
		return false;
	}
	bool ok = false;
	struct root_dse r = { 0 };
	char *attrs[] = { "supportedControl", "supportedExtension", "supportedFeatures",
		          "namingContexts", NULL };
	if (search_all(&op, "", LDAP_SCOPE_BASE, "(objectClass=*)", attrs, each_root, &r) !=
	            LDAP_SUCCESS ||
	    !r.controls) {
		g_autofree char *why = ll_error_text(&op);
		g_set_error(error, LL_ERROR, 0, "ldap: cannot read the root DSE of %s: %s",
		            be->cfg.uri, why);
		goto out;
	}
	if (has(r.controls, LDAP_CONTROL_ASSERT))
		be->caps |= LL_CAP_ASSERT;
	if (has(r.features, LDAP_FEATURE_MODIFY_INCREMENT) &&
	    has(r.controls, LDAP_CONTROL_POST_READ))
		be->caps |= LL_CAP_INCREMENT;
	if (has(r.controls, LDAP_CONTROL_PAGEDRESULTS))
		be->caps |= LL_CAP_PAGED;
	if (has(r.controls, LDAP_CONTROL_POST_READ))
		be->caps |= LL_CAP_POSTREAD;

	op.deadline_mono_us = lockfs_mono_us() + be->cfg.timeout_us;
	if (!ensure_base(&op, r.contexts, error))
		goto out;

	if (be->cfg.dynamic != 0) {
		op.deadline_mono_us = lockfs_mono_us() + be->cfg.timeout_us;
		g_autofree char *why = NULL;
		if (probe_dds(&op, &why)) {
			be->caps |= LL_CAP_DDS;
		} else if (be->cfg.dynamic == 1) {
			g_set_error(
			        error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_VALUE,
			        "key 'dynamic' in [ldap]: yes, but %s offers no dynamic entries "
			        "to us (%s%s): load OpenLDAP's dds overlay on the database and "
			        "allow manage on entryTtl, or set dynamic = auto",
			        be->cfg.uri, why,
			        has(r.extensions, OID_REFRESH) ? ""
			                                       : "; refresh is not advertised");
			goto out;
		}
	}

	op.deadline_mono_us = lockfs_mono_us() + be->cfg.timeout_us;
	if (!ensure_fence(&op, error))
		goto out;
	/* The server's clock, which judges other hosts' locks. */
	op.deadline_mono_us = lockfs_mono_us() + be->cfg.timeout_us;
	int crc = ll_clock_measure(&op, 0);
	ok = be->set_up = true;
	setup_report(&op, crc);
out:
	g_clear_pointer(&r.controls, g_ptr_array_unref);
	g_clear_pointer(&r.extensions, g_ptr_array_unref);
	g_clear_pointer(&r.features, g_ptr_array_unref);
	g_clear_pointer(&r.contexts, g_ptr_array_unref);
	ll_op_end(&op);
	return ok;
}

/* ---- fences ---- */

/* The counter's value N as stored: "N", or "fence=N" in description. */
static char *counter_text(ll_backend *be, uint64_t n)
{
	return be->fence_in_desc ? g_strdup_printf("fence=%" G_GUINT64_FORMAT, n)
	                         : g_strdup_printf("%" G_GUINT64_FORMAT, n);
}

/* Modify-Increment by BY with the post-read control: one round trip, no
 * retries; OUT is the counter's value after it. */
static int fence_increment(ll_op *op, uint64_t by, uint64_t *out)
{
	ll_backend *be = op->be;
	if (!op_start(op))
		return op->rc;
	BerElement *ber = ber_alloc_t(LBER_USE_DER);
	char *attrs[] = { be->fence_attr, NULL };
	struct berval val = { 0 };
	if (ber_printf(ber, "{v}", attrs) < 0 || ber_flatten2(ber, &val, 0) < 0) {
		ber_free(ber, 1);
		return op_done(op, LDAP_ENCODING_ERROR);
	}
	LDAPControl post = { .ldctl_oid = LDAP_CONTROL_POST_READ,
		             .ldctl_value = val,
		             .ldctl_iscritical = 1 };
	LDAPControl *ctrls[] = { &post, NULL };
	char delta[24];
	g_snprintf(delta, sizeof(delta), "%" G_GUINT64_FORMAT, by);
	char *deltav[] = { delta, NULL };
	LDAPMod inc = { .mod_op = LDAP_MOD_INCREMENT,
		        .mod_type = be->fence_attr,
		        .mod_values = deltav };
	LDAPMod *mods[] = { &inc, NULL };
	int msgid = 0;
	int rc = ldap_modify_ext(op->ld, be->fence_dn, mods, ctrls, NULL, &msgid);
	ber_free(ber, 1);
	if (rc != LDAP_SUCCESS)
		return op_done(op, rc);
	LDAPMessage *res = NULL;
	struct timeval tv = tv_of(op->deadline_mono_us - lockfs_mono_us());
	if (ldap_result(op->ld, msgid, LDAP_MSG_ALL, &tv, &res) <= 0) {
		ldap_msgfree(res);
		return op_done(op, LDAP_TIMEOUT);
	}
	int err = LDAP_OTHER;
	LDAPControl **rctrls = NULL;
	rc = ldap_parse_result(op->ld, res, &err, NULL, NULL, NULL, &rctrls, 1);
	if (rc != LDAP_SUCCESS)
		return op_done(op, rc);
	if (err != LDAP_SUCCESS) {
		ldap_controls_free(rctrls);
		return op_done(op, err);
	}
	LDAPControl *c = ldap_control_find(LDAP_CONTROL_POST_READ, rctrls, NULL);
	bool got = false;
	if (c) {
		BerElement *b = ber_init(&c->ldctl_value);
		struct berval bv;
		if (b && ber_scanf(b, "{m{" /*}}*/, &bv) != LBER_ERROR) {
			while (!got && ber_scanf(b, "{m" /*}*/, &bv) != LBER_ERROR) {
				BerVarray vals = NULL;
				if (ber_scanf(b, "[W]", &vals) == LBER_ERROR || !vals)
					break;
				if (vals[0].bv_val && vals[0].bv_len < 24) {
					g_autofree char *s =
					        g_strndup(vals[0].bv_val, vals[0].bv_len);
					char *end = NULL;
					*out = g_ascii_strtoull(s, &end, 10);
					got = end != s && !*end;
				}
				ber_bvarray_free(vals);
			}
		}
		if (b)
			ber_free(b, 1);
	}
	ldap_controls_free(rctrls);
	return op_done(op, got ? LDAP_SUCCESS : LDAP_DECODING_ERROR);
}

/* Read, then swap the old value for old + BY in one modify; a contender that
 * swapped first makes ours fail (noSuchAttribute), and we read again. */
static int fence_swap(ll_op *op, uint64_t by, uint64_t *out)
{
	ll_backend *be = op->be;
	for (;;) {
		struct counter c;
		int rc = read_counter(op, &c);
		if (rc != LDAP_SUCCESS)
			return rc;
		uint64_t n = 0;
		const char *old = counter_value(be, &c, &n);
		if (!old) {
			counter_clear(&c);
			return op_done(op, LDAP_NO_SUCH_ATTRIBUTE);
		}
		g_autofree char *next = counter_text(be, n + by);
		rc = ll_swap_value(op, be->fence_dn, be->fence_attr, old, next);
		counter_clear(&c);
		if (rc == LDAP_SUCCESS) {
			*out = n + by;
			return rc;
		}
		if (rc != LDAP_NO_SUCH_ATTRIBUTE && rc != LDAP_TYPE_OR_VALUE_EXISTS)
			return rc;
		g_usleep(g_random_int_range(1000, 10000));
	}
}

int ll_reserve_fences(ll_op *op, uint64_t n, uint64_t *end)
{
	if (!op->be->fence_in_desc && (op->be->caps & LL_CAP_INCREMENT))
		return fence_increment(op, n, end);
	return fence_swap(op, n, end);
}

int ll_fence_counter_is(ll_op *op, uint64_t value)
{
	g_autofree char *text = counter_text(op->be, value);
	return ll_compare(op, op->be->fence_dn, op->be->fence_attr, text);
}
