/* SPDX-License-Identifier: Apache-2.0 */
/* `roce-hook topo`: the host's GPUs and the policy's HCAs, the matrix of
 * classes between them as `nvidia-smi topo -m` prints it, and with --gpus
 * the HCAs roce.io/hca=auto would give a container with those GPUs.  */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/json_gen.h"
#include "lib/utils.h"
#include "topo/topo_int.h"

/* The whole host: every GPU and HCA located where it can be; those that
 * cannot are shown absent (pos.pci NULL) rather than refused.  */
static int
table_whole (struct topo_table *t, const struct roce_policy *p, roce_error_t *err)
{
  if (topo_table_init (t, p, err) < 0 || topo_table_list (t, err) < 0
      || topo_table_identify (t, err) < 0)
    return -1;
  for (size_t i = 0; i < t->n_gpus; i++)
    {
      cleanup_error roce_error_t lerr = NULL;
      topo_table_locate (t, i, "the driver's list", &lerr);
    }
  for (size_t i = 0; i < t->n_hcas; i++)
    {
      cleanup_error roce_error_t lerr = NULL;
      topo_table_hca (t, i, &lerr);
    }
  return 0;
}

static const char *
cell (const struct topo_table *t, size_t g, size_t h)
{
  if (! t->gpus[g].located || t->hcas[h].pos.pci == NULL)
    return "-";
  return topo_class_name (topo_distance (&t->gpus[g].pos, &t->hcas[h].pos));
}

static char *
numa_text (int numa)
{
  return numa < 0 ? xstrdup ("-") : xasprintf ("%d", numa);
}

/* A row of the matrix, without the padding at its end.  */
static void
put_row (FILE *out, char *row)
{
  size_t len = strlen (row);
  while (len > 0 && row[len - 1] == ' ')
    row[--len] = '\0';
  fprintf (out, "%s\n", row);
}

static const char legend[]
    = "Legend:\n"
      "  PIX  = through one PCIe switch\n"
      "  PXB  = through several PCIe switches, not the host bridge\n"
      "  PHB  = through the PCIe host bridge (the CPU's root complex)\n"
      "  NODE = between PCIe host bridges of one NUMA node\n"
      "  SYS  = across NUMA nodes (the SMP interconnect), or a NUMA node unknown\n";

/* GPUs, HCAs, the matrix and its legend.  */
static void
view_text (const struct topo_table *t, FILE *out)
{
  size_t w = 6;

  if (t->n_gpus == 0)
    fprintf (out, "GPUs: none (%s/driver/nvidia/gpus: %s)\n", t->p->procfs_root,
             t->driver ? "empty" : "absent, no nvidia driver");
  else
    {
      fprintf (out, "%-6s %-13s %-5s %-12s %s\n", "GPU", "PCI", "NUMA", "PCIe root", "UUID");
      for (size_t g = 0; g < t->n_gpus; g++)
        {
          const struct topo_gpu *x = &t->gpus[g];
          cleanup_free char *name = xasprintf ("GPU%u", x->index);
          cleanup_free char *numa = numa_text (x->pos.numa);
          fprintf (out, "%-6s %-13s %-5s %-12s %s\n", name, x->pci, x->located ? numa : "-",
                   x->located ? x->pos.root : "absent", x->uuid ? x->uuid : "-");
        }
    }
  fputc ('\n', out);
  for (size_t h = 0; h < t->n_hcas; h++)
    if (strlen (t->hcas[h].h->name) + 1 > w)
      w = strlen (t->hcas[h].h->name) + 1;
  fprintf (out, "%-*s %-13s %-5s %s\n", (int) w, "HCA", "PCI", "NUMA", "PCIe root");
  for (size_t h = 0; h < t->n_hcas; h++)
    {
      const struct topo_hca *x = &t->hcas[h];
      cleanup_free char *numa = numa_text (x->pos.numa);
      if (x->pos.pci == NULL)
        fprintf (out, "%-*s %-13s %-5s %s\n", (int) w, x->h->name, "-", "-", "absent from sysfs");
      else
        fprintf (out, "%-*s %-13s %-5s %s%s\n", (int) w, x->h->name, x->pos.pci, numa, x->pos.root,
                 x->vf ? "  (a VF: its PF's place)" : "");
    }
  if (t->n_gpus)
    {
      cleanup_free char *row = xasprintf ("%-6s", "");
      fputc ('\n', out);
      for (size_t h = 0; h < t->n_hcas; h++)
        str_list_add (&row, " ", "%-*s", (int) w, t->hcas[h].h->name);
      put_row (out, row);
      for (size_t g = 0; g < t->n_gpus; g++)
        {
          free (row);
          row = xasprintf ("GPU%-3u", t->gpus[g].index);
          for (size_t h = 0; h < t->n_hcas; h++)
            str_list_add (&row, " ", "%-*s", (int) w, cell (t, g, h));
          put_row (out, row);
        }
      fputc ('\n', out);
      fputs (legend, out);
    }
}

static void
render_text (const struct topo_table *t, const struct topo_choice *ch, const char *spec, FILE *out)
{
  view_text (t, out);
  if (ch)
    {
      fprintf (out, "\nroce.io/hca=auto with " TOPO_ENV_GPUS "=%s:", spec);
      for (size_t i = 0; i < ch->n; i++)
        {
          cleanup_free char *gpus = strv_join (ch->rails[i].gpus, ",");
          fprintf (out, "%s %s (%s: %s)", i ? "," : "", ch->rails[i].hca->name, gpus,
                   topo_class_name (ch->rails[i].cls));
        }
      fputc ('\n', out);
    }
}

static void
gen_place (struct json_gen *g, const struct topo_pos *pos, bool located)
{
  json_gen_string (g, "pci");
  located ? json_gen_string (g, pos->pci) : json_gen_null (g);
  json_gen_string (g, "numa");
  located && pos->numa >= 0 ? json_gen_integer (g, pos->numa) : json_gen_null (g);
  json_gen_string (g, "pcie_root");
  located ? json_gen_string (g, pos->root) : json_gen_null (g);
}

/* The members gpus, hcas and matrix, into an open map.  */
static void
view_json (const struct topo_table *t, struct json_gen *g)
{
  json_gen_string (g, "gpus");
  json_gen_array_open (g);
  for (size_t i = 0; i < t->n_gpus; i++)
    {
      const struct topo_gpu *x = &t->gpus[i];
      json_gen_map_open (g);
      json_gen_kv_integer (g, "index", x->index);
      json_gen_string (g, "pci");
      json_gen_string (g, x->pci);
      json_gen_string (g, "numa");
      x->located && x->pos.numa >= 0 ? json_gen_integer (g, x->pos.numa) : json_gen_null (g);
      json_gen_string (g, "pcie_root");
      x->located ? json_gen_string (g, x->pos.root) : json_gen_null (g);
      json_gen_string (g, "uuid");
      x->uuid ? json_gen_string (g, x->uuid) : json_gen_null (g);
      json_gen_string (g, "minor");
      x->minor >= 0 ? json_gen_integer (g, x->minor) : json_gen_null (g);
      json_gen_map_close (g);
    }
  json_gen_array_close (g);
  json_gen_string (g, "hcas");
  json_gen_array_open (g);
  for (size_t i = 0; i < t->n_hcas; i++)
    {
      const struct topo_hca *x = &t->hcas[i];
      json_gen_map_open (g);
      json_gen_kv_string (g, "name", x->h->name);
      gen_place (g, &x->pos, x->pos.pci != NULL);
      json_gen_string (g, "vf");
      json_gen_bool (g, x->vf);
      json_gen_map_close (g);
    }
  json_gen_array_close (g);
  json_gen_string (g, "matrix");
  json_gen_map_open (g);
  for (size_t i = 0; i < t->n_gpus; i++)
    {
      char key[16];
      snprintf (key, sizeof (key), "%u", t->gpus[i].index);
      json_gen_string (g, key);
      json_gen_map_open (g);
      for (size_t h = 0; h < t->n_hcas; h++)
        {
          const char *c = cell (t, i, h);
          json_gen_string (g, t->hcas[h].h->name);
          strcmp (c, "-") == 0 ? json_gen_null (g) : json_gen_string (g, c);
        }
      json_gen_map_close (g);
    }
  json_gen_map_close (g);
}

static int
render_json (const struct topo_table *t, const struct topo_choice *ch, FILE *out, roce_error_t *err)
{
  cleanup_json_gen struct json_gen *g = json_gen_new (true);

  json_gen_map_open (g);
  view_json (t, g);
  if (ch)
    {
      json_gen_string (g, "selected");
      json_gen_array_open (g);
      for (size_t i = 0; i < ch->n; i++)
        json_gen_string (g, ch->rails[i].hca->name);
      json_gen_array_close (g);
      json_gen_string (g, "rails");
      json_gen_array_open (g);
      for (size_t i = 0; i < ch->n; i++)
        {
          json_gen_map_open (g);
          json_gen_kv_string (g, "hca", ch->rails[i].hca->name);
          json_gen_kv_string (g, "class", topo_class_name (ch->rails[i].cls));
          json_gen_string (g, "gpus");
          json_gen_array_open (g);
          for (char **q = ch->rails[i].gpus; q && *q; q++)
            json_gen_string (g, *q);
          json_gen_array_close (g);
          json_gen_map_close (g);
        }
      json_gen_array_close (g);
    }
  json_gen_map_close (g);
  return json_gen_print (g, out, err);
}

int
topo_report (const struct roce_policy *p, const char *gpus_spec, bool json, FILE *out,
             roce_error_t *err)
{
  struct topo_table t = { 0 };
  struct topo_refs refs = { 0 };
  struct topo_choice ch = { 0 };
  bool chosen = false;
  int ret = -1;

  if (gpus_spec && topo_parse_visible ("--gpus", gpus_spec, &refs, err) < 0)
    goto out;
  if (table_whole (&t, p, err) < 0)
    goto out;
  if (gpus_spec)
    {
      const struct topo_container c = { .what = "--gpus", .key = "--gpus" };
      if (! refs.all && refs.n == 0)
        {
          roce_error_refuse (err, "--gpus", "GPUs (indexes, GPU- UUIDs or all)", "none",
                             "give the GPUs a container would get, as NVIDIA_VISIBLE_DEVICES "
                             "takes them");
          goto out;
        }
      if (topo_choose_gpus (&t, &c, &refs, &ch, err) < 0)
        goto out;
      chosen = true;
    }
  if (json)
    ret = render_json (&t, chosen ? &ch : NULL, out, err);
  else
    {
      render_text (&t, chosen ? &ch : NULL, gpus_spec, out);
      ret = 0;
    }
  if (ret == 0 && fflush (out) != 0)
    ret = roce_error_sys (err, errno, "write");
out:
  topo_choice_clear (&ch);
  topo_refs_clear (&refs);
  topo_table_clear (&t);
  return ret;
}

/* ---- for check: the host's view ------------------------------------------ */

struct topo_view
{
  struct topo_table t;
  char *error; /* why there is none (sysfs_root unreadable, ...) */
};

struct topo_view *
topo_view_read (const struct roce_policy *p)
{
  struct topo_view *v = xmalloc0 (sizeof (*v));
  cleanup_error roce_error_t err = NULL;
  if (table_whole (&v->t, p, &err) < 0)
    {
      topo_table_clear (&v->t);
      v->error = xstrdup (err->msg);
    }
  return v;
}

void
topo_view_free (struct topo_view *v)
{
  if (v == NULL)
    return;
  topo_table_clear (&v->t);
  free (v->error);
  free (v);
}

size_t
topo_view_gpus (const struct topo_view *v)
{
  return v->t.n_gpus;
}

void
topo_view_text (const struct topo_view *v, FILE *out)
{
  if (v->error)
    fprintf (out, "GPU-NIC topology: unreadable (%s)\n", v->error);
  else
    view_text (&v->t, out);
}

void
topo_view_json (const struct topo_view *v, struct json_gen *g)
{
  if (v->error)
    json_gen_kv_string (g, "error", v->error);
  else
    view_json (&v->t, g);
}

/* NFD's label names: <prefix>/<name>, name at most 63 bytes.  */
#define LABEL_NAME_MAX 63

char *
topo_view_nfd (const struct topo_view *v)
{
  const struct topo_table *t = &v->t;
  char *out = xstrdup ("");

  for (size_t h = 0; h < t->n_hcas && ! v->error; h++)
    {
      const struct topo_hca *x = &t->hcas[h];
      enum topo_class best = TOPO_SYS;
      cleanup_free char *root = NULL;
      cleanup_free char *near = xstrdup ("");
      bool any = false;
      if (x->pos.pci == NULL || strlen ("hca..pcie-root") + strlen (x->h->name) > LABEL_NAME_MAX)
        continue;
      /* A label value has no ':': pci0000:17 is pci0000-17.  */
      root = xstrdup (x->pos.root);
      for (char *q = root; *q; q++)
        if (*q == ':')
          *q = '-';
      str_list_add (&out, "", "roce.io/hca.%s.pcie-root=%s\n", x->h->name, root);
      if (x->pos.numa >= 0)
        str_list_add (&out, "", "roce.io/hca.%s.numa=%d\n", x->h->name, x->pos.numa);
      for (size_t g = 0; g < t->n_gpus; g++)
        if (t->gpus[g].located)
          {
            enum topo_class c = topo_distance (&t->gpus[g].pos, &x->pos);
            if (! any || c < best)
              best = c;
            any = true;
          }
      if (! any)
        continue;
      for (size_t g = 0; g < t->n_gpus; g++)
        if (t->gpus[g].located && topo_distance (&t->gpus[g].pos, &x->pos) == best)
          str_list_add (&near, ".", "%u", t->gpus[g].index);
      /* The GPUs nearest it (indexes, '.' between) and their class.  */
      str_list_add (&out, "", "roce.io/hca.%s.gpus=%s\nroce.io/hca.%s.gpu-class=%s\n", x->h->name,
                    near, x->h->name, topo_class_name (best));
    }
  return out;
}
