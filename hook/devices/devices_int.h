/* SPDX-License-Identifier: Apache-2.0 */
/* The device cgroup's pieces that devcgroup.c and the unit tests share; not
 * part of any public header.  */
#ifndef ROCE_DEVICES_INT_H
#define ROCE_DEVICES_INT_H

#include <stdbool.h>

#include "lib/error.h"
#include "spec/oci.h"

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

#endif
