/* SPDX-License-Identifier: Apache-2.0 */
/* One input through one parser.  The libFuzzer entry points (fuzz_*.c) and
 * the corpus replay in the unit tests (tests/unit/test_fuzz_corpus.c) call
 * the same functions.  Each returns 0; a bug shows as a sanitizer report. */
#ifndef ROCE_FUZZ_TARGETS_H
#define ROCE_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>

int fuzz_one_oci_state (const uint8_t *data, size_t size);
int fuzz_one_oci_config (const uint8_t *data, size_t size);
int fuzz_one_policy (const uint8_t *data, size_t size);
int fuzz_one_annot (const uint8_t *data, size_t size);
int fuzz_one_dcb (const uint8_t *data, size_t size);
int fuzz_one_etcd (const uint8_t *data, size_t size);
int fuzz_one_shim_process (const uint8_t *data, size_t size);
int fuzz_one_dcb_set (const uint8_t *data, size_t size);
int fuzz_one_lldp (const uint8_t *data, size_t size);
int fuzz_one_icmp (const uint8_t *data, size_t size);
int fuzz_one_icmp6 (const uint8_t *data, size_t size);
int fuzz_one_topo (const uint8_t *data, size_t size);
int fuzz_one_nri (const uint8_t *data, size_t size);
int fuzz_one_store (const uint8_t *data, size_t size);

/* The probe round that fuzz_one_icmp and fuzz_one_icmp6 match datagrams
 * against (and the unit tests, and tests/helpers/icmp-datagrams.py, which
 * writes their seed corpora): 198.18.10.150 -> 198.18.10.254 (AF_INET) or
 * fd00:10::150 -> fd00:10::254 (AF_INET6), id 0x5a17, three echoes from
 * sequence 0xfffe (it wraps), FUZZ_ICMP_PAYLOAD (2000) bytes of payload,
 * byte i (i * 7 + 13) & 0xff.  */
#define FUZZ_ICMP_PAYLOAD 2000
struct pmtu_echoes;
void fuzz_icmp_echoes (int family, struct pmtu_echoes *e);

struct fuzz_target
{
  const char *name;
  int (*one) (const uint8_t *data, size_t size);
};

extern const struct fuzz_target fuzz_targets[];

#endif
