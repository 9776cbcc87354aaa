/* SPDX-License-Identifier: Apache-2.0 */
/* What the static programs (roce-hook, roce-runtime-engine) link instead of
 * glibc's name-service and loader functions.  libnl's utils.o and addr.o
 * reference getprotobyname, getprotobynumber, getaddrinfo and getnameinfo (for functions
 * we never call), and the loaders of libibverbs and etcd's libcurl call roce_dlopen (dl.h): linked
 * statically, glibc's versions would need its shared libraries at run time
 * (the linker says so).  A static program loads no library and resolves no
 * name: what needs that runs in roce-hook-engine, linked dynamically, to
 * which the static program hands the call (hook/main.c).  So these answer
 * from a small table, or fail saying why.  Linked only into the static
 * programs (the Makefile keeps this file out of libroce.a).  */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "lib/dl.h"

static char *no_aliases[] = { NULL };
static struct protoent protocols[] = {
  { (char *) "ip", no_aliases, 0 },     { (char *) "icmp", no_aliases, 1 },
  { (char *) "igmp", no_aliases, 2 },   { (char *) "tcp", no_aliases, 6 },
  { (char *) "udp", no_aliases, 17 },   { (char *) "ipv6", no_aliases, 41 },
  { (char *) "gre", no_aliases, 47 },   { (char *) "esp", no_aliases, 50 },
  { (char *) "ah", no_aliases, 51 },    { (char *) "ipv6-icmp", no_aliases, 58 },
  { (char *) "sctp", no_aliases, 132 }, { (char *) "udplite", no_aliases, 136 },
};

struct protoent *
getprotobyname (const char *name)
{
  for (size_t i = 0; i < sizeof (protocols) / sizeof (protocols[0]); i++)
    if (strcasecmp (protocols[i].p_name, name) == 0)
      return &protocols[i];
  return NULL;
}

struct protoent *
getprotobynumber (int proto)
{
  for (size_t i = 0; i < sizeof (protocols) / sizeof (protocols[0]); i++)
    if (protocols[i].p_proto == proto)
      return &protocols[i];
  return NULL;
}

int
getaddrinfo (const char *node, const char *service, const struct addrinfo *hints,
             struct addrinfo **res)
{
  (void) node, (void) service, (void) hints;
  *res = NULL;
  errno = ENOSYS;
  return EAI_SYSTEM;
}

int
getnameinfo (const struct sockaddr *sa, socklen_t salen, char *host, socklen_t hostlen, char *serv,
             socklen_t servlen, int flags)
{
  (void) sa, (void) salen, (void) host, (void) hostlen, (void) serv, (void) servlen, (void) flags;
  errno = ENOSYS;
  return EAI_SYSTEM;
}

void
freeaddrinfo (struct addrinfo *res)
{
  (void) res;
}

void *
roce_dlopen (const char *file, int mode)
{
  (void) file, (void) mode;
  return NULL;
}

void *
roce_dlsym (void *handle, const char *name)
{
  (void) handle, (void) name;
  return NULL;
}

const char *
roce_dlerror (void)
{
  return "this program is linked statically and loads no library (roce-hook-engine, beside it, "
         "does)";
}

#ifdef ROCE_DL_ORIGIN_STUB
/* glibc's start-up of a static program asks for the program's directory
 * (readlink of /proc/self/exe, a path walk and a d_path at every exec) for
 * $ORIGIN in the libraries it could load; a static program here loads none.
 * Unknown, as glibc says when the link cannot be read.  The Makefile defines
 * ROCE_DL_ORIGIN_STUB where a static program links with this (glibc 2.26 to
 * 2.41; from 2.42 glibc's own comes with what its loader needs).  */
const char *_dl_get_origin (void);
const char *
_dl_get_origin (void)
{
  return (const char *) -1;
}
#endif
