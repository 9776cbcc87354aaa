/* SPDX-License-Identifier: Apache-2.0 */
/* Loading a library at run time (dl.h), for the dynamic programs.  */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "lib/dl.h"

void *
roce_dlopen (const char *file, int mode)
{
  return dlopen (file, mode);
}

void *
roce_dlsym (void *handle, const char *name)
{
  return dlsym (handle, name);
}

const char *
roce_dlerror (void)
{
  return dlerror ();
}
