/* SPDX-License-Identifier: Apache-2.0 */
/* LLDP from the switch port at the far end of each policy netdev: what the
 * switch says about its lossless set-up (802.1AB frames, the IEEE 802.1Qaz
 * DCBX TLVs, 802.3 maximum frame size, CEE DCBX as a fallback).
 *
 * 1. Decode (lldp.c): one received Ethernet frame -> struct lldp_info.  A
 *    frame is hostile input: every length is checked before it is read, the
 *    strings kept are printable ASCII only, and nothing but the fixed-size
 *    struct is filled (no allocation).
 * 2. Record (lldp_record.c): the last frame heard on a netdev, with the time
 *    it was heard, kept as <state_dir>/lldp/<netdev>.json (replaced
 *    atomically); readers never wait for a frame.
 * 3. Listen (lldp_listen.c): AF_PACKET, EtherType 0x88CC, the nearest-bridge
 *    group 01:80:c2:00:00:0e; receive only, never transmits.
 * 4. Verdict (qos/qos_switch.c, the gate's): the record against the policy
 *    (qos.switch): switch-lldp, switch-pfc, switch-dscp, switch-mfs,
 *    switch-tc, each OK / FAIL / UNKNOWN.  */
#ifndef ROCE_LLDP_H
#define ROCE_LLDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "lib/error.h"

#define LLDP_ETHERTYPE 0x88CC
/* The largest LLDPDU kept: a 1500-byte payload plus Ethernet and VLAN
 * headers.  A longer frame is cut there (the TLV that runs past it is then
 * truncated, and the frame refused).  */
#define LLDP_FRAME_MAX 1522
#define LLDP_TEXT_MAX 64 /* a kept string: printable ASCII, at most 63 bytes */
#define LLDP_NPRIO 8
#define LLDP_NDSCP 64
#define LLDP_ROCE_UDP_PORT 4791

enum lldp_dest
{
  LLDP_DEST_NEAREST_BRIDGE, /* 01:80:c2:00:00:0e, the switch port */
  LLDP_DEST_NON_TPMR,       /* 01:80:c2:00:00:03 */
  LLDP_DEST_CUSTOMER,       /* 01:80:c2:00:00:00 */
  LLDP_DEST_OTHER,
};

struct lldp_info
{
  uint8_t src[6];
  enum lldp_dest dest;
  bool tagged; /* an 802.1Q tag before the EtherType */
  uint16_t vlan;
  /* Mandatory TLVs (1, 2, 3, in that order).  */
  uint8_t chassis_subtype;
  char chassis[LLDP_TEXT_MAX]; /* a MAC as aa:bb:.., an IPv4 address, or text */
  uint8_t port_subtype;
  char port[LLDP_TEXT_MAX];
  unsigned ttl; /* seconds; 0: the switch withdraws what it said */
  char port_desc[LLDP_TEXT_MAX];
  char sys_name[LLDP_TEXT_MAX];
  /* IEEE 802.1Qaz, OUI 00-80-C2.  */
  bool has_ets; /* ETS Configuration (subtype 9) */
  bool ets_willing;
  uint8_t ets_max_tcs; /* 1..8 (0 on the wire means 8) */
  uint8_t prio_tc[LLDP_NPRIO];
  uint8_t tc_bw[LLDP_NPRIO];
  uint8_t tsa[LLDP_NPRIO];
  bool has_ets_rec; /* ETS Recommendation (subtype 10) */
  uint8_t rec_prio_tc[LLDP_NPRIO];
  bool has_pfc; /* PFC Configuration (subtype 11) */
  bool pfc_willing;
  bool pfc_mbc;
  uint8_t pfc_cap;
  uint8_t pfc_en; /* bit p: PFC on priority p */
  bool has_app;   /* Application Priority (subtype 12) */
  unsigned n_app;
  unsigned n_dscp;               /* selector 5 entries */
  uint8_t dscp_prio[LLDP_NDSCP]; /* bit p: DSCP d -> priority p */
  uint8_t udp_roce_prio;         /* bit p: UDP 4791 (selector 3 or 4) -> priority p */
  /* IEEE 802.3, OUI 00-12-0F, subtype 4.  */
  bool has_mfs;
  unsigned mfs; /* the whole frame (MTU + 14 + 4, + 4 tagged) */
  /* CEE DCBX 1.01, OUI 00-1B-21 subtype 2: the PFC and APP features.  */
  bool has_cee_pfc;
  bool cee_pfc_enabled; /* the feature's Enable flag */
  bool cee_pfc_willing;
  uint8_t cee_pfc_en;
  bool has_cee_app;
  uint8_t cee_udp_roce_prio;
  /* Defects that were tolerated (a TLV of a wrong length or a duplicate is
   * ignored): how many, and the first, in words.  */
  unsigned n_defects;
  char defect[96];
};

/* Decodes one Ethernet frame as AF_PACKET/SOCK_RAW delivers it (no FCS).
 * Refuses (EINVAL, a message without any byte of the frame) what is not an
 * LLDPDU: short, another EtherType, missing or misordered mandatory TLVs, a
 * TLV running past the end.  End of buffer ends the PDU as the End TLV does.  */
int lldp_decode (const uint8_t *frame, size_t len, struct lldp_info *out, roce_error_t *err);

/* "leaf-07 Ethernet1/3": the system name and the port (the port description
 * when the port ID is a MAC and a description was sent).  */
void lldp_identity (const struct lldp_info *in, char *buf, size_t size);
/* "3,4" / "none".  */
void lldp_prio_list (uint8_t mask, char *buf, size_t size);

/* ---- the record ---------------------------------------------------------------- */

enum lldp_seen_state
{
  LLDP_SEEN_NONE,    /* nothing heard (no record) */
  LLDP_SEEN_EXPIRED, /* heard, but longer ago than its TTL (or TTL 0) */
  LLDP_SEEN_INVALID, /* a record that cannot be read or a frame that does not decode */
  LLDP_SEEN_OK,
};

struct lldp_seen
{
  enum lldp_seen_state state;
  char *path;       /* the record's */
  char *detail;     /* NONE/INVALID: why */
  int64_t heard;    /* unix seconds */
  int64_t age;      /* seconds since heard */
  bool host_tagged; /* the host netdev is a VLAN device (MFS needs 4 more) */
  struct lldp_info info;
};

/* <state_dir>/lldp/<netdev>.json.  Caller frees.  */
char *lldp_record_path (const char *state_dir, const char *netdev);
/* The record's text: {"version":1,"netdev":..,"heard":..,"ttl":..,"frame":"<hex>"}.  */
char *lldp_record_format (const char *netdev, int64_t heard, const uint8_t *frame, size_t len);
/* Parses a record's text: the frame and when it was heard.  */
int lldp_record_parse (const char *text, size_t tlen, uint8_t *frame, size_t *len, int64_t *heard,
                       roce_error_t *err);
/* Writes the record atomically (state_dir/lldp is made when missing).  */
int lldp_record_write (const char *state_dir, const char *netdev, int64_t heard,
                       const uint8_t *frame, size_t len, roce_error_t *err);
/* What was heard on netdev, as of `now` (unix seconds): never fails, never
 * waits; the state says what is known.  sysfs_root: where to read whether
 * the netdev is a VLAN device.  */
void lldp_seen_load (const char *state_dir, const char *sysfs_root, const char *netdev, int64_t now,
                     struct lldp_seen *out);
void lldp_seen_clear (struct lldp_seen *s);
const char *lldp_seen_state_name (enum lldp_seen_state s);

/* ---- the listener --------------------------------------------------------------- */

/* One netdev listened on.  Fixed size: memory does not grow with frames.  */
struct lldp_port
{
  char netdev[16];
  int fd;                /* -1: not open (missing netdev: retried) */
  uint64_t frames;       /* LLDPDUs to the nearest-bridge address that decoded */
  uint64_t ignored;      /* other destinations, our own outgoing frames */
  uint64_t invalid;      /* did not decode, or longer than LLDP_FRAME_MAX */
  uint64_t written;      /* records replaced */
  bool pending;          /* a frame not yet in the record */
  int64_t heard;         /* unix seconds of the last good frame */
  int64_t last_write_ms; /* monotonic */
  size_t len;
  uint8_t frame[LLDP_FRAME_MAX];
  char error[128]; /* why it is not open, or the last frame refused */
};

/* Listens on each of netdevs (host network namespace) for `seconds` (0:
 * until SIGTERM or SIGINT), keeping each netdev's record: a frame is written
 * at once, and another at most once a second per netdev (the last of them
 * wins).  A line per change of what a switch says goes to out (NULL: none).
 * ports: n entries, filled in (the caller reads the counts).  Fails only when
 * no netdev can be listened on.  */
int lldp_listen (const char *state_dir, char *const *netdevs, size_t n, unsigned seconds, FILE *out,
                 struct lldp_port *ports, roce_error_t *err);
/* "PFC on 3, DSCP 26 -> 3, MFS 9216, 3 in TC3": what a frame advertises,
 * in one line.  */
void lldp_summary (const struct lldp_info *in, char *buf, size_t size);

#endif
