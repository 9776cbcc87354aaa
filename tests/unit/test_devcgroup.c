/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of devcgroup (Criterion).  */
#include <stdlib.h>

#include "devices/devcgroup.h"
#include "devices/devices_int.h"
#include "lib/utils.h"
#include "unit.h"

static const char *hybrid_mountinfo
    = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n"
      "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static const char *hybrid_cgroup = "9:name=systemd:/x1\n5:devices:/x1\n"
                                   "4:memory:/process_api/67d9/x1\n1:cpu:/x1\n0::/x1\n";

Test (devcgroup, finds_v1_devices_and_v2_dirs)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *v1 = NULL;
  cleanup_free char *v2 = NULL;
  cr_assert_eq (devcg_find_dirs (hybrid_cgroup, hybrid_mountinfo, &v1, &v2, &err), 0);
  cr_assert_str_eq (v1, "/sys/fs/cgroup/devices/x1");
  cr_assert_str_eq (v2, "/sys/fs/cgroup/unified/x1");
}

Test (devcgroup, pure_v2_and_escaped_mount_points)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *v1 = NULL;
  cleanup_free char *v2 = NULL;
  cr_assert_eq (
      devcg_find_dirs ("0::/k8s/pod 1\n",
                       "30 1 0:27 / /sys/fs/cg\\040two rw - cgroup2 cgroup2 rw,nsdelegate\n", &v1,
                       &v2, &err),
      0);
  cr_assert_null (v1);
  cr_assert_str_eq (v2, "/sys/fs/cg two/k8s/pod 1");
}

Test (devcgroup, a_mount_of_a_subtree_is_joined_relative_to_its_root)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *v1 = NULL;
  cleanup_free char *v2 = NULL;
  cr_assert_eq (devcg_find_dirs ("5:devices:/a/b/c\n",
                                 "36 31 0:33 /a /mnt/dev rw - cgroup cgroup rw,devices\n", &v1, &v2,
                                 &err),
                0);
  cr_assert_str_eq (v1, "/mnt/dev/b/c");
  free (v1);
  v1 = NULL;
  assert_err_contains (devcg_find_dirs ("5:devices:/z/c\n",
                                        "36 31 0:33 /a /mnt/dev rw - cgroup cgroup rw,devices\n",
                                        &v1, &v2, &err),
                       err, "lies outside the hierarchy");
}

Test (devcgroup, refuses_dotdot_paths)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *v1 = NULL;
  cleanup_free char *v2 = NULL;
  assert_err_contains (
      devcg_find_dirs ("5:devices:/x/../../etc\n", hybrid_mountinfo, &v1, &v2, &err), err,
      "not a plain absolute path");
}

Test (devcgroup, v1_missing_bits)
{
  char b[3];
  devcg_v1_missing ("c 1:3 rwm\nc 5:0 rwm\n", 231, 192, b);
  cr_assert_str_eq (b, "rw");
  devcg_v1_missing ("a *:* rwm\n", 231, 192, b);
  cr_assert_str_eq (b, "");
  devcg_v1_missing ("c 231:* rw\n", 231, 192, b);
  cr_assert_str_eq (b, "");
  devcg_v1_missing ("c *:* m\nc 231:192 r\n", 231, 192, b);
  cr_assert_str_eq (b, "w");
  /* r and w in two entries do not make an O_RDWR open: the exact one gets w.  */
  devcg_v1_missing ("c 231:* r\nc 231:192 w\n", 231, 192, b);
  cr_assert_str_eq (b, "r");
  devcg_v1_missing ("b 231:192 rwm\nc 231:193 rwm\n", 231, 192, b);
  cr_assert_str_eq (b, "rw");
  devcg_v1_missing ("", 10, 58, b);
  cr_assert_str_eq (b, "rw");
}

static struct oci_config *
config_with_rules (const char *rules)
{
  cleanup_error roce_error_t err = NULL;
  struct oci_config *c = NULL;
  cleanup_free char *in
      = xasprintf ("{\"root\":{\"path\":\"r\"},\"linux\":{\"resources\":{\"devices\":%s}}}", rules);
  cr_assert_eq (oci_config_parse (in, "/b", &c, &err), 0, "%s", err ? err->msg : "");
  return c;
}

Test (devcgroup, spec_rules_later_ones_win)
{
  cleanup_oci_config struct oci_config *deny
      = config_with_rules ("[{\"allow\":false,\"access\":\"rwm\"}]");
  cleanup_oci_config struct oci_config *shim
      = config_with_rules ("[{\"allow\":false,\"access\":\"rwm\"},{\"allow\":true,\"type\":\"c\","
                           "\"major\":231,\"minor\":192,\"access\":\"rw\"}]");
  cleanup_oci_config struct oci_config *wild
      = config_with_rules ("[{\"allow\":false,\"access\":\"rwm\"},{\"allow\":true,\"type\":\"c\","
                           "\"major\":231,\"access\":\"rwm\"}]");
  cleanup_oci_config struct oci_config *redeny = config_with_rules (
      "[{\"allow\":true,\"type\":\"c\",\"major\":231,\"access\":\"rwm\"},{\"allow\":false,\"type\":"
      "\"c\",\"major\":231,\"minor\":192,\"access\":\"w\"}]");
  cleanup_oci_config struct oci_config *ronly
      = config_with_rules ("[{\"allow\":false,\"access\":\"rwm\"},{\"allow\":true,\"type\":\"c\","
                           "\"major\":231,\"minor\":192,\"access\":\"r\"}]");
  cr_assert_not (devcg_spec_allows (deny, 231, 192));
  cr_assert (devcg_spec_allows (shim, 231, 192));
  cr_assert_not (devcg_spec_allows (shim, 231, 193));
  cr_assert (devcg_spec_allows (wild, 231, 200));
  cr_assert_not (devcg_spec_allows (wild, 10, 58));
  cr_assert_not (devcg_spec_allows (redeny, 231, 192));
  cr_assert (devcg_spec_allows (redeny, 231, 193));
  cr_assert_not (devcg_spec_allows (ronly, 231, 192));
}

Test (devcgroup, the_v1_root_is_no_device_cgroup)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *v1 = NULL;
  cleanup_free char *v2 = NULL;
  cr_assert_eq (devcg_find_dirs ("5:devices:/\n0::/x\n", hybrid_mountinfo, &v1, &v2, &err), 0);
  cr_assert_null (v1);
  cr_assert_str_eq (v2, "/sys/fs/cgroup/unified/x");
}

Test (devcgroup, the_last_of_two_mounts_is_the_one_on_top)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *v1 = NULL;
  cleanup_free char *v2 = NULL;
  cleanup_free char *mi
      = xasprintf ("%s%s", hybrid_mountinfo, "90 31 0:38 / /sys/fs/cgroup rw - cgroup2 none rw\n");
  cr_assert_eq (devcg_find_dirs ("0::/x\n", mi, &v1, &v2, &err), 0);
  cr_assert_str_eq (v2, "/sys/fs/cgroup/x");
}
