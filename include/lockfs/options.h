/* Mount option lists, "-o ttl=30s,ldap_base=ou=locks\,dc=example", split the
 * way libfuse splits them for every FUSE program (fuse_opt_parse), so that
 * lockfs -o and lockfsctl check -o read the same text the same way:
 *   - a comma ends an item, and empty items are dropped;
 *   - "\," is a comma and "\\" a backslash inside an item;
 *   - "\NNN", three octal digits (the first 0-3), is that byte ("\054" a
 *     comma, as fstab(5) writes a space "\040");
 *   - a backslash before any other character stands for that character.
 */
#ifndef LOCKFS_OPTIONS_H
#define LOCKFS_OPTIONS_H

#include <glib.h>
#include <stdbool.h>

G_BEGIN_DECLS

/* Append TEXT's items to OUT (of g_free'd strings). */
void lockfs_options_split(const char *text, GPtrArray *out);

/* Append ITEM to the option list TO (after a comma unless TO is empty),
 * escaped so that splitting gives it back whole: "\," and "\\", as libfuse's
 * fuse_opt_add_opt_escaped() writes them. */
void lockfs_options_append(GString *to, const char *item);

G_END_DECLS
#endif
