/* The LDAP backend's test hooks (ldap_test.h): built only into the unit
 * tests' core library, with LOCKFS_TEST_HOOKS (src/meson.build), never into
 * lockfs or lockfsctl. */
#include "ldap_test.h"

#include "ldap_int.h"

#include <string.h>

void lockfs_ldap_test_set_clock_offset(lockfs_backend *be, int64_t offset_us)
{
	((ll_backend *)be)->clock_offset_us = offset_us;
}

void lockfs_ldap_test_forget_clock(lockfs_backend *b)
{
	ll_backend *be = (ll_backend *)b;
	g_mutex_lock(&be->clock_mu);
	memset(&be->clock, 0, sizeof(be->clock));
	g_mutex_unlock(&be->clock_mu);
}

void lockfs_ldap_test_disable_caps(lockfs_backend *be, unsigned caps)
{
	((ll_backend *)be)->caps &= ~caps;
}

unsigned lockfs_ldap_test_caps(lockfs_backend *be)
{
	return ((ll_backend *)be)->caps;
}
