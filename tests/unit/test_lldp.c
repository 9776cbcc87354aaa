/* SPDX-License-Identifier: Apache-2.0 */
/* The LLDP decoder on two real switch frames (NVIDIA Onyx SN3700, Aruba CX
 * 8100) and variants of them (tests/fixtures/fuzz/lldp/, made by
 * tests/helpers/lldp-frames.py), hostile frames, the record kept under
 * state_dir, and the gate's switch verdicts.  */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "lib/utils.h"
#include "lldp/lldp.h"
#include "qos/qos.h"
#include "unit.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif

struct frame
{
  uint8_t b[LLDP_FRAME_MAX];
  size_t len;
};

static struct frame
load (const char *name)
{
  cleanup_free char *path = xasprintf ("%s/fuzz/lldp/%s", FIXTURES, name);
  cleanup_free char *buf = NULL;
  cleanup_error roce_error_t err = NULL;
  struct frame f = { 0 };
  cr_assert_eq (read_file_at (AT_FDCWD, path, LLDP_FRAME_MAX, &buf, &f.len, &err), 0, "%s", path);
  memcpy (f.b, buf, f.len);
  return f;
}

static struct lldp_info
decode_ok (const struct frame *f)
{
  cleanup_error roce_error_t err = NULL;
  struct lldp_info in;
  cr_assert_eq (lldp_decode (f->b, f->len, &in, &err), 0, "%s", err ? err->msg : "");
  return in;
}

Test (lldp, onyx_sn3700_capture)
{
  struct frame f = load ("onyx-sn3700");
  struct lldp_info in = decode_ok (&f);
  char id[160];

  cr_assert_eq (f.len, 180);
  cr_assert_eq (in.dest, LLDP_DEST_NEAREST_BRIDGE);
  cr_assert_str_eq (in.chassis, "b8:59:9f:a9:9c:00");
  cr_assert_eq (in.port_subtype, 5);
  cr_assert_str_eq (in.port, "Eth1/1");
  cr_assert_eq (in.ttl, 120);
  cr_assert_str_eq (in.sys_name, "anc-dx-t1");
  cr_assert_str_eq (in.port_desc, "", "Onyx's one-space description is blank");
  /* ETS: Onyx puts 0x08 in the Max-TCs byte (0 in 3 bits: 8).  */
  cr_assert (in.has_ets);
  cr_assert_eq (in.ets_max_tcs, 8);
  cr_assert_not (in.ets_willing);
  cr_assert_eq (in.prio_tc[3], 3);
  cr_assert_eq (in.prio_tc[6], 6);
  cr_assert_eq (in.prio_tc[0], 0);
  cr_assert_eq (in.tc_bw[0], 50);
  cr_assert_eq (in.tc_bw[3], 50);
  cr_assert_eq (in.tsa[6], 0, "TC6 strict");
  cr_assert_eq (in.tsa[0], 2, "TC0 ETS");
  cr_assert (in.has_ets_rec);
  cr_assert_eq (in.rec_prio_tc[3], 3);
  cr_assert (in.has_pfc);
  cr_assert_eq (in.pfc_en, 0x08);
  cr_assert_eq (in.pfc_cap, 8);
  cr_assert_not (in.pfc_willing);
  cr_assert (in.has_app);
  cr_assert_eq (in.n_app, 1);
  cr_assert_eq (in.n_dscp, 0);
  cr_assert_eq (in.udp_roce_prio, 0x08, "UDP 4791 -> priority 3");
  cr_assert_not (in.has_mfs, "Onyx sent no maximum frame size");
  cr_assert_eq (in.n_defects, 0, "%s", in.defect);
  lldp_identity (&in, id, sizeof (id));
  cr_assert_str_eq (id, "anc-dx-t1 Eth1/1");
}

Test (lldp, aruba_8100_capture)
{
  struct frame f = load ("aruba-8100");
  struct lldp_info in = decode_ok (&f);
  char id[160];

  cr_assert_str_eq (in.chassis, "88:25:10:e5:bd:80");
  cr_assert_str_eq (in.port, "1/1/19");
  cr_assert_str_eq (in.sys_name, "8100");
  cr_assert_str_eq (in.port_desc, "1/1/19");
  cr_assert_eq (in.pfc_cap, 2);
  cr_assert_eq (in.pfc_en, 0x08);
  cr_assert_eq (in.ets_max_tcs, 3);
  cr_assert_eq (in.prio_tc[3], 1, "priority 3 sits in TC1 here");
  cr_assert_eq (in.prio_tc[5], 2);
  cr_assert_eq (in.prio_tc[0], 0);
  cr_assert_eq (in.tc_bw[0], 48);
  cr_assert_eq (in.tc_bw[1], 50);
  cr_assert_eq (in.tc_bw[2], 2);
  cr_assert (in.has_mfs);
  cr_assert_eq (in.mfs, 9198);
  cr_assert_not (in.has_app);
  lldp_identity (&in, id, sizeof (id));
  cr_assert_str_eq (id, "8100 1/1/19");
}

Test (lldp, variants)
{
  struct frame f = load ("cee-only");
  struct lldp_info in = decode_ok (&f);
  cr_assert_not (in.has_pfc);
  cr_assert (in.has_cee_pfc);
  cr_assert (in.cee_pfc_enabled);
  cr_assert_not (in.cee_pfc_willing);
  cr_assert_eq (in.cee_pfc_en, 0x08);
  cr_assert (in.has_cee_app);
  cr_assert_eq (in.cee_udp_roce_prio, 0x08);

  f = load ("dscp26-0");
  in = decode_ok (&f);
  cr_assert_eq (in.n_dscp, 2);
  cr_assert_eq (in.dscp_prio[26], 0x01);
  cr_assert_eq (in.dscp_prio[46], 0x20);

  f = load ("pfc4");
  cr_assert_eq (decode_ok (&f).pfc_en, 0x10);
  f = load ("no-pfc");
  cr_assert_not (decode_ok (&f).has_pfc);
  f = load ("mfs1518");
  cr_assert_eq (decode_ok (&f).mfs, 1518);
  f = load ("ttl0");
  cr_assert_eq (decode_ok (&f).ttl, 0);
}

Test (lldp, refuses_what_is_not_an_lldpdu)
{
  struct frame f = load ("garbage");
  struct frame good = load ("onyx-sn3700");
  cleanup_error roce_error_t e1 = NULL;
  cleanup_error roce_error_t e2 = NULL;
  cleanup_error roce_error_t e3 = NULL;
  cleanup_error roce_error_t e4 = NULL;
  struct lldp_info in;
  uint8_t swapped[LLDP_FRAME_MAX];

  assert_err_contains (lldp_decode (f.b, f.len, &in, &e1), e1, "a TLV runs past the end");
  assert_err_contains (lldp_decode (good.b, 10, &in, &e2), e2, "shorter than an Ethernet header");
  memcpy (swapped, good.b, good.len);
  swapped[13] = 0xcd;
  assert_err_contains (lldp_decode (swapped, good.len, &in, &e3), e3, "another EtherType");
  /* The port ID before the chassis ID.  */
  memcpy (swapped, good.b, good.len);
  memcpy (swapped + 14, good.b + 23, 9);
  memcpy (swapped + 23, good.b + 14, 9);
  assert_err_contains (lldp_decode (swapped, good.len, &in, &e4), e4,
                       "the chassis ID TLV must come");
}

/* Every cut of a real frame: refused with a message, or decoded from what
 * is whole; never a read past the cut (ASan sees it under make debug).  */
Test (lldp, every_truncation)
{
  struct frame f = load ("aruba-8100");
  for (size_t n = 0; n < f.len; n++)
    {
      cleanup_error roce_error_t err = NULL;
      uint8_t *cut = xmalloc0 (n ? n : 1);
      struct lldp_info in;
      memcpy (cut, f.b, n);
      if (lldp_decode (cut, n, &in, &err) < 0)
        cr_assert (err && strstr (err->msg, "not an LLDPDU: ") == err->msg, "cut at %zu", n);
      else
        cr_assert (n >= 14 + 9 + 9 + 4, "cut at %zu decoded", n);
      free (cut);
    }
}

static struct lldp_info
decode_buf (const uint8_t *b, size_t n)
{
  struct frame f = { .len = n };
  memcpy (f.b, b, n);
  return decode_ok (&f);
}

static size_t
find_bytes (const struct frame *f, const char *needle, size_t nlen)
{
  for (size_t i = 0; i + nlen <= f->len; i++)
    if (memcmp (f->b + i, needle, nlen) == 0)
      return i;
  cr_assert_fail ("not in the frame");
  return 0;
}

Test (lldp, tolerates_and_names_bad_tlvs)
{
  struct frame f = load ("onyx-sn3700");
  size_t pfc = find_bytes (&f, "\xfe\x06\x00\x80\xc2\x0b", 6);
  size_t name = find_bytes (&f,
                            "\x0a\x09"
                            "anc",
                            5);
  struct lldp_info in;
  uint8_t b[LLDP_FRAME_MAX];
  char id[160];

  /* A PFC TLV one byte too long: ignored, and said.  */
  memcpy (b, f.b, pfc);
  memcpy (b + pfc, "\xfe\x07\x00\x80\xc2\x0b\x08\x08\x00", 9);
  memcpy (b + pfc + 9, f.b + pfc + 8, f.len - pfc - 8);
  in = decode_buf (b, f.len + 1);
  cr_assert_not (in.has_pfc);
  cr_assert_eq (in.n_defects, 1);
  cr_assert_str_eq (in.defect, "a PFC configuration TLV of 3 bytes (2 expected): ignored");

  /* A second PFC TLV (PFC on {4}): the first one counts.  */
  memcpy (b, f.b, pfc + 8);
  memcpy (b + pfc + 8, "\xfe\x06\x00\x80\xc2\x0b\x08\x10", 8);
  memcpy (b + pfc + 16, f.b + pfc + 8, f.len - pfc - 8);
  in = decode_buf (b, f.len + 8);
  cr_assert_eq (in.pfc_en, 0x08);
  cr_assert_str_eq (in.defect, "a second PFC configuration TLV: ignored");

  /* A system name of control bytes and high bytes: printable only.  */
  memcpy (b, f.b, f.len);
  memcpy (b + name + 2, "\x1b[2J\n\xff\xfe\x07x", 9);
  in = decode_buf (b, f.len);
  cr_assert_str_eq (in.sys_name, "?[2J????x");
  lldp_identity (&in, id, sizeof (id));
  cr_assert_str_eq (id, "?[2J????x Eth1/1");

  /* Tagged (VLAN 710): decoded behind the tag.  */
  memcpy (b, f.b, 12);
  memcpy (b + 12, "\x81\x00\x02\xc6", 4);
  memcpy (b + 16, f.b + 12, f.len - 12);
  in = decode_buf (b, f.len + 4);
  cr_assert (in.tagged);
  cr_assert_eq (in.vlan, 710);
  cr_assert_eq (in.pfc_en, 0x08);

  /* No End TLV: the end of the buffer ends the PDU.  */
  in = decode_buf (f.b, f.len - 2);
  cr_assert (in.has_app);
}

/* ---- the record ---------------------------------------------------------------- */

TestSuite (lldp_record, .init = tree_setup, .fini = tree_teardown);

Test (lldp_record, written_read_and_aged)
{
  struct frame f = load ("onyx-sn3700");
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *sd = xasprintf ("%s/state", tree_root);
  cleanup_free char *text = NULL;
  struct lldp_seen s;
  size_t len = 0;

  cr_assert_eq (lldp_record_write (sd, "ens1f0", 1000, f.b, f.len, &err), 0, "%s",
                err ? err->msg : "");
  {
    cleanup_free char *path = lldp_record_path (sd, "ens1f0");
    cr_assert_eq (read_file_at (AT_FDCWD, path, 65536, &text, &len, &err), 0);
    cr_assert (strstr (text, "\"heard\":1000"), "%s", text);
    cr_assert (strstr (text, "\"ttl\":120"), "%s", text);
    cr_assert (strstr (text, "\"switch\":\"anc-dx-t1 Eth1/1\""), "%s", text);
  }

  lldp_seen_load (sd, tree_root, "ens1f0", 1100, &s);
  cr_assert_eq (s.state, LLDP_SEEN_OK, "%s", s.detail ? s.detail : "");
  cr_assert_eq (s.age, 100);
  cr_assert_eq (s.info.pfc_en, 0x08);
  cr_assert_not (s.host_tagged);
  lldp_seen_clear (&s);

  lldp_seen_load (sd, tree_root, "ens1f0", 1121, &s);
  cr_assert_eq (s.state, LLDP_SEEN_EXPIRED);
  cr_assert_str_eq (s.detail, "the last LLDP frame on ens1f0 is 121 s old, past its TTL of 120 s");
  lldp_seen_clear (&s);

  lldp_seen_load (sd, tree_root, "ens1f0", 800, &s);
  cr_assert_eq (s.state, LLDP_SEEN_INVALID);
  cr_assert (strstr (s.detail, "heard 200 s in the future"), "%s", s.detail);
  lldp_seen_clear (&s);

  lldp_seen_load (sd, tree_root, "ens1f1", 1100, &s);
  cr_assert_eq (s.state, LLDP_SEEN_NONE);
  cr_assert_str_eq (s.detail, "no LLDP frame heard on ens1f1");
  lldp_seen_clear (&s);

  lldp_seen_load (sd, tree_root, "../x", 1100, &s);
  cr_assert_eq (s.state, LLDP_SEEN_INVALID);
  lldp_seen_clear (&s);
}

Test (lldp_record, ttl0_bad_records_and_vlan_netdevs)
{
  struct frame f = load ("ttl0");
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *sd = xasprintf ("%s/state", tree_root);
  struct lldp_seen s;

  cr_assert_eq (lldp_record_write (sd, "ens1f0", 1000, f.b, f.len, &err), 0);
  lldp_seen_load (sd, tree_root, "ens1f0", 1001, &s);
  cr_assert_eq (s.state, LLDP_SEEN_EXPIRED);
  cr_assert_str_eq (s.detail, "the switch withdrew its LLDP information 1 s ago (TTL 0)");
  lldp_seen_clear (&s);

  tree_mk ("state/lldp/bad.json", "{\"version\":1,\"heard\":5,\"frame\":\"0g\"}");
  lldp_seen_load (sd, tree_root, "bad", 6, &s);
  cr_assert_eq (s.state, LLDP_SEEN_INVALID);
  cr_assert (strstr (s.detail, "\"frame\" is not lower-case hex"), "%s", s.detail);
  lldp_seen_clear (&s);

  tree_mk ("state/lldp/short.json", "{\"version\":1,\"heard\":5,\"frame\":\"0180c2\"}");
  lldp_seen_load (sd, tree_root, "short", 6, &s);
  cr_assert_eq (s.state, LLDP_SEEN_INVALID);
  cr_assert (strstr (s.detail, "not an LLDPDU"), "%s", s.detail);
  lldp_seen_clear (&s);

  tree_mk ("class/net/vlan710/uevent", "DEVTYPE=vlan\nINTERFACE=vlan710\nIFINDEX=9\n");
  lldp_seen_load (sd, tree_root, "vlan710", 6, &s);
  cr_assert (s.host_tagged);
  lldp_seen_clear (&s);
}

/* ---- the switch verdicts --------------------------------------------------------- */

static struct roce_policy *
policy (const char *mode, const char *sw)
{
  cleanup_error roce_error_t err = NULL;
  struct roce_policy *p = NULL;
  cleanup_free char *in = xasprintf ("{\"qos\":{\"mode\":\"%s\",\"switch\":\"%s\"},\"hcas\":{"
                                     "\"mlx5_0\":{\"netdev\":\"ens1f0\",\"subnet\":\"198.18.0.0/"
                                     "24\",\"pool\":\"198.18.0.10-198.18.0.20\"}}}",
                                     mode, sw);
  cr_assert_eq (policy_parse (in, "p.json", &p, &err), 0, "%s", err ? err->msg : "");
  return p;
}

struct sv
{
  struct roce_policy *p;
  struct qos_probe pr;
  struct findings f;
};

static void
sv_clear (struct sv *v)
{
  findings_clear (&v->f);
  lldp_seen_clear (&v->pr.sw);
  free (v->pr.netdev);
  policy_free (v->p);
}
#define cleanup_sv __attribute__ ((cleanup (sv_clear)))

/* The switch verdicts for one frame (NULL: nothing heard) on a host of
 * MTU 9000.  */
static void
sv_run (struct sv *v, const char *mode, const char *sw, const uint8_t *b, size_t n, bool tagged)
{
  struct qos_subject s = { .hca = "mlx5_0", .probe = &v->pr };
  cleanup_error roce_error_t err = NULL;
  memset (v, 0, sizeof (*v));
  v->p = policy (mode, sw);
  v->pr.netdev = xstrdup ("ens1f0");
  v->pr.mtu.state = PROBE_OK;
  v->pr.mtu_value = 9000;
  v->pr.sw_loaded = true;
  v->pr.sw.path = xstrdup ("/var/lib/roce-hook/lldp/ens1f0.json");
  v->pr.sw.host_tagged = tagged;
  if (b == NULL)
    {
      v->pr.sw.state = LLDP_SEEN_NONE;
      v->pr.sw.detail = xstrdup ("no LLDP frame heard on ens1f0");
    }
  else
    {
      cr_assert_eq (lldp_decode (b, n, &v->pr.sw.info, &err), 0);
      v->pr.sw.state = LLDP_SEEN_OK;
      v->pr.sw.age = 7;
    }
  qos_switch_verdict (v->p, &s, &v->f);
}

static const struct finding *
sv_find (const struct sv *v, const char *check)
{
  for (size_t i = 0; i < v->f.n; i++)
    if (strcmp (v->f.v[i].check, check) == 0)
      return &v->f.v[i];
  cr_assert_fail ("no %s finding", check);
  return NULL;
}

static void
sv_frame (struct sv *v, const char *sw, const char *name, bool tagged)
{
  struct frame f = load (name);
  sv_run (v, "enforce", sw, f.b, f.len, tagged);
}

Test (lldp_verdict, onyx_capture)
{
  cleanup_sv struct sv v;
  const struct finding *x;

  sv_frame (&v, "enforce", "onyx-sn3700", false);
  cr_assert_eq (v.f.n, 5);
  x = sv_find (&v, "switch-lldp");
  cr_assert_eq (x->status, FINDING_OK);
  cr_assert_str_eq (x->found, "anc-dx-t1 Eth1/1, heard 7 s ago (TTL 120)");
  x = sv_find (&v, "switch-pfc");
  cr_assert_eq (x->status, FINDING_OK);
  cr_assert_str_eq (x->what, "PFC on priority 3 at switch port anc-dx-t1 Eth1/1 (ens1f0, mlx5_0)");
  cr_assert_str_eq (x->found, "PFC on 3 (IEEE 802.1Qaz, willing 0, 8 classes)");
  cr_assert_str_eq (x->source, "LLDP from anc-dx-t1 Eth1/1, heard 7 s ago (TTL 120), "
                               "/var/lib/roce-hook/lldp/ens1f0.json");
  x = sv_find (&v, "switch-dscp");
  cr_assert_eq (x->status, FINDING_UNKNOWN);
  cr_assert_str_eq (x->found, "not advertised (no DSCP entries; UDP 4791 -> priority 3)");
  cr_assert_not (x->blocking);
  x = sv_find (&v, "switch-mfs");
  cr_assert_eq (x->status, FINDING_UNKNOWN);
  cr_assert (strstr (x->fix, "roce-hook check --probe"));
  x = sv_find (&v, "switch-tc");
  cr_assert_eq (x->status, FINDING_OK);
  cr_assert_str_eq (x->found, "TC3, alone");
  cr_assert_null (findings_first_blocking (&v.f));
}

Test (lldp_verdict, aruba_capture_and_mfs)
{
  cleanup_sv struct sv v;
  const struct finding *x;

  sv_frame (&v, "enforce", "aruba-8100", false);
  x = sv_find (&v, "switch-pfc");
  cr_assert_eq (x->status, FINDING_OK);
  x = sv_find (&v, "switch-mfs");
  cr_assert_eq (x->status, FINDING_OK);
  cr_assert_str_eq (x->found, "9198");
  cr_assert_str_eq (x->expected, "at least 9018 (MTU 9000 + 18)");
  x = sv_find (&v, "switch-tc");
  cr_assert_str_eq (x->found, "TC1, alone");
  sv_clear (&v);

  sv_frame (&v, "enforce", "mfs1518", false);
  x = sv_find (&v, "switch-mfs");
  cr_assert_eq (x->status, FINDING_FAIL);
  cr_assert (x->blocking);
  cr_assert_str_eq (x->found, "1518: frames of MTU 9000 are dropped at the switch");
  cr_assert_str_eq (x->fix, "set the switch port's MTU to at least 9018");
  cr_assert_str_eq (x->what, "maximum frame size at switch port 8100 1/1/19 (ens1f0, mlx5_0)");
  sv_clear (&v);

  /* MFS 9018: exactly enough untagged, 4 short on a VLAN netdev.  */
  sv_frame (&v, "enforce", "dscp26-3", false);
  cr_assert_eq (sv_find (&v, "switch-mfs")->status, FINDING_OK);
  sv_clear (&v);
  sv_frame (&v, "enforce", "dscp26-3", true);
  x = sv_find (&v, "switch-mfs");
  cr_assert_eq (x->status, FINDING_FAIL);
  cr_assert_str_eq (x->expected, "at least 9022 (MTU 9000 + 18 + 4 VLAN)");
}

Test (lldp_verdict, pfc_and_dscp)
{
  cleanup_sv struct sv v;
  const struct finding *x;

  sv_frame (&v, "enforce", "pfc4", false);
  x = sv_find (&v, "switch-pfc");
  cr_assert_eq (x->status, FINDING_FAIL);
  cr_assert (x->blocking);
  cr_assert_str_eq (x->found, "PFC on 4 (IEEE 802.1Qaz, willing 0, 8 classes)");
  cr_assert (strstr (x->fix, "enable PFC on priority 3 on the switch port"));
  /* Priority 3 alone in TC3, whatever PFC says.  */
  cr_assert_eq (sv_find (&v, "switch-tc")->status, FINDING_OK);
  sv_clear (&v);

  sv_frame (&v, "enforce", "no-pfc", false);
  x = sv_find (&v, "switch-pfc");
  cr_assert_eq (x->status, FINDING_UNKNOWN);
  cr_assert_not (x->blocking);
  cr_assert (strstr (x->fix, "priority-flow-control mode on send-tlv"), "%s", x->fix);
  sv_clear (&v);

  sv_frame (&v, "enforce", "cee-only", false);
  x = sv_find (&v, "switch-pfc");
  cr_assert_eq (x->status, FINDING_OK);
  cr_assert_str_eq (x->found, "PFC on 3 (CEE DCBX, feature enabled)");
  cr_assert_eq (sv_find (&v, "switch-tc")->status, FINDING_UNKNOWN);
  sv_clear (&v);

  sv_frame (&v, "enforce", "dscp26-0", false);
  x = sv_find (&v, "switch-dscp");
  cr_assert_eq (x->status, FINDING_FAIL);
  cr_assert_str_eq (x->found, "DSCP 26 -> priority 0");
  cr_assert_str_eq (x->fix, "map DSCP 26 to priority 3 on the switch (its QoS map for RoCE)");
  sv_clear (&v);

  sv_frame (&v, "enforce", "dscp26-3", false);
  x = sv_find (&v, "switch-dscp");
  cr_assert_eq (x->status, FINDING_OK);
  cr_assert_str_eq (x->found, "DSCP 26 -> priority 3");
}

Test (lldp_verdict, shared_traffic_class)
{
  struct frame f = load ("onyx-sn3700");
  size_t ets = find_bytes (&f, "\xfe\x19\x00\x80\xc2\x09", 6);
  cleanup_sv struct sv v;
  const struct finding *x;

  /* Priority 3 moved into TC0 with 0,1,2,4,5,7 (PFC on 3 only).  */
  f.b[ets + 7] = 0x00;
  f.b[ets + 8] = 0x00;
  sv_run (&v, "enforce", "enforce", f.b, f.len, false);
  x = sv_find (&v, "switch-tc");
  cr_assert_eq (x->status, FINDING_FAIL);
  cr_assert_str_eq (x->found, "TC0, shared with lossy priorities 0,1,2,4,5,7");
}

Test (lldp_verdict, not_heard_never_blocks)
{
  cleanup_sv struct sv v;

  sv_run (&v, "enforce", "enforce", NULL, 0, false);
  cr_assert_eq (v.f.n, 5);
  for (size_t i = 0; i < v.f.n; i++)
    {
      const struct finding *x = &v.f.v[i];
      cr_assert_eq (x->status, FINDING_UNKNOWN);
      cr_assert_not (x->blocking);
      cr_assert_str_eq (x->found, "not heard: no LLDP frame heard on ens1f0");
      cr_assert (strstr (x->fix, "roce-hook lldp --watch"));
      cr_assert (strstr (x->fix, "LLDP_NB_RX_MODE_P1=0"));
      cr_assert (strstr (x->fix, "ethtool --set-priv-flags ens1f0 disable-fw-lldp on"));
      cr_assert (strstr (x->fix, "ethtool --set-priv-flags ens1f0 fw-lldp-agent off"));
    }
  cr_assert_str_eq (v.f.v[0].what, "LLDP from the switch port of ens1f0 (mlx5_0)");
  cr_assert_str_eq (v.f.v[1].what, "PFC on priority 3 at the switch port of ens1f0 (mlx5_0)");
}

Test (lldp_verdict, qos_switch_modes)
{
  cleanup_sv struct sv v;
  struct frame f = load ("pfc4");

  /* warn: the mismatch is a FAIL that blocks nothing.  */
  sv_run (&v, "enforce", "warn", f.b, f.len, false);
  cr_assert_eq (sv_find (&v, "switch-pfc")->status, FINDING_FAIL);
  cr_assert_null (findings_first_blocking (&v.f));
  cr_assert_null (qos_first_refusing (v.p, &v.f));
  sv_clear (&v);

  /* enforce refuses even under qos.mode warn.  */
  sv_run (&v, "warn", "enforce", f.b, f.len, false);
  cr_assert_not_null (qos_first_refusing (v.p, &v.f));
  cr_assert_str_eq (qos_first_refusing (v.p, &v.f)->check, "switch-pfc");
  sv_clear (&v);

  sv_run (&v, "enforce", "off", f.b, f.len, false);
  cr_assert_eq (v.f.n, 0);
}

Test (lldp_policy, qos_switch_and_hca_probe_keys)
{
  cleanup_error roce_error_t e1 = NULL;
  cleanup_error roce_error_t e2 = NULL;
  cleanup_policy struct roce_policy *p = NULL;
  struct roce_policy *bad = NULL;
#define HCA                                                                                        \
  "\"hcas\":{\"mlx5_0\":{\"subnet\":\"198.18.0.0/24\",\"pool\":\"198.18.0.10-198.18.0.20\"%s}}"
  cleanup_free char *h1 = xasprintf (HCA, ",\"probe\":\"198.18.7.2\"");
  cleanup_free char *ok = xasprintf ("{%s}", h1);
  cleanup_free char *b1 = xasprintf ("{\"qos\":{\"switch\":\"strict\"},%s}", h1);
  cleanup_free char *h2 = xasprintf (HCA, ",\"probe\":\"peer-7\"");
  cleanup_free char *b2 = xasprintf ("{%s}", h2);

  cr_assert_eq (policy_parse (ok, "p.json", &p, &e1), 0);
  cr_assert_eq (p->qos.sw, QOS_MODE_WARN, "qos.switch defaults to warn");
  cr_assert (p->hcas[0].has_probe);
  cr_assert (p->hcas[0].probe.v == 0xc6120702u);
  assert_err_contains (
      policy_parse (b1, "p.json", &bad, &e1), e1,
      "policy p.json: qos.switch: 'strict' is not one of 'enforce', 'warn', 'off'");
  policy_free (bad);
  bad = NULL;
  assert_err_contains (policy_parse (b2, "p.json", &bad, &e2), e2,
                       "policy p.json: hcas.mlx5_0.probe: 'peer-7' is not an address");
  policy_free (bad);
}

/* The probe is of a family the rail has: its echoes leave from the rail's
 * address of that family.  */
Test (lldp_policy, the_probe_is_of_a_family_of_the_rail)
{
  cleanup_error roce_error_t e1 = NULL;
  cleanup_error roce_error_t e2 = NULL;
  cleanup_policy struct roce_policy *p6 = NULL;
  cleanup_policy struct roce_policy *ds = NULL;
  struct roce_policy *bad = NULL;
  char a[ADDR_STR_MAX];
#define HCA6                                                                                       \
  "{\"hcas\":{\"mlx5_0\":{\"subnet\":\"fd00:10::/64\",\"pool\":\"fd00:10::100-fd00:10::1ff\"%s}}}"
#define HCA46                                                                                      \
  "{\"hcas\":{\"mlx5_0\":{\"subnet\":\"198.18.0.0/24\",\"pool\":\"198.18.0.10-198.18.0.20\","      \
  "\"subnet6\":\"fd00:10::/64\",\"pool6\":\"fd00:10::100-fd00:10::1ff\"%s}}}"
  cleanup_free char *v6 = xasprintf (HCA6, ",\"gateway\":\"fd00:10::1\"");
  cleanup_free char *dual = xasprintf (HCA46, ",\"gateway6\":\"fd00:10::1\"");
  cleanup_free char *v6_4 = xasprintf (HCA6, ",\"probe\":\"198.18.7.2\"");
  cleanup_free char *v4_6 = xasprintf (HCA, ",\"probe\":\"fd00:7::2\"");
  cleanup_free char *v4_6o = xasprintf ("{%s}", v4_6);

  /* No probe: the IPv4 gateway, else the IPv6 one.  */
  cr_assert_eq (policy_parse (v6, "p.json", &p6, &e1), 0);
  cr_assert_str_eq (addr_format (policy_hca_probe_peer (&p6->hcas[0]), a), "fd00:10::1");
  cr_assert_eq (policy_parse (dual, "p.json", &ds, &e1), 0);
  cr_assert_str_eq (addr_format (policy_hca_probe_peer (&ds->hcas[0]), a), "fd00:10::1");
  assert_err_contains (policy_parse (v6_4, "p.json", &bad, &e1), e1,
                       "policy p.json: hcas.mlx5_0.probe: '198.18.7.2' is IPv4, the rail has no "
                       "IPv4 subnet (the MTU probe's echoes leave from the rail's address of the "
                       "probe's family)");
  policy_free (bad);
  bad = NULL;
  assert_err_contains (policy_parse (v4_6o, "p.json", &bad, &e2), e2,
                       "policy p.json: hcas.mlx5_0.probe: 'fd00:7::2' is IPv6, the rail has no "
                       "IPv6 subnet");
  policy_free (bad);
}
