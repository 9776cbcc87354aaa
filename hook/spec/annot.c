/* SPDX-License-Identifier: Apache-2.0 */
/* The tenant's annotations roce.io/hca and roce.io/ip, parsed and validated
 * against the policy (untrusted input: nothing raw is ever echoed).  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/utils.h"
#include "spec/annot.h"

/* A refusal naming a tenant's value: quoted as it is (utils.h: the line is
 * escaped when printed).  */
static int
refuse (roce_error_t *err, const char *what, const char *expected, const char *found_raw,
        const char *fix)
{
  cleanup_free char *found = found_raw ? str_quote (found_raw) : xstrdup ("nothing");
  return roce_error_refuse (err, what, expected, found, fix);
}

const struct annot_source annot_from_annotations = {
  .what_hca = "annotation " ANNOT_HCA,
  .what_ip = "annotation " ANNOT_IP,
  .hca = ANNOT_HCA,
  .ip = ANNOT_IP,
  .thing = "annotation",
};

const struct annot_source annot_from_env = {
  .what_hca = "environment variable ROCE_HCA",
  .what_ip = "environment variable ROCE_IP",
  .hca = "ROCE_HCA",
  .ip = "ROCE_IP",
  .thing = "variable",
};

const struct annot_source annot_from_cdi = {
  .what_hca = "CDI devices " ANNOT_HCA,
  .what_ip = "annotation " ANNOT_IP,
  .hca = "CDI device " ANNOT_HCA,
  .ip = ANNOT_IP,
  .thing = "CDI device's variable " ANNOT_CDI_PREFIX "<i>",
};

static int
check_value (const char *what, const char *thing, const char *value, roce_error_t *err)
{
  size_t len = strlen (value);
  if (len > ANNOT_VALUE_MAX)
    {
      cleanup_free char *found = xasprintf ("%zu bytes", len);
      cleanup_free char *exp = xasprintf ("at most %d bytes", ANNOT_VALUE_MAX);
      cleanup_free char *fix = xasprintf ("shorten the %s", thing);
      return roce_error_refuse (err, what, exp, found, fix);
    }
  if (! str_is_printable (value))
    return refuse (err, what, "printable text", value, "remove control characters");
  return 0;
}

void
annot_request_clear (struct roce_request *r)
{
  for (size_t i = 0; i < r->n; i++)
    strv_free (r->sel[i].gpus);
  free (r->sel);
  r->sel = NULL;
  r->n = 0;
}

char *
annot_request_names (const struct roce_request *r)
{
  char *list = xstrdup ("");
  for (size_t i = 0; i < r->n; i++)
    {
      str_list_add (&list, ",", "%s", r->sel[i].hca->name);
    }
  return list;
}

static int
parse_hcas (const struct roce_policy *p, const struct annot_source *src, const char *value,
            struct roce_request *r, roce_error_t *err)
{
  cleanup_free char *copy = xstrdup (value);
  cleanup_free char *names = policy_hca_names (p);
  char *save = NULL, *item;
  size_t n_items = 1;

  for (const char *q = value; *q; q++)
    if (*q == ',')
      n_items++;
  r->sel = xmalloc0 (n_items * sizeof (*r->sel));

  /* strsep keeps empty items, strtok would hide them.  */
  save = copy;
  while ((item = strsep (&save, ",")) != NULL)
    {
      const struct policy_hca *h;
      if (*item == '\0')
        {
          cleanup_free char *exp = xasprintf ("a comma list of HCA names (%s)", names);
          return refuse (err, src->what_hca, exp, value, "remove the empty item");
        }
      h = policy_find_hca (p, item);
      if (h == NULL)
        {
          cleanup_free char *exp = xasprintf ("an HCA the node policy lists (%s)", names);
          cleanup_free char *fix
              = xasprintf ("use one of %s, or ask the node admin to add it to %s", names, p->path);
          return refuse (err, src->what_hca, exp, item, fix);
        }
      for (size_t i = 0; i < r->n; i++)
        if (r->sel[i].hca == h)
          return refuse (err, src->what_hca, "each HCA once", value, "name every HCA only once");
      r->sel[r->n++].hca = h;
    }
  return 0;
}

static int
set_ip (const struct annot_source *src, struct roce_selection *s, const char *addr,
        roce_error_t *err)
{
  const struct policy_hca *h = s->hca;
  struct roce_addr ip;
  size_t k;

  if (addr_parse (addr, &ip) < 0)
    {
      cleanup_free char *fix = xasprintf ("give a plain address such as %s=mlx5_0=192.168.100.105 "
                                          "or %s=mlx5_0=fd00:10::105",
                                          src->ip, src->ip);
      return refuse (err, src->what_ip, "an IPv4 or IPv6 address", addr, fix);
    }
  for (k = 0; k < h->n_nets; k++)
    if (h->net[k].subnet.addr.family == ip.family)
      break;
  if (k == h->n_nets)
    {
      cleanup_free char *pools = xstrdup ("");
      cleanup_free char *exp = NULL;
      cleanup_free char *fix
          = xasprintf ("give %s an address of its pool, or omit %s to get one", h->name, src->ip);
      for (size_t i = 0; i < h->n_nets; i++)
        {
          cleanup_free char *pool = policy_net_pool_text (&h->net[i]);
          str_list_add (&pools, " or ", "%s", pool);
        }
      exp = xasprintf ("an address in %s's pool %s", h->name, pools);
      return refuse (err, src->what_ip, exp, addr, fix);
    }
  if (addr_cmp (&ip, &h->net[k].pool_first) < 0 || addr_cmp (&ip, &h->net[k].pool_last) > 0)
    {
      cleanup_free char *pool = policy_net_pool_text (&h->net[k]);
      cleanup_free char *exp = xasprintf ("an address in %s's pool %s", h->name, pool);
      cleanup_free char *fix
          = xasprintf ("pick an address inside the pool, or omit %s to get one", src->ip);
      return refuse (err, src->what_ip, exp, addr, fix);
    }
  if (s->ip[k].family != 0)
    return refuse (err, src->what_ip,
                   h->n_nets > 1 ? "one address of each family per HCA" : "one address per HCA",
                   h->name, "give each HCA once");
  s->ip[k] = ip;
  return 0;
}

/* A bare value: the one HCA's address, or on a dual-stack rail one of each
 * family ("198.18.10.5,fd00:10::5").  */
static int
set_bare (const struct annot_source *src, struct roce_selection *s, const char *value,
          roce_error_t *err)
{
  cleanup_free char *copy = xstrdup (value);
  char *save = copy, *item;
  while ((item = strsep (&save, ",")) != NULL)
    if (set_ip (src, s, item, err) < 0)
      return -1;
  return 0;
}

static int
parse_ips (const struct annot_source *src, const char *value, struct roce_request *r,
           roce_error_t *err)
{
  cleanup_free char *copy = xstrdup (value);
  cleanup_free char *write = xasprintf ("write %s=mlx5_0=<addr>,mlx5_1=<addr>", src->ip);
  char *save = copy, *item;

  if (strchr (value, '=') == NULL)
    {
      if (r->n != 1)
        {
          cleanup_free char *found = xasprintf ("a bare address with %zu HCAs selected", r->n);
          return roce_error_refuse (err, src->what_ip, "<hca>=<address> items", found, write);
        }
      return set_bare (src, &r->sel[0], value, err);
    }

  while ((item = strsep (&save, ",")) != NULL)
    {
      char *eq = strchr (item, '=');
      struct roce_selection *s = NULL;
      if (*item == '\0' || eq == NULL)
        return refuse (err, src->what_ip, "<hca>=<address> items", value, write);
      *eq = '\0';
      for (size_t i = 0; i < r->n; i++)
        if (strcmp (r->sel[i].hca->name, item) == 0)
          s = &r->sel[i];
      if (s == NULL)
        {
          cleanup_free char *names = annot_request_names (r);
          cleanup_free char *exp = xasprintf ("an HCA selected in %s (%s)", src->hca, names);
          cleanup_free char *fix = xasprintf ("give addresses only for the HCAs in %s", src->hca);
          return refuse (err, src->what_ip, exp, item, fix);
        }
      if (set_ip (src, s, eq + 1, err) < 0)
        return -1;
    }
  return 0;
}

int
annot_parse_ip_auto (const struct annot_source *src, const char *ip, struct roce_request *r,
                     roce_error_t *err)
{
  if (check_value (src->what_ip, src->thing, ip, err) < 0)
    return -1;
  if (strchr (ip, '=') != NULL || r->n != 1)
    {
      cleanup_free char *names = annot_request_names (r);
      cleanup_free char *exp
          = xasprintf ("a bare address, with %s=auto choosing one HCA", src->hca);
      cleanup_free char *found = strchr (ip, '=')
                                     ? xasprintf ("<hca>=<address> items, HCAs chosen: %s", names)
                                     : xasprintf ("%zu HCAs chosen (%s)", r->n, names);
      cleanup_free char *fix = xasprintf ("name the HCAs in %s to give each an address, or "
                                          "omit %s to get one from each pool",
                                          src->hca, src->ip);
      return roce_error_refuse (err, src->what_ip, exp, found, fix);
    }
  return set_bare (src, &r->sel[0], ip, err);
}

int
annot_parse (const struct roce_policy *p, const char *hca, const char *ip, struct roce_request *out,
             roce_error_t *err)
{
  return annot_parse_from (p, &annot_from_annotations, hca, ip, out, err);
}

int
annot_parse_from (const struct roce_policy *p, const struct annot_source *src, const char *hca,
                  const char *ip, struct roce_request *out, roce_error_t *err)
{
  struct roce_request r = { 0 };

  if (hca == NULL)
    {
      cleanup_free char *fix = xasprintf ("give the container %s=mlx5_0", src->hca);
      return refuse (err, src->what_hca, "a comma list of HCA names", NULL, fix);
    }
  if (check_value (src->what_hca, src->thing, hca, err) < 0)
    return -1;
  if (ip && check_value (src->what_ip, src->thing, ip, err) < 0)
    return -1;
  if (parse_hcas (p, src, hca, &r, err) < 0)
    goto fail;
  if (ip && parse_ips (src, ip, &r, err) < 0)
    goto fail;
  *out = r;
  return 0;

fail:
  annot_request_clear (&r);
  return -1;
}

bool
annot_cdi_asked (char *const *env)
{
  for (size_t i = 0; env && env[i]; i++)
    if (strncmp (env[i], ANNOT_CDI_PREFIX, strlen (ANNOT_CDI_PREFIX)) == 0)
      return true;
  return false;
}

/* The value of a CDI device's variable ("ROCE_CDI_HCA_<i>=<hca>"), or NULL. */
static const char *
cdi_value (const char *kv)
{
  const char *eq;
  if (strncmp (kv, ANNOT_CDI_PREFIX, strlen (ANNOT_CDI_PREFIX)) != 0
      || (eq = strchr (kv, '=')) == NULL)
    return NULL;
  return eq + 1;
}

char *
annot_cdi_hcas (const struct roce_policy *p, char *const *env)
{
  char *out = NULL;

  if (! annot_cdi_asked (env))
    return NULL;
  out = xstrdup ("");
  for (size_t h = 0; h < p->n_hcas; h++)
    for (size_t i = 0; env[i]; i++)
      {
        const char *v = cdi_value (env[i]);
        if (v && strcmp (v, p->hcas[h].name) == 0)
          {
            str_list_add (&out, ",", "%s", v);
            break;
          }
      }
  for (size_t i = 0; env[i]; i++)
    {
      const char *v = cdi_value (env[i]);
      if (v && policy_find_hca (p, v) == NULL)
        str_list_add (&out, ",", "%s", v);
    }
  return out;
}

static int
cmp_str (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

static char **
split_names (const char *list)
{
  cleanup_free char *copy = xstrdup (list);
  char **v = xmalloc0 (sizeof (char *));
  char *save = NULL;
  for (char *t = strtok_r (copy, ",", &save); t; t = strtok_r (NULL, ",", &save))
    strv_push (&v, t);
  return v;
}

/* Whether two comma lists hold the same names, in any order.  */
static bool
same_names (const char *a, const char *b)
{
  cleanup_strv char **x = split_names (a);
  cleanup_strv char **y = split_names (b);
  size_t n = strv_len (x);

  if (n != strv_len (y))
    return false;
  qsort (x, n, sizeof (*x), cmp_str);
  qsort (y, n, sizeof (*y), cmp_str);
  for (size_t i = 0; i < n; i++)
    if (strcmp (x[i], y[i]) != 0)
      return false;
  return true;
}

int
annot_cdi_agree (const char *cdi, const char *annotation, const char *env_hca, roce_error_t *err)
{
  const char *what = annotation && ! same_names (cdi, annotation) ? "annotation " ANNOT_HCA
                     : env_hca && ! same_names (cdi, env_hca)
                         ? "environment variable " ANNOT_ENV_HCA
                         : NULL;
  cleanup_free char *w = NULL;

  if (what == NULL)
    return 0;
  w = xasprintf ("%s beside the CDI devices " ANNOT_HCA, what);
  return roce_error_refuse (
      err, w, "the same HCAs, or only one of the two", "other HCAs",
      "ask for the HCAs one way: the CDI devices alone, or the same ones in both");
}
