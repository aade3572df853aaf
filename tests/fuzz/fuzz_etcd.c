/* libFuzzer target for what the etcd backend reads from etcd's JSON gateway:
 * a reply body (parse_reply(), the error texts, the kvs of a range, of a
 * txn's responses and of a listing page, lease grants and keep-alives, the
 * cluster id), a watch stream cut in pieces (on_body() and on_watch_line()),
 * a Date header (on_header()), and the holder record in a key's value
 * (etcd_record_decode(), etcd_record_stale(), and back through
 * etcd_record_encode()), a lock's lease token (parse_lease_token()).
 *
 * The input is all of those at once: a reply body, a stream, a header line,
 * a record and a token.  etcd.c is compiled into this file for its statics,
 * etcd_client.c into fuzz_etcd_client.c (the two have statics of the same
 * names), etcd_record.c beside them, all with the fuzzer's coverage.
 *
 *   build-fuzz/tests/fuzz/fuzz_etcd -dict=tests/fuzz/etcd.dict tests/fuzz/corpus/etcd */
#include "../../src/backends/etcd/etcd.c"

#include "fuzz_etcd_client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A backend with the prefix "/lockfs/", a client that read the server's
 * clock at 2026-01-02T03:04:05Z, and no lock of its own. */
static etcd_backend *fz_backend(void)
{
	static etcd_backend *b;
	if (b)
		return b;
	b = g_new0(etcd_backend, 1);
	etcd_client_opts o = { .endpoints = g_strsplit("http://127.0.0.1:2379", ",", -1) };
	b->cl = etcd_client_new(&o);
	fz_client_set_date(b->cl, 1767323045);
	b->prefix = g_strdup("/lockfs/");
	b->prefix_len = strlen(b->prefix);
	b->stale_after_ms = 300 * 1000;
	b->ttl_ms = 30 * 1000;
	g_mutex_init(&b->mu);
	b->mine = g_hash_table_new(g_str_hash, g_str_equal);
	return b;
}

/* A kv as inspect() and adopt() take it. */
static void use_kv(etcd_backend *b, const ekv *kv)
{
	lockfs_lock_info info;
	fill_info(b, kv, &info);
	lockfs_lock_info_clear(&info);
	etcd_record rec;
	if (adoptable(kv, kv->create_rev, "0123456789abcdef0123456789abcdef", kv->lease, &rec))
		etcd_record_clear(&rec);
}

/* A listing page as etcd_list() reads it. */
static void use_page(etcd_backend *b, JsonObject *o)
{
	JsonArray *kvs = etcd_json_array(o, "kvs");
	guint n = kvs ? json_array_get_length(kvs) : 0;
	for (guint i = 0; i < n; i++) {
		JsonNode *el = json_array_get_element(kvs, i);
		ekv kv;
		if (!JSON_NODE_HOLDS_OBJECT(el) || !ekv_from_json(json_node_get_object(el), &kv))
			continue;
		if (strlen(kv.key) > b->prefix_len)
			use_kv(b, &kv);
		ekv_clear(&kv);
	}
	(void)etcd_json_bool(o, "more");
}

static void use_reply(etcd_backend *b, const char *data, size_t len)
{
	g_autofree char *why = NULL;
	JsonNode *root = fz_parse_reply(data, len, &why);
	g_free(fz_plain_error(data, len));
	if (!root)
		return;
	JsonObject *o = json_node_get_object(root);
	g_autofree char *err = fz_error_text(o);
	(void)fz_unavailable(200, err);
	ekv kv;
	if (first_kv(o, "/lockfs/mail.lock", &kv)) {
		use_kv(b, &kv);
		ekv_clear(&kv);
	}
	(void)etcd_json_bool(o, "succeeded");
	for (guint i = 0; i < 2; i++)
		if (first_kv(txn_range(o, i), "/lockfs/mail.lock", &kv)) {
			use_kv(b, &kv);
			ekv_clear(&kv);
		}
	use_page(b, o);
	(void)etcd_json_int(o, "TTL", 0);
	(void)etcd_json_int(o, "ID", 0);
	(void)etcd_json_int(etcd_json_obj(o, "header"), "revision", 0);
	char *eps[] = { "http://b:2379", "http://a:2379", NULL };
	g_free(identity_of(b, o, eps));
	json_node_unref(root);
}

static void changed(const char *key, void *user)
{
	(void)key;
	(*(guint *)user)++;
}

static void use_record(const char *data, size_t len)
{
	etcd_record r;
	if (!etcd_record_decode(data, len, &r))
		return;
	(void)etcd_record_stale(&r, 1767323045000, 300 * 1000);
	(void)etcd_record_stale(&r, G_MAXINT64, 1);
	/* What is written back of it reads the same. */
	g_autofree char *again = etcd_record_encode(&r);
	etcd_record r2;
	if (!etcd_record_decode(again, strlen(again), &r2) || r2.server_ms != r.server_ms ||
	    r2.idle_ms != r.idle_ms || r2.content_len != r.content_len ||
	    g_strcmp0(r2.holder.host, r.holder.host) != 0 || r2.holder.pid != r.holder.pid)
		abort();
	etcd_record_clear(&r2);
	etcd_record_clear(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	etcd_backend *b = fz_backend();
	use_reply(b, text, size);
	guint seen = 0;
	watch_ctx w = { .b = b, .changed = changed, .user = &seen };
	fz_stream(text, size, size ? size : 1, on_watch_line, &w);
	fz_stream(text, size, 7, on_watch_line, &w);
	(void)fz_header(text, size);
	use_record(text, size);
	g_autofree char *token = g_strndup(text, size);
	int64_t rev;
	char nonce[NONCE_LEN + 1];
	if (parse_lease_token(token, &rev, nonce) && rev <= 0)
		abort();
	return 0;
}
