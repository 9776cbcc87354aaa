/* SPDX-License-Identifier: Apache-2.0 */
/* The LLDP decoder: one received frame -> struct lldp_info.  Byte layouts
 * (802.1AB TLV header, 802.1Qaz ETS/PFC/APP, 802.3 MFS, CEE DCBX 1.01) as
 * lldpd, openlldp and the Wireshark dissector read them; every length is
 * checked before the bytes it covers are read.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/utils.h"
#include "lldp/lldp.h"

/* TLV types (802.1AB).  */
enum
{
  TLV_END = 0,
  TLV_CHASSIS = 1,
  TLV_PORT = 2,
  TLV_TTL = 3,
  TLV_PORT_DESC = 4,
  TLV_SYS_NAME = 5,
  TLV_ORG = 127,
};

static const uint8_t oui_8021[3] = { 0x00, 0x80, 0xc2 };
static const uint8_t oui_8023[3] = { 0x00, 0x12, 0x0f };
static const uint8_t oui_cee[3] = { 0x00, 0x1b, 0x21 };

/* 802.1Qaz subtypes, the 802.3 MFS subtype, CEE's DCBX 1.01 subtype and
 * its feature sub-TLVs.  */
enum
{
  QAZ_ETS_CFG = 9,
  QAZ_ETS_REC = 10,
  QAZ_PFC = 11,
  QAZ_APP = 12,
  DOT3_MFS = 4,
  CEE_DCBX_V101 = 2,
  CEE_SUB_PFC = 3,
  CEE_SUB_APP = 4,
};

#define APP_SEL_UDP 3
#define APP_SEL_ANY_PORT 4
#define APP_SEL_DSCP 5
#define CEE_APP_SEL_PORT 1

static uint16_t
be16 (const uint8_t *p)
{
  return (uint16_t) (p[0] << 8 | p[1]);
}

/* Notes a tolerated defect (the first in words); returns 0.  */
static int defect (struct lldp_info *in, const char *fmt, ...) ROCE_PRINTF (2, 3);

static int
defect (struct lldp_info *in, const char *fmt, ...)
{
  va_list ap;
  if (in->n_defects++ > 0)
    return 0;
  va_start (ap, fmt);
  vsnprintf (in->defect, sizeof (in->defect), fmt, ap);
  va_end (ap);
  return 0;
}

/* A string from the wire: printable ASCII kept, anything else '?', cut to
 * LLDP_TEXT_MAX - 1 bytes.  */
static void
text_copy (char *dst, const uint8_t *src, size_t len)
{
  size_t n = len < LLDP_TEXT_MAX - 1 ? len : LLDP_TEXT_MAX - 1;
  for (size_t i = 0; i < n; i++)
    dst[i] = (src[i] >= 0x20 && src[i] < 0x7f) ? (char) src[i] : '?';
  dst[n] = '\0';
  /* Trailing blanks (Onyx sends a port description of one space).  */
  while (n > 0 && dst[n - 1] == ' ')
    dst[--n] = '\0';
}

static void
mac_text (char *dst, size_t size, const uint8_t *m)
{
  snprintf (dst, size, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

/* Chassis ID subtype 4 and port ID subtype 3 are MACs; subtype 5 (chassis)
 * and 4 (port) network addresses (IPv4 formatted); the rest is text.  */
static void
id_text (char *dst, uint8_t subtype, bool chassis, const uint8_t *v, size_t len)
{
  uint8_t mac_sub = chassis ? 4 : 3, addr_sub = chassis ? 5 : 4;
  if (subtype == mac_sub && len == 6)
    mac_text (dst, LLDP_TEXT_MAX, v);
  else if (subtype == addr_sub && len == 5 && v[0] == 1)
    snprintf (dst, LLDP_TEXT_MAX, "%u.%u.%u.%u", v[1], v[2], v[3], v[4]);
  else
    text_copy (dst, v, len);
}

static void
ets_table (const uint8_t *p, uint8_t prio_tc[LLDP_NPRIO])
{
  for (int i = 0; i < 4; i++)
    {
      prio_tc[2 * i] = p[i] >> 4;
      prio_tc[2 * i + 1] = p[i] & 0x0f;
    }
}

/* The 802.1Qaz TLVs.  v: the info string after OUI and subtype.  */
static int
org_8021 (struct lldp_info *in, uint8_t sub, const uint8_t *v, size_t len)
{
  switch (sub)
    {
      case QAZ_ETS_CFG:
        if (len != 21)
          return defect (in, "an ETS configuration TLV of %zu bytes (21 expected): ignored", len);
        if (in->has_ets)
          return defect (in, "a second ETS configuration TLV: ignored");
        in->has_ets = true;
        in->ets_willing = (v[0] & 0x80) != 0;
        /* Onyx sends 0x08 here: the count is 3 bits, and 0 means 8.  */
        in->ets_max_tcs = (v[0] & 0x07) ? (v[0] & 0x07) : 8;
        ets_table (v + 1, in->prio_tc);
        memcpy (in->tc_bw, v + 5, LLDP_NPRIO);
        memcpy (in->tsa, v + 13, LLDP_NPRIO);
        return 0;
      case QAZ_ETS_REC:
        if (len != 21)
          return defect (in, "an ETS recommendation TLV of %zu bytes (21 expected): ignored", len);
        if (in->has_ets_rec)
          return defect (in, "a second ETS recommendation TLV: ignored");
        in->has_ets_rec = true;
        ets_table (v + 1, in->rec_prio_tc);
        return 0;
      case QAZ_PFC:
        if (len != 2)
          return defect (in, "a PFC configuration TLV of %zu bytes (2 expected): ignored", len);
        if (in->has_pfc)
          return defect (in, "a second PFC configuration TLV: ignored");
        in->has_pfc = true;
        in->pfc_willing = (v[0] & 0x80) != 0;
        in->pfc_mbc = (v[0] & 0x40) != 0;
        in->pfc_cap = v[0] & 0x0f;
        in->pfc_en = v[1];
        return 0;
      case QAZ_APP:
        if (len < 1 || (len - 1) % 3 != 0)
          return defect (in, "an application priority TLV of %zu bytes (1 + 3n expected): ignored",
                         len);
        if (in->has_app)
          return defect (in, "a second application priority TLV: ignored");
        in->has_app = true;
        for (size_t off = 1; off + 3 <= len; off += 3)
          {
            uint8_t prio = v[off] >> 5, sel = v[off] & 0x07;
            uint16_t proto = be16 (v + off + 1);
            in->n_app++;
            if (sel == APP_SEL_DSCP && proto < LLDP_NDSCP)
              {
                if (in->dscp_prio[proto] == 0)
                  in->n_dscp++;
                in->dscp_prio[proto] |= (uint8_t) (1u << prio);
              }
            else if ((sel == APP_SEL_UDP || sel == APP_SEL_ANY_PORT) && proto == LLDP_ROCE_UDP_PORT)
              in->udp_roce_prio |= (uint8_t) (1u << prio);
          }
        return 0;
      default:
        return 0; /* VLANs, link aggregation, congestion notification... */
    }
}

/* CEE DCBX 1.01: sub-TLVs with the 7/9-bit header; each feature's starts
 * with oper_version, max_version, flags (Enable, Willing, Error), subtype.  */
static int
org_cee (struct lldp_info *in, const uint8_t *v, size_t len)
{
  size_t off = 0;
  while (off + 2 <= len)
    {
      uint16_t h = be16 (v + off);
      unsigned type = h >> 9, sl = h & 0x1ff;
      const uint8_t *s = v + off + 2;
      if (sl > len - off - 2)
        return defect (in, "a CEE DCBX sub-TLV runs past its TLV: the rest ignored");
      off += 2 + sl;
      if (type == CEE_SUB_PFC)
        {
          if (sl != 6)
            {
              defect (in, "a CEE PFC sub-TLV of %u bytes (6 expected): ignored", sl);
              continue;
            }
          if (in->has_cee_pfc)
            continue;
          in->has_cee_pfc = true;
          in->cee_pfc_enabled = (s[2] & 0x80) != 0;
          in->cee_pfc_willing = (s[2] & 0x40) != 0;
          in->cee_pfc_en = s[4];
        }
      else if (type == CEE_SUB_APP)
        {
          if (sl < 4 || (sl - 4) % 6 != 0)
            {
              defect (in, "a CEE application sub-TLV of %u bytes (4 + 6n expected): ignored", sl);
              continue;
            }
          if (in->has_cee_app)
            continue;
          in->has_cee_app = true;
          for (size_t e = 4; e + 6 <= sl; e += 6)
            if ((s[e + 2] & 0x03) == CEE_APP_SEL_PORT && be16 (s + e) == LLDP_ROCE_UDP_PORT)
              in->cee_udp_roce_prio |= s[e + 5];
        }
    }
  return 0;
}

static int
org_tlv (struct lldp_info *in, const uint8_t *v, size_t len)
{
  if (len < 4)
    return defect (in, "an organizationally specific TLV of %zu bytes (4 at least): ignored", len);
  if (memcmp (v, oui_8021, 3) == 0)
    return org_8021 (in, v[3], v + 4, len - 4);
  else if (memcmp (v, oui_8023, 3) == 0 && v[3] == DOT3_MFS)
    {
      if (len != 6)
        return defect (in, "a maximum frame size TLV of %zu bytes (6 expected): ignored", len);
      if (in->has_mfs)
        return defect (in, "a second maximum frame size TLV: ignored");
      in->has_mfs = true;
      in->mfs = be16 (v + 4);
    }
  else if (memcmp (v, oui_cee, 3) == 0 && v[3] == CEE_DCBX_V101)
    return org_cee (in, v + 4, len - 4);
  return 0;
}

static int
refuse (roce_error_t *err, const char *what)
{
  return roce_error_make (err, EINVAL, "not an LLDPDU: %s", what);
}

/* The three mandatory TLVs, in order.  */
static int
mandatory (struct lldp_info *in, unsigned idx, unsigned type, const uint8_t *v, size_t len,
           roce_error_t *err)
{
  static const char *const names[] = { "chassis ID", "port ID", "TTL" };
  if (type != idx + 1)
    {
      char msg[96];
      snprintf (msg, sizeof (msg), "TLV %u is of type %u (the %s TLV must come there)", idx + 1,
                type, names[idx]);
      return refuse (err, msg);
    }
  switch (type)
    {
      case TLV_CHASSIS:
      case TLV_PORT:
        if (len < 2 || len > 256)
          return refuse (err, type == TLV_CHASSIS ? "a chassis ID of a wrong length"
                                                  : "a port ID of a wrong length");
        if (type == TLV_CHASSIS)
          {
            in->chassis_subtype = v[0];
            id_text (in->chassis, v[0], true, v + 1, len - 1);
          }
        else
          {
            in->port_subtype = v[0];
            id_text (in->port, v[0], false, v + 1, len - 1);
          }
        return 0;
      default:
        if (len < 2)
          return refuse (err, "a TTL TLV shorter than 2 bytes");
        in->ttl = be16 (v);
        return 0;
    }
}

static enum lldp_dest
dest_of (const uint8_t *da)
{
  static const uint8_t base[5] = { 0x01, 0x80, 0xc2, 0x00, 0x00 };
  if (memcmp (da, base, 5) != 0)
    return LLDP_DEST_OTHER;
  return da[5] == 0x0e   ? LLDP_DEST_NEAREST_BRIDGE
         : da[5] == 0x03 ? LLDP_DEST_NON_TPMR
         : da[5] == 0x00 ? LLDP_DEST_CUSTOMER
                         : LLDP_DEST_OTHER;
}

int
lldp_decode (const uint8_t *frame, size_t len, struct lldp_info *out, roce_error_t *err)
{
  size_t off = 14;
  unsigned idx = 0;
  uint16_t et;

  memset (out, 0, sizeof (*out));
  if (len < 14)
    return refuse (err, "shorter than an Ethernet header");
  out->dest = dest_of (frame);
  memcpy (out->src, frame + 6, 6);
  et = be16 (frame + 12);
  if ((et == 0x8100 || et == 0x88a8) && len >= 18)
    {
      out->tagged = true;
      out->vlan = be16 (frame + 14) & 0x0fff;
      et = be16 (frame + 16);
      off = 18;
    }
  if (et != LLDP_ETHERTYPE)
    return refuse (err, "another EtherType");
  while (off + 2 <= len)
    {
      uint16_t h = be16 (frame + off);
      unsigned type = h >> 9;
      size_t tl = h & 0x1ff;
      const uint8_t *v = frame + off + 2;

      if (tl > len - off - 2)
        return refuse (err, "a TLV runs past the end of the frame");
      off += 2 + tl;
      if (idx < 3)
        {
          if (mandatory (out, idx, type, v, tl, err) < 0)
            return -1;
          idx++;
          continue;
        }
      switch (type)
        {
          case TLV_END:
            return 0;
          case TLV_CHASSIS:
          case TLV_PORT:
          case TLV_TTL:
            defect (out, "a second TLV of type %u: ignored", type);
            break;
          case TLV_PORT_DESC:
            text_copy (out->port_desc, v, tl);
            break;
          case TLV_SYS_NAME:
            text_copy (out->sys_name, v, tl);
            break;
          case TLV_ORG:
            (void) org_tlv (out, v, tl);
            break;
          default:
            break;
        }
    }
  if (idx < 3)
    return refuse (err, "the chassis ID, port ID and TTL TLVs are not all there");
  if (off != len && len - off == 1)
    defect (out, "one byte after the last TLV: ignored");
  return 0;
}

void
lldp_identity (const struct lldp_info *in, char *buf, size_t size)
{
  const char *port = in->port;
  if ((in->port_subtype == 3 || in->port[0] == '\0') && in->port_desc[0])
    port = in->port_desc;
  snprintf (buf, size, "%s %s", in->sys_name[0] ? in->sys_name : in->chassis, port[0] ? port : "?");
}

void
lldp_prio_list (uint8_t mask, char *buf, size_t size)
{
  size_t n = 0;
  if (size == 0)
    return;
  buf[0] = '\0';
  for (int p = 0; p < LLDP_NPRIO; p++)
    if (mask & (1u << p))
      n += (size_t) snprintf (buf + n, n < size ? size - n : 0, "%s%d", n ? "," : "", p);
  if (n == 0)
    snprintf (buf, size, "none");
}

void
lldp_summary (const struct lldp_info *in, char *buf, size_t size)
{
  char pfc[32], udp[32], tc[64] = "no ETS";
  size_t n;

  if (in->has_pfc)
    lldp_prio_list (in->pfc_en, pfc, sizeof (pfc));
  else if (in->has_cee_pfc)
    lldp_prio_list (in->cee_pfc_en, pfc, sizeof (pfc));
  lldp_prio_list (in->udp_roce_prio | in->cee_udp_roce_prio, udp, sizeof (udp));
  if (in->has_ets || in->has_ets_rec)
    {
      const uint8_t *m = in->has_ets ? in->prio_tc : in->rec_prio_tc;
      snprintf (tc, sizeof (tc), "prio->tc %u,%u,%u,%u,%u,%u,%u,%u", m[0], m[1], m[2], m[3], m[4],
                m[5], m[6], m[7]);
    }
  n = (size_t) snprintf (buf, size, "%s%s%s; APP %u DSCP entries, UDP 4791 -> %s; ",
                         in->has_pfc       ? "PFC on "
                         : in->has_cee_pfc ? "CEE PFC on "
                                           : "no PFC TLV",
                         in->has_pfc || in->has_cee_pfc ? pfc : "",
                         in->has_pfc && in->pfc_willing ? " (willing)" : "", in->n_dscp, udp);
  if (n < size && in->has_mfs)
    n += (size_t) snprintf (buf + n, size - n, "MFS %u; %s; TTL %u", in->mfs, tc, in->ttl);
  else if (n < size)
    n += (size_t) snprintf (buf + n, size - n, "no MFS; %s; TTL %u", tc, in->ttl);
}
