/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer entry point: `make fuzz` builds it with clang.  */
#include "targets.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  return fuzz_one_icmp6 (data, size);
}
