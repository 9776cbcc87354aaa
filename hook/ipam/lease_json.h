/* SPDX-License-Identifier: Apache-2.0 */
/* The store file's JSON, shared by lease.c (which parses and formats it),
 * lease_store.c and the unit tests; not part of any public header.  */
#ifndef ROCE_IPAM_LEASE_JSON_H
#define ROCE_IPAM_LEASE_JSON_H

#include "error.h"
#include "lease.h"

/* Parses / formats the store file's JSON.  */
int lease_store_parse (struct lease_store *s, const char *buf, roce_error_t *err);
char *lease_store_format (const struct lease_store *s);

#endif
