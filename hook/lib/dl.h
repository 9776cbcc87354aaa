/* SPDX-License-Identifier: Apache-2.0 */
/* Loading a library at run time (libibverbs for the devices, libcurl for
 * etcd), in one place: hook/lib/dl.c in the dynamic programs; the static
 * ones (roce-hook, roce-runtime-engine) link hook/static_libc.c instead,
 * where loading always fails saying so (roce-hook-engine does it).  */
#ifndef ROCE_DL_H
#define ROCE_DL_H

#include <dlfcn.h>

void *roce_dlopen (const char *file, int mode);
void *roce_dlsym (void *handle, const char *name);
const char *roce_dlerror (void);

#endif
