/* Holder records as JSON: json-glib writes and reads them (the gateway
 * speaks JSON already), and `etcdctl get` shows them legibly. */
#include "etcd_record.h"

#include <json-glib/json-glib.h>
#include <string.h>

#define RECORD_VERSION 1

void etcd_record_clear(etcd_record *r)
{
	lockfs_holder_clear(&r->holder);
	g_free(r->mount);
	g_free(r->nonce);
	g_free(r->content);
	memset(r, 0, sizeof(*r));
}

static void add_int(JsonBuilder *b, const char *name, int64_t v)
{
	json_builder_set_member_name(b, name);
	json_builder_add_int_value(b, v);
}

static void add_str(JsonBuilder *b, const char *name, const char *v)
{
	if (!v)
		return;
	json_builder_set_member_name(b, name);
	json_builder_add_string_value(b, v);
}

char *etcd_record_encode(const etcd_record *r)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	const lockfs_holder *h = &r->holder;
	json_builder_begin_object(b);
	add_int(b, "v", RECORD_VERSION);
	add_str(b, "host", h->host);
	add_str(b, "mount", r->mount);
	add_int(b, "pid", h->pid);
	add_int(b, "uid", h->uid);
	add_int(b, "gid", h->gid);
	add_str(b, "user", h->user);
	add_str(b, "command", h->command);
	add_int(b, "acquired_us", h->acquired_us);
	add_int(b, "heartbeat_us", h->heartbeat_us);
	add_int(b, "mode", h->mode);
	add_int(b, "mtime_us", h->mtime_us);
	add_int(b, "atime_us", h->atime_us);
	add_int(b, "ctime_us", h->ctime_us);
	add_str(b, "nonce", r->nonce);
	g_autofree char *lease = g_strdup_printf("%" G_GINT64_FORMAT, r->lease);
	add_str(b, "lease", lease);
	add_int(b, "ttl_ms", r->ttl_ms);
	add_int(b, "server_ms", r->server_ms);
	add_int(b, "idle_ms", r->idle_ms);
	if (r->content) {
		g_autofree char *c = g_base64_encode((const guchar *)r->content, r->content_len);
		add_str(b, "content", c);
	}
	json_builder_end_object(b);
	g_autoptr(JsonGenerator) g = json_generator_new();
	g_autoptr(JsonNode) root = json_builder_get_root(b);
	json_generator_set_root(g, root);
	return json_generator_to_data(g, NULL);
}

static bool get_int(JsonObject *o, const char *name, int64_t *out)
{
	JsonNode *n = json_object_get_member(o, name);
	if (!n)
		return true; /* absent: 0 */
	if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64)
		return false;
	*out = json_node_get_int(n);
	return true;
}

static bool get_str(JsonObject *o, const char *name, char **out)
{
	JsonNode *n = json_object_get_member(o, name);
	if (!n)
		return true;
	if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
		return false;
	*out = g_strdup(json_node_get_string(n));
	return true;
}

bool etcd_record_decode(const void *data, size_t len, etcd_record *r)
{
	memset(r, 0, sizeof(*r));
	if (len == 0 || len > 1u << 20)
		return false;
	g_autoptr(JsonParser) p = json_parser_new();
	if (!json_parser_load_from_data(p, data, (gssize)len, NULL))
		return false;
	JsonNode *root = json_parser_get_root(p);
	if (!root || !JSON_NODE_HOLDS_OBJECT(root))
		return false;
	JsonObject *o = json_node_get_object(root);
	int64_t v = 0, uid = 0, gid = 0, mode = 0;
	g_autofree char *lease = NULL, *content = NULL;
	lockfs_holder *h = &r->holder;
	bool ok = get_int(o, "v", &v) && v == RECORD_VERSION && get_str(o, "host", &h->host) &&
	          get_str(o, "mount", &r->mount) && get_int(o, "pid", &h->pid) &&
	          get_int(o, "uid", &uid) && get_int(o, "gid", &gid) &&
	          get_str(o, "user", &h->user) && get_str(o, "command", &h->command) &&
	          get_int(o, "acquired_us", &h->acquired_us) &&
	          get_int(o, "heartbeat_us", &h->heartbeat_us) && get_int(o, "mode", &mode) &&
	          get_int(o, "mtime_us", &h->mtime_us) && get_int(o, "atime_us", &h->atime_us) &&
	          get_int(o, "ctime_us", &h->ctime_us) && get_str(o, "nonce", &r->nonce) &&
	          get_str(o, "lease", &lease) && get_int(o, "ttl_ms", &r->ttl_ms) &&
	          get_int(o, "server_ms", &r->server_ms) && get_int(o, "idle_ms", &r->idle_ms) &&
	          get_str(o, "content", &content);
	if (ok && (uid < 0 || uid > UINT32_MAX || gid < 0 || gid > UINT32_MAX || mode < 0 ||
	           mode > UINT32_MAX || r->idle_ms < 0))
		ok = false;
	if (ok && lease) {
		char *end = NULL;
		r->lease = g_ascii_strtoll(lease, &end, 10);
		ok = end && end != lease && !*end;
	}
	if (ok && content) {
		gsize n = 0;
		guchar *bytes = g_base64_decode(content, &n);
		if (n > LOCKFS_CONTENT_MAX) {
			g_free(bytes);
			ok = false;
		} else {
			r->content = (char *)bytes;
			r->content_len = n;
		}
	}
	if (!ok) {
		etcd_record_clear(r);
		return false;
	}
	h->uid = (uint32_t)uid;
	h->gid = (uint32_t)gid;
	h->mode = (uint32_t)mode;
	return true;
}

bool etcd_record_stale(const etcd_record *r, int64_t now_low_ms, int64_t stale_after_ms)
{
	if (stale_after_ms <= 0 || r->server_ms <= 0)
		return false;
	/* server_ms is the high end of the writer's reading and now_low_ms the
	 * low end of ours: the age is never overestimated. */
	int64_t age = now_low_ms - r->server_ms;
	return age > stale_after_ms - r->idle_ms;
}
