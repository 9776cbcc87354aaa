/* roce-runtime: the runtime shim's pieces.  */
#ifndef ROCE_SHIM_H
#define ROCE_SHIM_H

#include "error.h"

/* The real runtime: `configured` (the policy's `runtime`) when set, else the
 * first of runc, crun on $PATH.  Never this program itself.  */
int shim_find_runtime (const char *configured, char **out, roce_error_t *err);

#endif
