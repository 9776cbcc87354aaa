/* The engine's pieces that its own modules and the unit tests share, and
 * nothing else: not part of any public header.  The unit tests build with
 * -Ihook.  */
#ifndef ROCE_INTERNAL_H
#define ROCE_INTERNAL_H

#include <stdbool.h>

#include "error.h"
#include "lease.h"
#include "oci.h"

/* ---- lease.c -------------------------------------------------------------- */

/* Parses / formats the store file's JSON.  */
int lease_store_parse (struct lease_store *s, const char *buf, roce_error_t *err);
char *lease_store_format (const struct lease_store *s);

/* ---- devcgroup.c ---------------------------------------------------------- */

/* The container's v1 devices directory and v2 directory (host paths; NULL
 * when that hierarchy is not there), from /proc/<pid>/cgroup and
 * /proc/self/mountinfo texts.  */
int devcg_find_dirs (const char *proc_cgroup, const char *mountinfo, char **v1_dir, char **v2_dir,
                     roce_error_t *err);
/* The access bits ("rw", "w", "") that a v1 devices.list lacks for opening
 * the char node read-write.  */
void devcg_v1_missing (const char *devices_list, unsigned major, unsigned minor, char out[3]);
/* Whether the spec's linux.resources.devices (later rules win) lets the
 * container open the char node read-write.  */
bool devcg_spec_allows (const struct oci_config *c, unsigned major, unsigned minor);

/* ---- qos_apply.c ---------------------------------------------------------- */

struct roce_policy;
struct qos_probe;
struct qa_plan;
/* The pfc and dscp items from a DCB probe (canned in the unit tests).  */
int qos_apply_plan_dcb (const struct roce_policy *p, const char *hca, const char *netdev,
                        unsigned groups, const struct qos_probe *pr, struct qa_plan *pl,
                        roce_error_t *err);

#endif
