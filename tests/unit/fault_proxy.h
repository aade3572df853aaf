/* The fault suite's TCP proxy (tests/faults/proxy.py) for unit tests: a link
 * to a server that the test can make drop, reset or forward. */
#ifndef LOCKFS_TEST_FAULT_PROXY_H
#define LOCKFS_TEST_FAULT_PROXY_H

/* A proxy to UPSTREAM ("host:port") on a free loopback port, its control
 * socket in DIR: its port.  One proxy at a time. */
int fault_proxy_start(const char *upstream, const char *dir);
/* proxy.py ctl CMD [ARG] ("drop s2c", "forward", ...); asserts it answered ok. */
void fault_proxy_ctl(const char *cmd, const char *arg);
void fault_proxy_stop(void);

#endif
