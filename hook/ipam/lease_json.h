/* SPDX-License-Identifier: Apache-2.0 */
/* The single-file store's JSON (leases.json, format 1): read by
 * lease_store.c when it moves an earlier version's store into the layout
 * of lease.h, and by the unit tests, which write stores in it.  lease_json.c
 * implements it with the holders' and blocks' JSON (lease_int.h).  */
#ifndef ROCE_IPAM_LEASE_JSON_H
#define ROCE_IPAM_LEASE_JSON_H

#include "error.h"
#include "ipam/lease.h"

/* Parses / formats the store file's JSON.  */
int lease_store_parse (struct lease_store *s, const char *buf, roce_error_t *err);
char *lease_store_format (const struct lease_store *s);

#endif
