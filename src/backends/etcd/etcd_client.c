/* HTTP to etcd's gRPC gateway.  Each call takes a libcurl easy handle from a
 * small pool (a handle keeps its connections open, so calls reuse them), and
 * every transfer is bounded by what is left of the caller's deadline: a
 * member that hangs costs at most its share, then the next one is asked. */
#include "etcd_client.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <lockfs/backend_support.h>
#include <string.h>

/* Idle handles kept; more may exist while calls run. */
#define POOL_MAX 8
/* Replies larger than this are refused (a listing of ~100,000 locks). */
#define REPLY_MAX (64u << 20)
/* A member that failed is tried after the others for this long. */
#define DOWN_US (2 * G_USEC_PER_SEC)
/* Each attempt gets at least this much of the deadline. */
#define ATTEMPT_MIN_US (200 * 1000)

struct etcd_client {
	etcd_client_opts o;
	guint n;
	GMutex mu;
	guint current;       /* endpoint the next call starts with */
	int64_t *down_until; /* per endpoint, lockfs_mono_us() */
	GPtrArray *idle;     /* CURL * */
	char *token;         /* auth token, or NULL */
	/* The latest Date header: the server's second, and when the request
	 * was sent and its reply read, on our monotonic clock. */
	int64_t date_s, date_sent, date_read;
};

static gsize curl_ready;

etcd_client *etcd_client_new(etcd_client_opts *o)
{
	if (g_once_init_enter(&curl_ready)) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		g_once_init_leave(&curl_ready, 1);
	}
	etcd_client *c = g_new0(etcd_client, 1);
	c->o = *o;
	memset(o, 0, sizeof(*o));
	c->n = g_strv_length(c->o.endpoints);
	c->down_until = g_new0(int64_t, MAX(c->n, 1));
	g_mutex_init(&c->mu);
	c->idle = g_ptr_array_new();
	return c;
}

void etcd_client_free(etcd_client *c)
{
	if (!c)
		return;
	for (guint i = 0; i < c->idle->len; i++)
		curl_easy_cleanup(c->idle->pdata[i]);
	g_ptr_array_free(c->idle, TRUE);
	g_strfreev(c->o.endpoints);
	g_free(c->o.ca_file);
	g_free(c->o.cert_file);
	g_free(c->o.key_file);
	g_free(c->o.user);
	if (c->o.password)
		memset(c->o.password, 0, strlen(c->o.password));
	g_free(c->o.password);
	g_free(c->token);
	g_free(c->down_until);
	g_mutex_clear(&c->mu);
	g_free(c);
}

const char *etcd_client_endpoint(etcd_client *c)
{
	g_mutex_lock(&c->mu);
	const char *e = c->n ? c->o.endpoints[c->current % c->n] : "";
	g_mutex_unlock(&c->mu);
	return e;
}

static CURL *take_handle(etcd_client *c)
{
	g_mutex_lock(&c->mu);
	CURL *h = c->idle->len ? g_ptr_array_steal_index_fast(c->idle, c->idle->len - 1) : NULL;
	g_mutex_unlock(&c->mu);
	return h ? h : curl_easy_init();
}

static void give_handle(etcd_client *c, CURL *h, bool keep)
{
	g_mutex_lock(&c->mu);
	if (keep && c->idle->len < POOL_MAX) {
		g_ptr_array_add(c->idle, h);
		h = NULL;
	}
	g_mutex_unlock(&c->mu);
	if (h)
		curl_easy_cleanup(h);
}

typedef struct {
	GString *body;
	bool too_big;
	int64_t date_s; /* from the Date header, or -1 */
	/* A stream (watch): each line of the body as it comes; false stops. */
	etcd_line_cb on_line;
	void *line_user;
	bool stopped; /* on_line said stop */
	CURLcode rc;  /* the transfer's result */
} reply;

static size_t on_body(char *p, size_t size, size_t n, void *user)
{
	reply *r = user;
	size_t len = size * n;
	if (r->body->len + len > REPLY_MAX) {
		r->too_big = true;
		return 0;
	}
	g_string_append_len(r->body, p, (gssize)len);
	if (!r->on_line)
		return len;
	char *nl;
	while ((nl = memchr(r->body->str, '\n', r->body->len))) {
		size_t line = (size_t)(nl - r->body->str);
		bool go_on = line == 0 || r->on_line(r->body->str, line, r->line_user);
		g_string_erase(r->body, 0, (gssize)line + 1);
		if (!go_on) {
			r->stopped = true;
			return 0;
		}
	}
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *user)
{
	reply *r = user;
	size_t len = size * n;
	if (len > 5 && g_ascii_strncasecmp(p, "date:", 5) == 0) {
		g_autofree char *v = g_strstrip(g_strndup(p + 5, len - 5));
		time_t t = curl_getdate(v, NULL);
		if (t > 0)
			r->date_s = (int64_t)t;
	}
	return len;
}

typedef enum {
	ATTEMPT_OK,     /* an answer: HTTP status in *status */
	ATTEMPT_FAILED, /* transport failure or timeout: try another member */
} attempt_result;

/* One POST of BODY to URL within TIMEOUT_US. */
static attempt_result attempt(etcd_client *c, const char *url, const char *body, int64_t timeout_us,
                              const char *token, long *status, reply *r, char **why)
{
	CURL *h = take_handle(c);
	if (!h) {
		*why = g_strdup("libcurl could not make a handle");
		return ATTEMPT_FAILED;
	}
	curl_easy_reset(h);
	struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	/* No "Expect: 100-continue" round trip for bodies over 1 KiB. */
	hdrs = curl_slist_append(hdrs, "Expect:");
	g_autofree char *auth = token ? g_strconcat("Authorization: ", token, NULL) : NULL;
	if (auth)
		hdrs = curl_slist_append(hdrs, auth);
	long ms = (long)MAX(timeout_us / 1000, 1);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	if (c->o.ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->o.ca_file);
	if (c->o.cert_file)
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->o.cert_file);
	if (c->o.key_file)
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->o.key_file);
	CURLcode rc = r->rc = curl_easy_perform(h);
	curl_slist_free_all(hdrs);
	if (rc != CURLE_OK) {
		*why = g_strdup_printf("%s: %s", url,
		                       r->too_big ? "reply too large" : curl_easy_strerror(rc));
		/* A handle whose transfer failed may hold a half-used connection. */
		give_handle(c, h, false);
		return ATTEMPT_FAILED;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	give_handle(c, h, true);
	return ATTEMPT_OK;
}

/* The gateway's error text: {"error": "...", "message": "...", "code": N},
 * or a stream's {"error": {"message": ...}}. */
static char *error_text(JsonObject *o)
{
	if (!o)
		return NULL;
	JsonNode *e = json_object_get_member(o, "error");
	if (!e)
		return NULL;
	if (JSON_NODE_HOLDS_VALUE(e) && json_node_get_value_type(e) == G_TYPE_STRING)
		return g_strdup(json_node_get_string(e));
	if (JSON_NODE_HOLDS_OBJECT(e)) {
		JsonObject *eo = json_node_get_object(e);
		if (etcd_json_str(eo, "message"))
			return g_strdup(etcd_json_str(eo, "message"));
	}
	return g_strdup("an error without text");
}

/* Answers another member may not give: no leader, an election under way,
 * a member cut off or overloaded (gRPC "unavailable", HTTP 503; a stream
 * reports it in its body). */
static bool unavailable(long status, const char *err)
{
	static const char *const texts[] = { "no leader",         "leader changed",
		                             "timed out",         "too many requests",
		                             "deadline exceeded", "unavailable",
		                             "not capable",       "stopped" };
	if (status == 503 || status == 502 || status == 504)
		return true;
	for (size_t i = 0; err && i < G_N_ELEMENTS(texts); i++)
		if (strstr(err, texts[i]))
			return true;
	return false;
}

static bool auth_error(long status, const char *err)
{
	return status == 401 || (err && strstr(err, "invalid auth token"));
}

/* The reply's JSON object; a keep-alive stream's first {"result": …}. */
static JsonNode *parse_reply(const GString *body, char **why)
{
	g_autoptr(JsonParser) p = json_parser_new();
	GError *e = NULL;
	/* A stream's replies are one JSON object per line. */
	const char *nl = memchr(body->str, '\n', body->len);
	gssize len = nl ? (gssize)(nl - body->str) : (gssize)body->len;
	if (!json_parser_load_from_data(p, body->str, len, &e)) {
		*why = g_strdup_printf("the reply is not JSON: %s", e->message);
		g_error_free(e);
		return NULL;
	}
	JsonNode *root = json_parser_get_root(p);
	if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
		*why = g_strdup("the reply is not a JSON object");
		return NULL;
	}
	JsonObject *o = json_node_get_object(root);
	if (json_object_has_member(o, "result") &&
	    JSON_NODE_HOLDS_OBJECT(json_object_get_member(o, "result")))
		return json_node_copy(json_object_get_member(o, "result"));
	return json_node_copy(root);
}

/* An error etcd's HTTP layer wrote as text (e.g. http.Error): its first
 * line, 200 bytes at most, or NULL. */
static char *plain_error(const GString *body)
{
	size_t n = strcspn(body->str, "\r\n");
	n = MIN(n, 200);
	char *t = g_strndup(body->str, n);
	g_strstrip(t);
	if (!*t || !g_utf8_validate(t, -1, NULL)) {
		g_free(t);
		return NULL;
	}
	return t;
}

static bool authenticate(etcd_client *c, int64_t deadline, char **why);

/* The member to ask at NOW: the current one unless it failed lately and
 * another did not; its URL for PATH and the token to send.  False when
 * there are no endpoints. */
static bool pick_member(etcd_client *c, const char *path, int64_t now, bool may_auth, guint *idx,
                        char **url, char **token)
{
	g_mutex_lock(&c->mu);
	if (!c->n) {
		g_mutex_unlock(&c->mu);
		return false;
	}
	guint i = c->current % c->n;
	for (guint k = 0; k < c->n && c->down_until[i] > now; k++)
		i = (i + 1) % c->n;
	if (c->down_until[i] > now)
		i = c->current % c->n;
	*idx = i;
	*url = g_strconcat(c->o.endpoints[i], path, NULL);
	*token = may_auth ? g_strdup(c->token) : NULL;
	g_mutex_unlock(&c->mu);
	return true;
}

/* How long one attempt may take: leave time for the members not tried yet
 * in this round. */
static int64_t attempt_budget(etcd_client *c, int64_t now, int64_t deadline, guint tried)
{
	guint left_members = c->n > tried ? c->n - tried : 1;
	int64_t budget = MAX((deadline - now) / left_members, ATTEMPT_MIN_US);
	return MIN(budget, deadline - now);
}

/* Keep the Date header of R, sent at SENT and read at GOT, if it is the
 * latest read. */
static void note_date(etcd_client *c, const reply *r, int64_t sent, int64_t got)
{
	if (r->date_s <= 0)
		return;
	g_mutex_lock(&c->mu);
	if (got >= c->date_read) {
		c->date_s = r->date_s;
		c->date_sent = sent;
		c->date_read = got;
	}
	g_mutex_unlock(&c->mu);
}

/* What one member's answer means for the call. */
typedef enum {
	ANSWER_OK,     /* the reply is in *out */
	ANSWER_AUTH,   /* the token was refused: authenticate and ask again */
	ANSWER_FAILED, /* an error any member would give: *why */
	ANSWER_NEXT,   /* this member cannot answer now: *err says why */
} answer_kind;

/* Judge member IDX's answer, STATUS and BODY, to URL; REAUTH: the call may
 * still authenticate again. */
static answer_kind judge_answer(etcd_client *c, guint idx, const char *url, long status,
                                const GString *body, bool reauth, JsonNode **out, char **why,
                                char **err)
{
	char *perr = NULL;
	JsonNode *node = parse_reply(body, &perr);
	g_autofree char *etext = node ? error_text(json_node_get_object(node)) : NULL;
	if (!node && status != 200 && body->len)
		etext = plain_error(body);
	if (status == 200 && node && !etext) {
		g_mutex_lock(&c->mu);
		c->current = idx;
		c->down_until[idx] = 0;
		g_mutex_unlock(&c->mu);
		*out = node;
		return ANSWER_OK;
	}
	answer_kind k = ANSWER_NEXT;
	if (auth_error(status, etext) && reauth) {
		k = ANSWER_AUTH;
	} else if (!unavailable(status, etext)) {
		*why = g_strdup_printf("%s: HTTP %ld: %s%s", url, status,
		                       etext  ? etext
		                       : perr ? perr
		                              : "no error text",
		                       status == 404 && !etext ? " (etcd 3.4 or later serves /v3/)"
		                                               : "");
		k = ANSWER_FAILED;
	} else {
		*err = g_strdup_printf("%s: HTTP %ld: %s", url, status,
		                       etext ? etext : (perr ? perr : "unavailable"));
	}
	if (node)
		json_node_unref(node);
	g_free(perr);
	return k;
}

/* Member IDX failed at GOT: leave it for the next one; after a round in
 * which every member failed once, pause before the next (an election takes
 * a second or two). */
static void next_member(etcd_client *c, guint idx, int64_t got, guint *tried, int64_t deadline)
{
	g_mutex_lock(&c->mu);
	c->down_until[idx] = got + DOWN_US;
	c->current = (idx + 1) % c->n;
	g_mutex_unlock(&c->mu);
	if (++*tried >= c->n) {
		*tried = 0;
		int64_t pause = MIN(100 * 1000, deadline - lockfs_mono_us());
		if (pause > 0)
			g_usleep((gulong)pause);
	}
}

static int call(etcd_client *c, const char *path, const char *body, int64_t deadline, bool may_auth,
                JsonNode **out, char **why)
{
	*out = NULL;
	g_autofree char *last = NULL;
	bool reauth = may_auth;
	guint tried = 0; /* endpoints tried since the last round began */
	for (;;) {
		int64_t now = lockfs_mono_us();
		if (now >= deadline) {
			*why = g_strdup_printf("no etcd member answered in time%s%s",
			                       last ? "; last: " : "", last ? last : "");
			return -EIO;
		}
		guint idx;
		g_autofree char *url = NULL;
		g_autofree char *token = NULL;
		if (!pick_member(c, path, now, may_auth, &idx, &url, &token)) {
			*why = g_strdup("no endpoints");
			return -EIO;
		}
		int64_t budget = attempt_budget(c, now, deadline, tried);

		reply r = { .body = g_string_new(NULL), .date_s = -1 };
		long status = 0;
		char *err = NULL;
		int64_t sent = lockfs_mono_us();
		attempt_result ar = attempt(c, url, body, budget, token, &status, &r, &err);
		int64_t got = lockfs_mono_us();
		note_date(c, &r, sent, got);
		answer_kind k = ANSWER_NEXT;
		if (ar == ATTEMPT_OK)
			k = judge_answer(c, idx, url, status, r.body, reauth, out, why, &err);
		g_string_free(r.body, TRUE);
		if (k == ANSWER_OK)
			return 0;
		if (k == ANSWER_FAILED)
			return -EIO;
		if (k == ANSWER_AUTH) {
			reauth = false;
			if (!authenticate(c, deadline, why))
				return -EIO;
			continue;
		}
		g_free(last);
		last = err;
		next_member(c, idx, got, &tried, deadline);
	}
}

int etcd_client_stream(etcd_client *c, const char *path, const char *body, int64_t timeout_us,
                       etcd_line_cb on_line, void *user, char **why)
{
	g_mutex_lock(&c->mu);
	if (!c->n) {
		g_mutex_unlock(&c->mu);
		*why = g_strdup("no endpoints");
		return -EIO;
	}
	/* The member calls go to: a stream is not moved while it runs. */
	g_autofree char *url = g_strconcat(c->o.endpoints[c->current % c->n], path, NULL);
	g_autofree char *token = g_strdup(c->token);
	g_mutex_unlock(&c->mu);
	reply r = {
		.body = g_string_new(NULL), .date_s = -1, .on_line = on_line, .line_user = user
	};
	long status = 0;
	char *err = NULL;
	attempt_result ar = attempt(c, url, body, timeout_us, token, &status, &r, &err);
	g_string_free(r.body, TRUE);
	if (ar == ATTEMPT_OK || r.rc == CURLE_OPERATION_TIMEDOUT) { /* the time is up */
		g_free(err);
		if (ar == ATTEMPT_OK && status != 200) {
			*why = g_strdup_printf("%s: HTTP %ld", url, status);
			return -EIO;
		}
		return 0;
	}
	if (r.stopped) {
		g_free(err);
		*why = g_strdup_printf("%s: the stream broke off", url);
		return -EIO;
	}
	*why = err;
	return -EIO;
}

static bool authenticate(etcd_client *c, int64_t deadline, char **why)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "name");
	json_builder_add_string_value(b, c->o.user);
	json_builder_set_member_name(b, "password");
	json_builder_add_string_value(b, c->o.password);
	json_builder_end_object(b);
	g_autoptr(JsonGenerator) g = json_generator_new();
	g_autoptr(JsonNode) root = json_builder_get_root(b);
	json_generator_set_root(g, root);
	g_autofree char *body = json_generator_to_data(g, NULL);
	JsonNode *out = NULL;
	g_autofree char *err = NULL;
	int r = call(c, "/v3/auth/authenticate", body, deadline, false, &out, &err);
	memset(body, 0, strlen(body));
	if (r != 0) {
		*why = g_strdup_printf("authenticating as etcd user %s: %s", c->o.user, err);
		return false;
	}
	JsonObject *o = json_node_get_object(out);
	const char *tok = etcd_json_str(o, "token");
	if (!tok || !*tok) {
		json_node_unref(out);
		*why = g_strdup_printf("etcd gave user %s no token (is authentication enabled?)",
		                       c->o.user);
		return false;
	}
	g_mutex_lock(&c->mu);
	g_free(c->token);
	c->token = g_strdup(tok);
	g_mutex_unlock(&c->mu);
	json_node_unref(out);
	return true;
}

int etcd_call(etcd_client *c, const char *path, const char *body, int64_t deadline, JsonNode **out,
              char **why)
{
	if (c->o.user) {
		g_mutex_lock(&c->mu);
		bool have = c->token != NULL;
		g_mutex_unlock(&c->mu);
		if (!have && !authenticate(c, deadline, why))
			return -EIO;
	}
	return call(c, path, body, deadline, c->o.user != NULL, out, why);
}

bool etcd_client_server_now(etcd_client *c, int64_t *low, int64_t *high, int64_t *age_us)
{
	g_mutex_lock(&c->mu);
	int64_t s = c->date_s, sent = c->date_sent, read = c->date_read;
	g_mutex_unlock(&c->mu);
	if (s <= 0)
		return false;
	int64_t now = lockfs_mono_us();
	/* The Date was the server's second when it answered: after we sent,
	 * before we read; the second is [s, s + 1). */
	*low = s * 1000 + (now - read) / 1000;
	*high = s * 1000 + 1000 + (now - sent + 999) / 1000;
	*age_us = now - read;
	return true;
}

int64_t etcd_json_int(JsonObject *o, const char *member, int64_t def)
{
	if (!o)
		return def;
	JsonNode *n = json_object_get_member(o, member);
	if (!n || !JSON_NODE_HOLDS_VALUE(n))
		return def;
	GType t = json_node_get_value_type(n);
	if (t == G_TYPE_STRING) {
		const char *s = json_node_get_string(n);
		char *end = NULL;
		errno = 0;
		gint64 v = g_ascii_strtoll(s, &end, 10);
		if (errno || end == s || *end)
			return def;
		return v;
	}
	if (t == G_TYPE_INT64)
		return json_node_get_int(n);
	if (t == G_TYPE_DOUBLE) {
		/* Out of int64's range (or NaN): no number of ours. */
		double d = json_node_get_double(n);
		return d >= -0x1p63 && d < 0x1p63 ? (int64_t)d : def;
	}
	return def;
}

bool etcd_json_bool(JsonObject *o, const char *member)
{
	if (!o)
		return false;
	JsonNode *n = json_object_get_member(o, member);
	return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_BOOLEAN &&
	       json_node_get_boolean(n);
}

JsonObject *etcd_json_obj(JsonObject *o, const char *member)
{
	if (!o)
		return NULL;
	JsonNode *n = json_object_get_member(o, member);
	return n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

JsonArray *etcd_json_array(JsonObject *o, const char *member)
{
	if (!o)
		return NULL;
	JsonNode *n = json_object_get_member(o, member);
	return n && JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
}

const char *etcd_json_str(JsonObject *o, const char *member)
{
	if (!o)
		return NULL;
	JsonNode *n = json_object_get_member(o, member);
	return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING
	               ? json_node_get_string(n)
	               : NULL;
}

char *etcd_b64(const void *data, size_t len)
{
	return g_base64_encode(data, len);
}

char *etcd_txn_create_body(const char *key_b64, const char *value_b64, int64_t lease)
{
	return g_strdup_printf(
	        "{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\",\"result\":\"EQUAL\","
	        "\"create_revision\":\"0\"}],"
	        "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\","
	        "\"lease\":\"%" PRId64 "\"}}],"
	        "\"failure\":[{\"request_range\":{\"key\":\"%s\"}}]}",
	        key_b64, key_b64, value_b64, lease, key_b64);
}

char *etcd_txn_delete_body(const char *key, int64_t create_rev, int64_t mod_rev)
{
	g_autofree char *k = etcd_b64(key, strlen(key));
	g_autofree char *mod = mod_rev ? g_strdup_printf(",{\"key\":\"%s\",\"target\":\"MOD\","
	                                                 "\"result\":\"EQUAL\","
	                                                 "\"mod_revision\":\"%" PRId64 "\"}",
	                                                 k, mod_rev)
	                               : g_strdup("");
	return g_strdup_printf("{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\",\"result\":"
	                       "\"EQUAL\",\"create_revision\":\"%" PRId64 "\"}%s],"
	                       "\"success\":[{\"request_delete_range\":{\"key\":\"%s\"}}]}",
	                       k, create_rev, mod, k);
}

char *etcd_txn_delete_value_body(const char *key, const char *value_b64)
{
	g_autofree char *k = etcd_b64(key, strlen(key));
	return g_strdup_printf("{\"compare\":[{\"key\":\"%s\",\"target\":\"VALUE\",\"result\":"
	                       "\"EQUAL\",\"value\":\"%s\"}],"
	                       "\"success\":[{\"request_delete_range\":{\"key\":\"%s\"}}]}",
	                       k, value_b64, k);
}
