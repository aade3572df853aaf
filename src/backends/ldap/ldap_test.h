/* Test hooks of the LDAP backend (ldap_test.c): only the unit tests' core
 * library has them (src/meson.build); lockfs and lockfsctl do not. */
#ifndef LOCKFS_LDAP_TEST_H
#define LOCKFS_LDAP_TEST_H

#include <lockfs/backend.h>
#include <stdint.h>

#ifndef LOCKFS_TEST_HOOKS
#error "ldap_test.h is for the unit tests, built with LOCKFS_TEST_HOOKS (core_test_dep)"
#endif

/* Run this instance's clock OFFSET_US off the host's (as a host whose clock
 * is off would): every time it writes or judges by. */
void lockfs_ldap_test_set_clock_offset(lockfs_backend *be, int64_t offset_us);
void lockfs_ldap_test_disable_caps(lockfs_backend *be, unsigned caps);
/* Drop the reading of the server's clock, as if none was ever taken. */
void lockfs_ldap_test_forget_clock(lockfs_backend *be);
unsigned lockfs_ldap_test_caps(lockfs_backend *be);

#endif
