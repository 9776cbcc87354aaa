/* SPDX-License-Identifier: Apache-2.0 */
/* The last LLDP frame heard on a netdev, kept as <state_dir>/lldp/<netdev>.json
 * (replaced atomically), and what a reader makes of it as of now: heard and
 * within its TTL, expired, absent or unreadable.  The frame is kept raw and
 * decoded again by each reader, so one decoder says what it means.  */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/json_gen.h"
#include "lib/utils.h"
#include "lldp/lldp.h"

#define RECORD_MAX (4 * LLDP_FRAME_MAX + 1024)

static bool
netdev_ok (const char *s)
{
  size_t n = strlen (s);
  return n > 0 && n < 16 && strchr (s, '/') == NULL && strcmp (s, ".") != 0 && strcmp (s, "..") != 0
         && str_is_printable (s);
}

char *
lldp_record_path (const char *state_dir, const char *netdev)
{
  return xasprintf ("%s/lldp/%s.json", state_dir, netdev);
}

char *
lldp_record_format (const char *netdev, int64_t heard, const uint8_t *frame, size_t len)
{
  cleanup_json_gen struct json_gen *g = json_gen_new (false);
  cleanup_free char *hex = xmalloc0 (2 * len + 1);
  struct lldp_info in;
  cleanup_error roce_error_t err = NULL;
  const char *buf;
  size_t blen;

  for (size_t i = 0; i < len; i++)
    snprintf (hex + 2 * i, 3, "%02x", frame[i]);
  json_gen_map_open (g);
  json_gen_kv_integer (g, "version", 1);
  json_gen_kv_string (g, "netdev", netdev);
  json_gen_kv_integer (g, "heard", heard);
  if (lldp_decode (frame, len, &in, &err) == 0)
    {
      char id[2 * LLDP_TEXT_MAX + 2];
      lldp_identity (&in, id, sizeof (id));
      json_gen_kv_integer (g, "ttl", in.ttl);
      json_gen_kv_string (g, "switch", id);
    }
  json_gen_kv_string (g, "frame", hex);
  json_gen_map_close (g);
  if (json_gen_result (g, &buf, &blen, NULL) < 0)
    return NULL;
  return xasprintf ("%.*s\n", (int) blen, buf);
}

static int
hexval (char c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

int
lldp_record_parse (const char *text, size_t tlen, uint8_t *frame, size_t *len, int64_t *heard,
                   roce_error_t *err)
{
  cleanup_json struct json *j = NULL;
  const struct json *v;
  const char *hex;
  int64_t ver;
  size_t n;

  if (json_parse_n (text, tlen, &j, err) < 0)
    return -1;
  if (json_type (j) != JSON_OBJECT)
    return roce_error_make (err, EINVAL, "not a JSON object");
  v = json_object_get (j, "version");
  if (v == NULL || json_integer (v, &ver) < 0 || ver != 1)
    return roce_error_make (err, EINVAL, "no \"version\": 1");
  v = json_object_get (j, "heard");
  if (v == NULL || json_integer (v, heard) < 0 || *heard < 0)
    return roce_error_make (err, EINVAL, "\"heard\" is not a time in seconds");
  v = json_object_get (j, "frame");
  hex = v ? json_string (v) : NULL;
  if (hex == NULL)
    return roce_error_make (err, EINVAL, "no \"frame\" string");
  n = strlen (hex);
  if (n % 2 != 0 || n / 2 > LLDP_FRAME_MAX)
    return roce_error_make (err, EINVAL, "\"frame\" is not the hex of up to %d bytes",
                            LLDP_FRAME_MAX);
  for (size_t i = 0; i < n / 2; i++)
    {
      int hi = hexval (hex[2 * i]), lo = hexval (hex[2 * i + 1]);
      if (hi < 0 || lo < 0)
        return roce_error_make (err, EINVAL, "\"frame\" is not lower-case hex");
      frame[i] = (uint8_t) (hi << 4 | lo);
    }
  *len = n / 2;
  return 0;
}

int
lldp_record_write (const char *state_dir, const char *netdev, int64_t heard, const uint8_t *frame,
                   size_t len, roce_error_t *err)
{
  cleanup_free char *dir = xasprintf ("%s/lldp", state_dir);
  cleanup_free char *path = NULL;
  cleanup_free char *text = NULL;

  if (! netdev_ok (netdev))
    return roce_error_make (err, EINVAL, "'%s' is not an interface name", netdev);
  if (mkdir_p (dir, "state_dir/lldp", err) < 0)
    return -1;
  path = lldp_record_path (state_dir, netdev);
  text = lldp_record_format (netdev, heard, frame, len);
  if (text == NULL)
    return roce_error_make (err, EIO, "%s: the record could not be generated", path);
  return file_replace (path, text, strlen (text), err);
}

/* Whether the netdev is an 802.1Q VLAN device (its frames carry a tag).  */
static bool
netdev_is_vlan (const char *sysfs_root, const char *netdev)
{
  cleanup_free char *path = xasprintf ("%s/class/net/%s/uevent", sysfs_root, netdev);
  cleanup_free char *buf = NULL;
  size_t len = 0;
  cleanup_error roce_error_t err = NULL;

  if (read_file_at (AT_FDCWD, path, 8192, &buf, &len, &err) < 0)
    return false;
  return strstr (buf, "DEVTYPE=vlan\n") != NULL;
}

void
lldp_seen_load (const char *state_dir, const char *sysfs_root, const char *netdev, int64_t now,
                struct lldp_seen *out)
{
  cleanup_error roce_error_t err = NULL;
  cleanup_free char *text = NULL;
  uint8_t frame[LLDP_FRAME_MAX];
  size_t tlen = 0, flen = 0;

  memset (out, 0, sizeof (*out));
  if (! netdev_ok (netdev))
    {
      out->state = LLDP_SEEN_INVALID;
      out->detail = xstrdup ("not an interface name");
      return;
    }
  out->path = lldp_record_path (state_dir, netdev);
  out->host_tagged = netdev_is_vlan (sysfs_root, netdev);
  if (read_file_at (AT_FDCWD, out->path, RECORD_MAX, &text, &tlen, &err) < 0)
    {
      out->state = err->status == ENOENT ? LLDP_SEEN_NONE : LLDP_SEEN_INVALID;
      out->detail = err->status == ENOENT ? xasprintf ("no LLDP frame heard on %s", netdev)
                                          : xasprintf ("%s", err->msg);
      return;
    }
  if (lldp_record_parse (text, tlen, frame, &flen, &out->heard, &err) < 0
      || lldp_decode (frame, flen, &out->info, &err) < 0)
    {
      out->state = LLDP_SEEN_INVALID;
      out->detail = xasprintf ("%s: %s", out->path, err->msg);
      return;
    }
  out->age = now - out->heard;
  if (out->age < -60)
    {
      out->state = LLDP_SEEN_INVALID;
      out->detail = xasprintf ("%s: heard %lld s in the future (the clock moved)", out->path,
                               (long long) -out->age);
      return;
    }
  if (out->age < 0)
    out->age = 0;
  if (out->info.ttl == 0)
    {
      out->state = LLDP_SEEN_EXPIRED;
      out->detail = xasprintf ("the switch withdrew its LLDP information %lld s ago (TTL 0)",
                               (long long) out->age);
      return;
    }
  if (out->age > (int64_t) out->info.ttl)
    {
      out->state = LLDP_SEEN_EXPIRED;
      out->detail = xasprintf ("the last LLDP frame on %s is %lld s old, past its TTL of %u s",
                               netdev, (long long) out->age, out->info.ttl);
      return;
    }
  out->state = LLDP_SEEN_OK;
}

void
lldp_seen_clear (struct lldp_seen *s)
{
  free (s->path);
  free (s->detail);
  memset (s, 0, sizeof (*s));
}

const char *
lldp_seen_state_name (enum lldp_seen_state s)
{
  switch (s)
    {
      case LLDP_SEEN_NONE:
        return "none";
      case LLDP_SEEN_EXPIRED:
        return "expired";
      case LLDP_SEEN_INVALID:
        return "invalid";
      case LLDP_SEEN_OK:
        break;
    }
  return "ok";
}
