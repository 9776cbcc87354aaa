/* `roce-hook cdi`: a Container Device Interface spec (kind roce.io/hca) with
 * one device per policy HCA, for CRI-O, Podman and containerd 1.7+ users who
 * prefer CDI for devices (`--device roce.io/hca=mlx5_0`).  */
#ifndef ROCE_CDI_H
#define ROCE_CDI_H

#include <stdio.h>

#include "error.h"
#include "policy.h"

/* Writes the spec as JSON to out.  */
int cdi_write_spec (const struct roce_policy *p, FILE *out, roce_error_t *err);

/* roce-hook [--config F] cdi [--output FILE]: exit 0 written, 2 cannot.
 * FILE is replaced atomically.  */
int roce_cdi_main (const char *config_path, int argc, char **argv);

#endif
