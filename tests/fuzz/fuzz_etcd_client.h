/* fuzz_etcd_client.c's names for etcd_client.c's static reply handling. */
#ifndef LOCKFS_FUZZ_ETCD_CLIENT_H
#define LOCKFS_FUZZ_ETCD_CLIENT_H

#include "backends/etcd/etcd_client.h"

#include <stddef.h>

JsonNode *fz_parse_reply(const char *data, size_t len, char **why);
char *fz_error_text(JsonObject *o);
char *fz_plain_error(const char *data, size_t len);
bool fz_unavailable(long status, const char *err);
size_t fz_stream(const char *data, size_t len, size_t chunk, etcd_line_cb on_line, void *user);
int64_t fz_header(const char *data, size_t len);
void fz_client_set_date(etcd_client *c, int64_t date_s);

#endif
