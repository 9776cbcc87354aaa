/* SPDX-License-Identifier: Apache-2.0 */
/* DCB netlink (dcbnl): a netdev's IEEE 802.1Qaz state as the kernel reports
 * it to RTM_GETDCB / DCB_CMD_IEEE_GET: PFC enable bits, the ETS prio->tc
 * map, the APP table's DSCP entries (a non-empty DSCP table is what "trust
 * dscp" means on upstream mlx5) and the DCBX mode.
 *
 * libnl-route has no DCB API: the request is built and the reply parsed here
 * with libnl-3 core, every attribute checked against a policy and its length.
 * Building, parsing and talking to the kernel are separate steps, so the unit
 * tests feed canned kernel replies to the very parser the probe uses.  */
#ifndef ROCE_DCB_H
#define ROCE_DCB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

struct nl_msg;
struct nlmsghdr;

#define DCB_NPRIO 8
#define DCB_NDSCP 64
/* sizeof (struct ieee_pfc): pfc_cap, pfc_en, mbc, delay, requests[8],
 * indications[8].  */
#define DCB_IEEE_PFC_LEN 136

/* Kernel >= 6.3 additions that Debian 12's UAPI headers lack (same values as
 * include/uapi/linux/dcbnl.h upstream).  */
#define DCB_ATTR_DCB_APP_TRUST_TABLE_ 11
#define DCB_ATTR_DCB_REWR_TABLE_ 12
#define DCB_ATTR_DCB_APP_ 2 /* PCP (selector 255) entries in an APP table */

struct dcb_ieee
{
  bool has_pfc; /* the driver answered ieee_getpfc */
  uint8_t pfc_cap;
  uint8_t pfc_en; /* bit p: PFC on priority p */
  uint8_t mbc;
  uint16_t pfc_delay;
  /* The driver's struct ieee_pfc as it came: a PFC set writes it back with
   * only the enable bits changed (read-modify-write, as `dcb pfc set`).  */
  uint8_t pfc_raw[DCB_IEEE_PFC_LEN];
  bool has_ets;
  uint8_t prio_tc[DCB_NPRIO];
  bool has_app_table;
  size_t n_app;                 /* every APP entry */
  size_t n_dscp;                /* DSCP (selector 5) entries */
  uint8_t dscp_prio[DCB_NDSCP]; /* bit p: DSCP d -> priority p */
  bool has_dcbx;
  uint8_t dcbx; /* DCB_CAP_DCBX_* */
};

/* The exchange in progress: one request, its reply, its ack.  */
struct dcb_reply
{
  uint32_t seq;
  bool have_data;
  bool done;
  struct dcb_ieee ieee;
};

/* RTM_GETDCB, NLM_F_REQUEST | NLM_F_ACK, struct dcbmsg { AF_UNSPEC,
 * DCB_CMD_IEEE_GET }, DCB_ATTR_IFNAME.  */
int dcb_build_ieee_get (const char *ifname, struct nl_msg **out, roce_error_t *err);

/* Parses one RTM_GETDCB / DCB_CMD_IEEE_GET message.  A malformed message is
 * EBADMSG, with what is wrong.  */
int dcb_parse_ieee (const struct nlmsghdr *nlh, struct dcb_ieee *out, roce_error_t *err);

void dcb_reply_init (struct dcb_reply *r, uint32_t seq);
/* Feeds one datagram as received from the socket (one or more netlink
 * messages; other sequence numbers are skipped).  Returns 0 and sets r->done
 * once the reply and its ack are in; < 0 on a kernel error (err->status is
 * its errno, the message carries the kernel's extended-ack text) or on a
 * malformed answer (EBADMSG).  */
int dcb_reply_feed (struct dcb_reply *r, const void *buf, size_t len, roce_error_t *err);

/* Asks the kernel (in the caller's network namespace).  EOPNOTSUPP: the
 * netdev has no DCB; ENODEV: no such netdev.  */
int dcb_query_ieee (const char *ifname, struct dcb_ieee *out, roce_error_t *err);
/* The same on `host`, a NETLINK_ROUTE socket of the host's namespace that
 * libnl-route calls may share (NULL: a socket of its own).  */
struct nl_sock;
int dcb_query_ieee_on (struct nl_sock *host, const char *ifname, struct dcb_ieee *out,
                       roce_error_t *err);

/* ---- set messages (RTM_SETDCB) ----------------------------------------------- */

/* One IEEE APP table entry, struct dcb_app's fields.  */
struct dcb_app_entry
{
  uint8_t selector; /* IEEE_8021QAZ_APP_SEL_DSCP (5) for DSCP */
  uint8_t priority;
  uint16_t protocol; /* the DSCP value */
};

/* RTM_SETDCB, NLM_F_REQUEST | NLM_F_ACK, struct dcbmsg { AF_UNSPEC,
 * DCB_CMD_IEEE_SET }, DCB_ATTR_IFNAME, DCB_ATTR_IEEE { DCB_ATTR_IEEE_PFC
 * (the 136 bytes of `now` with pfc_en replaced) }.  `now` is what
 * DCB_CMD_IEEE_GET returned (has_pfc).  */
int dcb_build_pfc_set (const char *ifname, const struct dcb_ieee *now, uint8_t pfc_en,
                       struct nl_msg **out, roce_error_t *err);
/* RTM_SETDCB, cmd DCB_CMD_IEEE_SET (add) or DCB_CMD_IEEE_DEL (delete),
 * DCB_ATTR_IFNAME, DCB_ATTR_IEEE { DCB_ATTR_IEEE_APP_TABLE { n x
 * DCB_ATTR_IEEE_APP (struct dcb_app) } }.  n must be 1..64.  */
int dcb_build_app (const char *ifname, uint8_t cmd, const struct dcb_app_entry *v, size_t n,
                   struct nl_msg **out, roce_error_t *err);

/* The DSCP APP entries that make DSCP `dscp` map to `prio` alone, as
 * `dcb app replace` does: the entry to add (none when it is there) and the
 * entries of that DSCP on other priorities to delete afterwards (adding
 * first keeps the table non-empty, so the port never drops to trust pcp on
 * the way).  */
struct dcb_app_diff
{
  size_t n_add;
  struct dcb_app_entry add[1];
  size_t n_del;
  struct dcb_app_entry del[DCB_NPRIO];
};
void dcb_app_diff (const struct dcb_ieee *now, unsigned dscp, unsigned prio,
                   struct dcb_app_diff *out);

/* The exchange of one set: dcbnl_ieee_set()/dcbnl_ieee_del() answer with
 * RTM_SETDCB { dcbmsg cmd, DCB_ATTR_IEEE u8 status } (the status is the
 * driver's negative errno cut to a byte; 0 done), then the ack.  */
struct dcb_set_reply
{
  uint32_t seq;
  uint8_t cmd;
  bool have_status;
  bool done;
};
void dcb_set_reply_init (struct dcb_set_reply *r, uint32_t seq, uint8_t cmd);
/* As dcb_reply_feed; a non-zero status fails with its errno (EEXIST,
 * EINVAL...), saying the driver refused.  */
int dcb_set_reply_feed (struct dcb_set_reply *r, const void *buf, size_t len, roce_error_t *err);
/* Sends a built set message and waits for its answer (the caller's network
 * namespace).  */
int dcb_set_send (const char *ifname, struct nl_msg *m, roce_error_t *err);

/* The priorities DSCP d maps to (a bit mask; 0 when unmapped).  */
uint8_t dcb_dscp_prios (const struct dcb_ieee *d, unsigned dscp);
/* "0,3,5", or "none".  Caller frees.  */
char *dcb_prio_list (uint8_t mask);
/* "host (OS) controlled, IEEE" etc., for reports.  Caller frees.  */
char *dcb_dcbx_text (uint8_t dcbx);

#endif
