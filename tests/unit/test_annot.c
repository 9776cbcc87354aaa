/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of annot (Criterion).  */
#include "lib/utils.h"
#include "spec/annot.h"
#include "unit.h"

static struct roce_policy *pol;

static void
setup (void)
{
  cleanup_error roce_error_t err = NULL;
  const char *in
      = "{\"hcas\":{"
        "\"mlx5_0\":{\"subnet\":\"192.168.100.0/24\",\"pool\":\"192.168.100.100-192.168.100.199\"},"
        "\"mlx5_1\":{\"subnet\":\"192.168.101.0/"
        "24\",\"pool\":\"192.168.101.100-192.168.101.199\"}}}";
  cr_assert_eq (policy_parse (in, "/etc/roce-hook/config.json", &pol, &err), 0);
}

static void
teardown (void)
{
  policy_free (pol);
}

TestSuite (annot, .init = setup, .fini = teardown);

Test (annot, selects_in_annotation_order)
{
  cleanup_error roce_error_t err = NULL;
  struct roce_request r = { 0 };
  cleanup_free char *names = NULL;
  cr_assert_eq (annot_parse (pol, "mlx5_1,mlx5_0", NULL, &r, &err), 0);
  cr_assert_eq (r.n, 2);
  cr_assert_str_eq (r.sel[0].hca->name, "mlx5_1");
  cr_assert_str_eq (r.sel[1].hca->name, "mlx5_0");
  cr_assert_eq (r.sel[0].ip[0].family, 0);
  names = annot_request_names (&r);
  cr_assert_str_eq (names, "mlx5_1,mlx5_0");
  annot_request_clear (&r);
}

Test (annot, static_addresses)
{
  cleanup_error roce_error_t err = NULL;
  struct roce_request r = { 0 };
  cr_assert_eq (annot_parse (pol, "mlx5_0", "192.168.100.105", &r, &err), 0);
  cr_assert_eq (r.sel[0].ip[0].family, AF_INET);
  cr_assert (r.sel[0].ip[0].v == 0xc0a86469u);
  annot_request_clear (&r);
  cr_assert_eq (
      annot_parse (pol, "mlx5_0,mlx5_1", "mlx5_1=192.168.101.105,mlx5_0=192.168.100.105", &r, &err),
      0);
  cr_assert (r.sel[0].ip[0].v == 0xc0a86469u);
  cr_assert (r.sel[1].ip[0].v == 0xc0a86569u);
  annot_request_clear (&r);
  cr_assert_eq (annot_parse (pol, "mlx5_0,mlx5_1", "mlx5_1=192.168.101.105", &r, &err), 0);
  cr_assert_eq (r.sel[0].ip[0].family, 0);
  cr_assert_eq (r.sel[1].ip[0].family, AF_INET);
  annot_request_clear (&r);
}

Test (annot, every_malformed_form_is_refused_clearly)
{
  struct
  {
    const char *hca, *ip, *msg;
  } cases[] = {
    { "", NULL,
      "annotation roce.io/hca: a comma list of HCA names (mlx5_0, mlx5_1) vs '' (fix: remove the "
      "empty item)" },
    { "mlx5_0,", NULL, "vs 'mlx5_0,' (fix: remove the empty item)" },
    { ",mlx5_0", NULL, "remove the empty item" },
    { "mlx5_0,,mlx5_1", NULL, "remove the empty item" },
    { "mlx5_0,mlx5_0", NULL, "annotation roce.io/hca: each HCA once vs 'mlx5_0,mlx5_0'" },
    { "mlx5_9", NULL,
      "annotation roce.io/hca: an HCA the node policy lists (mlx5_0, mlx5_1) vs 'mlx5_9' (fix: use "
      "one of "
      "mlx5_0, mlx5_1, or ask the node admin to add it to /etc/roce-hook/config.json)" },
    { " mlx5_0", NULL, "vs ' mlx5_0'" },
    { "mlx5_0\n", NULL, "annotation roce.io/hca: printable text vs 'mlx5_0\\x0a'" },
    { "mlx5_0", "192.168.100.5", "annotation roce.io/hca" /* placeholder replaced below */ },
    { "mlx5_0", "192.168.100.105/0",
      "annotation roce.io/ip: an IPv4 or IPv6 address vs '192.168.100.105/0'" },
    { "mlx5_0", "::1", "an address in mlx5_0's pool 192.168.100.100-192.168.100.199 vs '::1'" },
    { "mlx5_0", "fd00::1%eth0", "an IPv4 or IPv6 address vs 'fd00::1%eth0'" },
    { "mlx5_0", "192.168.100.105,192.168.100.106", "one address per HCA vs 'mlx5_0'" },
    { "mlx5_0", "1e9", "vs '1e9'" },
    { "mlx5_0", "garbage", "vs 'garbage'" },
    { "mlx5_0", "", "an IPv4 or IPv6 address" },
    { "mlx5_0,mlx5_1", "192.168.100.105",
      "<hca>=<address> items vs a bare address with 2 HCAs selected" },
    { "mlx5_0", "mlx5_1=192.168.101.105", "an HCA selected in roce.io/hca (mlx5_0) vs 'mlx5_1'" },
    { "mlx5_0", "mlx5_0=192.168.100.105,mlx5_0=192.168.100.106", "one address per HCA" },
    { "mlx5_0", "mlx5_0=192.168.100.105,", "<hca>=<address> items" },
    { "mlx5_0", "mlx5_0=192.168.101.105",
      "an address in mlx5_0's pool 192.168.100.100-192.168.100.199 vs '192.168.101.105'" },
    { "mlx5_0", "mlx5_0=192.168.100.105\x01", "annotation roce.io/ip: printable text" },
  };
  cases[8].msg = "an address in mlx5_0's pool 192.168.100.100-192.168.100.199 vs '192.168.100.5'";
  for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++)
    {
      cleanup_error roce_error_t err = NULL;
      struct roce_request r = { 0 };
      assert_err_contains (annot_parse (pol, cases[i].hca, cases[i].ip, &r, &err), err,
                           cases[i].msg);
      cr_assert_eq (r.n, 0);
      cr_assert_null (r.sel);
    }
}

Test (annot, huge_values_are_refused_before_parsing)
{
  cleanup_error roce_error_t err = NULL;
  struct roce_request r = { 0 };
  size_t n = 10000 * 7;
  cleanup_free char *big = xmalloc0 (n + 1);
  for (size_t i = 0; i < 10000; i++)
    memcpy (big + i * 7, "mlx5_0,", 7);
  big[n - 1] = '\0';
  assert_err_contains (annot_parse (pol, big, NULL, &r, &err), err, "at most 4096 bytes");
}

/* roce.io/ip on IPv6 and dual-stack rails: an address of each family the
 * rail has, keyed or bare; one of each at most.  */
Test (annot, ipv6_and_dual_stack_addresses)
{
  cleanup_policy struct roce_policy *p6 = NULL;
  cleanup_error roce_error_t err = NULL;
  const char *in
      = "{\"hcas\":{"
        "\"mlx5_0\":{\"subnet\":\"fd00:10::/64\",\"pool\":\"fd00:10::100-fd00:10::1ff\"},"
        "\"mlx5_1\":{\"subnet\":\"198.18.11.0/24\",\"pool\":\"198.18.11.100-198.18.11.199\","
        "\"subnet6\":\"2001:2:0:11::/64\",\"pool6\":\"2001:2:0:11::/112\"}}}";
  struct
  {
    const char *hca, *ip, *msg;
  } bad[] = {
    { "mlx5_0", "198.18.11.100",
      "an address in mlx5_0's pool fd00:10::100-fd00:10::1ff vs '198.18.11.100'" },
    { "mlx5_0", "fd00:10::200",
      "an address in mlx5_0's pool fd00:10::100-fd00:10::1ff vs 'fd00:10::200'" },
    { "mlx5_1", "2001:2:0:11::1:0",
      "an address in mlx5_1's pool 2001:2:0:11::1-2001:2:0:11::ffff" },
    { "mlx5_1", "198.18.11.100,198.18.11.101", "one address of each family per HCA vs 'mlx5_1'" },
    { "mlx5_1", "mlx5_1=2001:2:0:11::5,mlx5_1=2001:2:0:11::6",
      "one address of each family per HCA" },
    { "mlx5_1", "192.168.100.1,2001:2:0:11::5",
      "an address in mlx5_1's pool 198.18.11.100-198.18.11.199" },
  };
  struct roce_request r = { 0 };
  char a[ADDR_STR_MAX];

  cr_assert_eq (policy_parse (in, "p.json", &p6, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq (annot_parse (p6, "mlx5_0", "fd00:10::105", &r, &err), 0);
  cr_assert_str_eq (addr_format (&r.sel[0].ip[0], a), "fd00:10::105");
  annot_request_clear (&r);
  /* Bare, one of each family, in either order; keyed, the HCA twice.  */
  cr_assert_eq (annot_parse (p6, "mlx5_1", "2001:2:0:11::5,198.18.11.105", &r, &err), 0);
  cr_assert_str_eq (addr_format (&r.sel[0].ip[0], a), "198.18.11.105");
  cr_assert_str_eq (addr_format (&r.sel[0].ip[1], a), "2001:2:0:11::5");
  annot_request_clear (&r);
  cr_assert_eq (annot_parse (p6, "mlx5_0,mlx5_1",
                             "mlx5_1=2001:2:0:11::7,mlx5_0=fd00:10::1ff,mlx5_1=198.18.11.107", &r,
                             &err),
                0);
  cr_assert_str_eq (addr_format (&r.sel[0].ip[0], a), "fd00:10::1ff");
  cr_assert_str_eq (addr_format (&r.sel[1].ip[0], a), "198.18.11.107");
  cr_assert_str_eq (addr_format (&r.sel[1].ip[1], a), "2001:2:0:11::7");
  annot_request_clear (&r);
  /* One family of a dual-stack rail: the other is given from its pool.  */
  cr_assert_eq (annot_parse (p6, "mlx5_1", "mlx5_1=2001:2:0:11::8", &r, &err), 0);
  cr_assert_eq (r.sel[0].ip[0].family, 0);
  cr_assert_eq (r.sel[0].ip[1].family, AF_INET6);
  annot_request_clear (&r);
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      cleanup_error roce_error_t e = NULL;
      assert_err_contains (annot_parse (p6, bad[i].hca, bad[i].ip, &r, &e), e, bad[i].msg);
      cr_assert_eq (r.n, 0);
    }
}

/* A CDI request: the devices' variables in the policy's order whatever the
 * runtime's, unknown names last as found (annot_parse refuses them).  */
Test (annot, cdi_request_in_policy_order)
{
  char *none[] = { "PATH=/bin", "NCCL_IB_HCA=mlx5_1", NULL };
  char *two[] = { "ROCE_CDI_HCA_1=mlx5_1", "PATH=/bin", "ROCE_CDI_HCA_0=mlx5_0", NULL };
  char *odd[] = { "ROCE_CDI_HCA_7=mlx5_9", "ROCE_CDI_HCA_1=mlx5_1", NULL };
  cleanup_free char *a = annot_cdi_hcas (pol, two);
  cleanup_free char *b = annot_cdi_hcas (pol, odd);

  cr_assert_not (annot_cdi_asked (none));
  cr_assert_null (annot_cdi_hcas (pol, none));
  cr_assert (annot_cdi_asked (two));
  cr_assert_str_eq (a, "mlx5_0,mlx5_1");
  cr_assert_str_eq (b, "mlx5_1,mlx5_9");
  {
    cleanup_error roce_error_t err = NULL;
    struct roce_request r = { 0 };
    assert_err_contains (annot_parse_from (pol, &annot_from_cdi, b, NULL, &r, &err), err,
                         "CDI devices roce.io/hca: an HCA the node policy lists");
  }
}

/* Beside an annotation or ROCE_HCA: the same HCAs in any order, else one
 * refusal that shows neither value.  */
Test (annot, cdi_request_beside_an_annotation_or_env)
{
  cleanup_error roce_error_t err = NULL;
  cr_assert_eq (annot_cdi_agree ("mlx5_0,mlx5_1", NULL, NULL, &err), 0);
  cr_assert_eq (annot_cdi_agree ("mlx5_0,mlx5_1", "mlx5_1,mlx5_0", "mlx5_0,mlx5_1", &err), 0);
  assert_err_contains (annot_cdi_agree ("mlx5_0", "mlx5_1", NULL, &err), err,
                       "annotation roce.io/hca beside the CDI devices roce.io/hca: the same HCAs, "
                       "or only one of the two vs other HCAs");
  cr_assert_null (strstr (err->msg, "mlx5_1"));
  {
    cleanup_error roce_error_t err2 = NULL;
    assert_err_contains (annot_cdi_agree ("mlx5_0", NULL, "mlx5_0,mlx5_0x", &err2), err2,
                         "environment variable ROCE_HCA beside the CDI devices roce.io/hca");
  }
}
