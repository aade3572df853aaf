/* The static reply handling of etcd_client.c, for fuzz_etcd.c: this file is
 * compiled with it (so that its statics are in reach) and hands them on
 * under fuzz_etcd_client.h's names.  Test code, built into fuzz_etcd alone. */
#include "../../src/backends/etcd/etcd_client.c"

#include "fuzz_etcd_client.h"

JsonNode *fz_parse_reply(const char *data, size_t len, char **why)
{
	g_autoptr(GString) body = g_string_new_len(data, (gssize)len);
	return parse_reply(body, why);
}

char *fz_error_text(JsonObject *o)
{
	return error_text(o);
}

char *fz_plain_error(const char *data, size_t len)
{
	g_autoptr(GString) body = g_string_new_len(data, (gssize)len);
	return plain_error(body);
}

bool fz_unavailable(long status, const char *err)
{
	return unavailable(status, err) || auth_error(status, err);
}

/* DATA as a streamed body, in pieces of CHUNK bytes, each line to ON_LINE
 * as libcurl's calls would give it: how many bytes were taken. */
size_t fz_stream(const char *data, size_t len, size_t chunk, etcd_line_cb on_line, void *user)
{
	reply r = {
		.body = g_string_new(NULL), .date_s = -1, .on_line = on_line, .line_user = user
	};
	size_t taken = 0;
	for (size_t off = 0; off < len; off += chunk) {
		size_t n = MIN(chunk, len - off);
		size_t got = on_body((char *)data + off, 1, n, &r);
		taken += got;
		if (got != n)
			break;
	}
	g_string_free(r.body, TRUE);
	return taken;
}

/* DATA as a header line: the server's time it gives, or -1. */
int64_t fz_header(const char *data, size_t len)
{
	reply r = { .body = NULL, .date_s = -1 };
	g_autofree char *line = g_strndup(data, len);
	on_header(line, 1, strlen(line), &r);
	return r.date_s;
}

/* A client whose latest reply said the server's time was DATE_S. */
void fz_client_set_date(etcd_client *c, int64_t date_s)
{
	int64_t now = lockfs_mono_us();
	c->date_s = date_s;
	c->date_sent = c->date_read = now;
}
