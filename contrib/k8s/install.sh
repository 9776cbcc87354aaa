#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# roce-hook on a Kubernetes node: the DaemonSet's install, sync and cleanup
# steps (contrib/k8s/roce-hook.yaml), run in its container against the
# host's root mounted at $ROCE_HOST_ROOT (/host).
#
#   install.sh install   programs, libraries, policy, etcd certificates,
#                        hooks.d files, the containerd handler; NFD labels
#                        (ROCE_MODE=nri, contrib/k8s/roce-hook-nri.yaml: no
#                        hooks.d file and no handler; NRI switched on where
#                        the node's containerd has it off, 1.7)
#   install.sh sync      install, then keep the policy, the certificates,
#                        the handler and the labels in step with their
#                        sources; on SIGTERM, cleanup when
#                        ROCE_CLEANUP_ON_TERM=1
#   install.sh cleanup   removes all of it, references first (hooks.d files,
#                        the handler, the labels), then what they name
#   install.sh handler   the containerd handler alone
#   install.sh nri       NRI switched on alone (containerd 1.7)
#   install.sh users     the containers containerd runs through roce-runtime
#
# Every file is written beside its place and renamed over it, mode set
# first: a runtime calling roce-runtime meanwhile finds the old program or
# the new one, never a missing, half-written or unexecutable one.  Programs
# go before the files that name them (libraries, engines, fronts, then
# hooks.d and the handler).  Every failure is one line on stderr:
#   roce-hook-install: <what failed>: <expected> vs <found> (fix: <how>)
set -eu

HOST=${ROCE_HOST_ROOT:-/host}
SRC=${ROCE_SRC:-/opt/roce-hook}
POLICY_SRC=${ROCE_POLICY_SRC:-/policy/config.json}
TLS_SRC=${ROCE_TLS_SRC:-/etcd-tls}
BIN=${ROCE_BIN_DIR:-/usr/local/bin}
LIB=${ROCE_LIB_DIR:-/usr/local/lib/roce-hook}
ETC=/etc/roce-hook
HOOKSD=${ROCE_HOOKSD:-/usr/share/containers/oci/hooks.d}
STATE=${ROCE_STATE_DIR:-/var/lib/roce-hook}
NFD_FILE=${ROCE_NFD_FILE:-/etc/kubernetes/node-feature-discovery/features.d/roce-hook}
CONTAINERD=${ROCE_CONTAINERD:-auto}  # auto, containerd, k3s, rke2, none
RESTART=${ROCE_RESTART:-systemd}     # systemd (nsenter into pid 1), none
INTERVAL=${ROCE_SYNC_INTERVAL:-10}
NFD_EVERY=${ROCE_NFD_EVERY:-6}       # labels refreshed every NFD_EVERY syncs
HANDLER=roce
CTD=${ROCE_CONTAINERD_DIR:-/etc/containerd}
IMPORT_GLOB=$CTD/conf.d/*.toml
IMPORT_RE=$(printf '%s' "$IMPORT_GLOB" | sed 's/[.*[\^$|]/\\&/g')
DROPIN=$CTD/conf.d/zz-roce-hook.toml
# shim: hooks.d and the containerd handler (roce-hook.yaml); nri: neither,
# the DaemonSet runs roce-hook nri (roce-hook-nri.yaml).
MODE=${ROCE_MODE:-shim}
NRI_DROPIN=$CTD/conf.d/zz-roce-hook-nri.toml
MARK="# roce-hook"
PROGRAMS="roce-hook-engine roce-runtime-engine roce-hook roce-runtime"

say () { printf 'roce-hook-install: %s\n' "$*"; }
die () { printf 'roce-hook-install: %s\n' "$*" >&2; exit 1; }

# put SRC DEST MODE: DEST (a host path) becomes a copy of SRC, atomically;
# 0 when it changed, 1 when it was already the same.
put () {
  _d=$HOST$2
  if [ -f "$_d" ] && [ ! -L "$_d" ] && cmp -s "$1" "$_d"; then
    chmod "$3" "$_d"
    return 1
  fi
  mkdir -p "$(dirname "$_d")"
  _t=$(dirname "$_d")/.$(basename "$_d").roce-new.$$
  cp "$1" "$_t" || { rm -f "$_t"; die "write $2: a copy of $1 vs a failed write (fix: free space on the host's $(dirname "$2"))"; }
  chmod "$3" "$_t"
  mv -f "$_t" "$_d"
  return 0
}

# put_text DEST MODE < text
put_text () {
  _s=$(mktemp "${TMPDIR:-/tmp}/roce-install.XXXXXX")
  cat > "$_s"
  _rc=0
  put "$_s" "$1" "$2" || _rc=$?
  rm -f "$_s"
  return $_rc
}

# ---- versions and the lease store's format -----------------------------------

# The format of the store in the host's state_dir: 0 none, 1 leases.json,
# 2 the layout (holders/), or what <state_dir>/format says.
host_store_format () {
  if [ -f "$HOST$STATE/format" ]; then
    tr -dc 0-9 < "$HOST$STATE/format"
  elif [ -d "$HOST$STATE/holders" ]; then
    echo 2
  elif [ -f "$HOST$STATE/leases.json" ]; then
    echo 1
  else
    echo 0
  fi
}

# "<version> <format written> <oldest read> <newest read>" of roce-hook $1;
# a roce-hook that says no format (before 0.1.0) wrote and read 1.
program_version () {
  _out=$("$1" version 2>/dev/null) || return 1
  _v=$(printf '%s\n' "$_out" | sed -n '1s/^roce-hook //p')
  _f=$(printf '%s\n' "$_out" | sed -n 's/^lease store format \([0-9]*\) (reads \([0-9]*\)-\([0-9]*\)).*/\1 \2 \3/p')
  [ -n "$_v" ] || return 1
  echo "$_v ${_f:-1 1 1}"
}

preflight () {
  [ -d "$HOST" ] || die "host root $HOST: a directory vs none (fix: mount the host's / at $HOST)"
  for p in $PROGRAMS; do
    [ -x "$SRC/$p" ] || die "image: an executable $SRC/$p vs none (fix: build the image with contrib/k8s/Containerfile)"
  done
  new=$(program_version "$SRC/roce-hook") ||
    die "image: $SRC/roce-hook version runs vs it does not (fix: an image for this node's architecture, $(uname -m))"
  set -- $new
  NEW_VERSION=$1
  have=$(host_store_format)
  if [ "$have" -gt 0 ] && { [ "$have" -lt "$3" ] || [ "$have" -gt "$4" ]; }; then
    die "install roce-hook $1 over $HOST$STATE: a lease store it reads (format $3-$4) vs format $have (fix: install a roce-hook that reads format $have, or drain the node and remove $STATE)"
  fi
  OLD_VERSION=
  if [ -x "$HOST$BIN/roce-hook" ]; then
    old=$(program_version "$HOST$BIN/roce-hook" || true)
    OLD_VERSION=${old%% *}
  fi
}

# ---- programs, libraries, policy, certificates, hooks.d ----------------------

install_programs () {
  changed=0
  # The engine's own libraries first (its RUNPATH, or its loader, names
  # them: contrib/k8s/Containerfile), then the engines, then the fronts
  # that run them.
  if [ -d "$SRC/lib" ]; then
    for f in "$SRC"/lib/*; do
      [ -e "$f" ] || continue
      ! put "$f" "$LIB/$(basename "$f")" 0755 || changed=1
    done
  fi
  for p in $PROGRAMS; do
    ! put "$SRC/$p" "$BIN/$p" 0755 || changed=1
  done
  got=$(program_version "$HOST$BIN/roce-hook") ||
    die "installed $BIN/roce-hook: it runs on the host vs it does not (fix: an image built for this node's libc and architecture)"
  [ "${got%% *}" = "$NEW_VERSION" ] ||
    die "installed $BIN/roce-hook: version $NEW_VERSION vs ${got%% *} (fix: another installer writes $BIN; stop it)"
  [ $changed = 0 ] || say "programs: roce-hook ${OLD_VERSION:-none} -> $NEW_VERSION in $BIN"
}

# The policy with this node's name in cluster.node (${NODE_NAME}), checked
# by the roce-hook about to use it before it replaces the one in force.
render_policy () {
  [ -f "$POLICY_SRC" ] || die "policy: $POLICY_SRC vs none (fix: mount the ConfigMap roce-hook-policy at $(dirname "$POLICY_SRC"))"
  if grep -q '\${NODE_NAME}' "$POLICY_SRC"; then
    case "${NODE_NAME:-}" in
      "" | *[!a-z0-9.-]*) die "policy: NODE_NAME an RFC 1123 node name vs '${NODE_NAME:-}' (fix: set NODE_NAME from the downward API, spec.nodeName)" ;;
    esac
  fi
  # The etcd Service's ClusterIP: the hook runs in the host's network
  # namespace, whose resolver knows no Service name (the DaemonSet's pod
  # resolves it: dnsPolicy ClusterFirstWithHostNet).
  ip=
  if grep -q '\${ETCD_SERVICE_IP}' "$POLICY_SRC"; then
    svc=${ROCE_ETCD_SERVICE:-roce-etcd.roce-system.svc.cluster.local}
    ip=$(getent hosts "$svc" | awk '{ print $1; exit }')
    case $ip in
      "" | *[!0-9.]*) die "policy: \${ETCD_SERVICE_IP}: the address of $svc vs '${ip:-no answer}' (fix: create the Service (contrib/k8s/etcd.yaml), or set ROCE_ETCD_SERVICE)" ;;
    esac
  fi
  sed -e "s/\${NODE_NAME}/${NODE_NAME:-}/g" -e "s/\${ETCD_SERVICE_IP}/$ip/g" "$POLICY_SRC" > "$1"
}

install_policy () {
  _p=$(mktemp "${TMPDIR:-/tmp}/roce-policy.XXXXXX")
  render_policy "$_p"
  # Unchanged (every sync but the one after a ConfigMap change): nothing to
  # check again.
  if cmp -s "$_p" "$HOST$ETC/config.json" && { [ -z "${ROCE_POLICY_COPY:-}" ] || cmp -s "$_p" "$ROCE_POLICY_COPY"; }; then
    rm -f "$_p"
    return 1
  fi
  # `check` exits 2 when it cannot run: a policy the hook refuses.
  _rc=0
  "$SRC/roce-hook" --config "$_p" check > /dev/null 2> "$_p.err" || _rc=$?
  if [ $_rc = 2 ]; then
    _why=$(head -1 "$_p.err")
    rm -f "$_p" "$_p.err"
    die "policy from $POLICY_SRC: one roce-hook accepts vs $_why (fix: correct the ConfigMap; the policy in force stays)"
  fi
  rm -f "$_p.err"
  _rc=0
  put "$_p" "$ETC/config.json" 0644 || _rc=$?
  # The metrics container's copy (an emptyDir it mounts read-only): the
  # same rendered policy, never the raw ConfigMap.
  if [ -n "${ROCE_POLICY_COPY:-}" ] && ! cmp -s "$_p" "$ROCE_POLICY_COPY"; then
    cp "$_p" "$ROCE_POLICY_COPY.new.$$" && chmod 0644 "$ROCE_POLICY_COPY.new.$$" &&
      mv -f "$ROCE_POLICY_COPY.new.$$" "$ROCE_POLICY_COPY"
  fi
  rm -f "$_p"
  [ $_rc != 0 ] || say "policy: $ETC/config.json from $POLICY_SRC"
  return $_rc
}

# The etcd client certificate, key and CA: all three change together, so
# they go to a new directory named by their digest, and etc/roce-hook/etcd
# becomes a symlink to it in one rename.
install_tls () {
  [ -f "$TLS_SRC/cert.pem" ] || return 1
  for f in ca.pem cert.pem key.pem; do
    [ -f "$TLS_SRC/$f" ] || die "etcd TLS: $TLS_SRC/$f vs none (fix: the Secret roce-hook-etcd-tls needs ca.pem, cert.pem and key.pem)"
  done
  sum=$(cat "$TLS_SRC/ca.pem" "$TLS_SRC/cert.pem" "$TLS_SRC/key.pem" | cksum | cut -d' ' -f1)
  cur=$(readlink "$HOST$ETC/etcd" 2>/dev/null || true)
  [ "$cur" != "etcd.$sum" ] || return 1
  d=$HOST$ETC/etcd.$sum
  rm -rf "$d.new"
  mkdir -p "$d.new"
  chmod 0700 "$d.new"
  cp "$TLS_SRC/ca.pem" "$TLS_SRC/cert.pem" "$d.new/"
  chmod 0644 "$d.new/ca.pem" "$d.new/cert.pem"
  (umask 077 && cp "$TLS_SRC/key.pem" "$d.new/key.pem")
  chmod 0600 "$d.new/key.pem"
  rm -rf "$d"
  mv "$d.new" "$d"
  ln -sfn "etcd.$sum" "$HOST$ETC/.etcd.roce-new"
  # A real directory there (an install before this script): aside first.
  if [ -d "$HOST$ETC/etcd" ] && [ ! -L "$HOST$ETC/etcd" ]; then
    rm -rf "$HOST$ETC/etcd.old"
    mv "$HOST$ETC/etcd" "$HOST$ETC/etcd.old"
  fi
  mv -Tf "$HOST$ETC/.etcd.roce-new" "$HOST$ETC/etcd"
  for old in "$HOST$ETC"/etcd.*; do
    [ "$old" = "$d" ] || rm -rf "$old"
  done
  say "etcd TLS: $ETC/etcd -> etcd.$sum"
  return 0
}

install_hooksd () {
  for f in "$SRC"/hooks.d/*.json; do
    [ -e "$f" ] || continue
    put "$f" "$HOOKSD/$(basename "$f")" 0644 || true
  done
}

# ---- the containerd handler --------------------------------------------------

detect_containerd () {
  case $CONTAINERD in
    auto)
      if [ -d "$HOST/var/lib/rancher/rke2" ]; then echo rke2
      elif [ -d "$HOST/var/lib/rancher/k3s" ]; then echo k3s
      elif [ -d "$HOST$CTD" ]; then echo containerd
      else echo none
      fi ;;
    *) echo "$CONTAINERD" ;;
  esac
}

# The configuration version the node's containerd reads: 3 for containerd
# 2.x, whose CRI runtime plugin is io.containerd.cri.v1.runtime; 2 for 1.6
# and 1.7 (io.containerd.grpc.v1.cri).  Where the root config.toml is of
# version 2 (Debian's containerd 2.1 ships one), the drop-in follows it:
# containerd 2.x migrates both, and some 2.x releases refuse a drop-in of a
# higher version than the root's ("drop-in config version 3 higher than root
# config version 2", a check containerd#13939 took out again).  The
# version from `containerd --version` on the host (ROCE_CONTAINERD_VERSION
# names it), else the root config's own.
# The major version of the node's containerd, empty when unknown.
containerd_major () {
  v=${ROCE_CONTAINERD_VERSION:-}
  if [ -z "$v" ]; then
    if [ "$HOST" = / ]; then v=$(containerd --version 2>/dev/null || true)
    else v=$(chroot "$HOST" containerd --version 2>/dev/null || true); fi
    v=$(echo "$v" | awk '{ print $3 }')
  fi
  v=${v#v}
  echo "${v%%.*}"
}

containerd_config_version () {
  major=$(containerd_major)
  root=$(sed -n 's/^[[:space:]]*version[[:space:]]*=[[:space:]]*\([0-9]*\).*/\1/p' "$HOST$CTD/config.toml" 2>/dev/null | head -1)
  case $major in
    1) echo 2 ;;
    [2-9]) if [ "${root:-3}" -ge 3 ]; then echo 3; else echo "$root"; fi ;;
    *) if [ "${root:-2}" = 3 ]; then echo 3; else echo 2; fi ;;
  esac
}

# The CRI plugin whose runtimes a config of version $1 names.
cri_runtime_plugin () {
  if [ "$1" = 3 ]; then echo 'plugins."io.containerd.cri.v1.runtime"'; else echo 'plugins."io.containerd.grpc.v1.cri"'; fi
}

# handler_tables SYSTEMD_CGROUP [VERSION]: the roce handler's tables.
handler_tables () {
  _p=$(cri_runtime_plugin "${2:-2}")
  printf '[%s.containerd.runtimes.%s]\n' "$_p" "$HANDLER"
  printf '  runtime_type = "io.containerd.runc.v2"\n'
  printf '  pod_annotations = ["roce.io/*"]\n  container_annotations = ["roce.io/*"]\n'
  printf '[%s.containerd.runtimes.%s.options]\n' "$_p" "$HANDLER"
  printf '  BinaryName = "%s/roce-runtime"\n' "$BIN"
  printf '  SystemdCgroup = %s\n' "$1"
  [ -z "${ROCE_RUNC_ROOT:-}" ] || printf '  Root = "%s"\n' "$ROCE_RUNC_ROOT"
}

# The CRI plugin's tables of a containerd config file (every table under
# plugins."io.containerd.grpc.v1.cri", but the roce handler's own).
cri_tables () {
  awk -v h="$HANDLER" '
    /^[ \t]*\[/ {
      t = $0; sub(/^[ \t]*\[+[ \t]*/, "", t); sub(/[ \t]*\]+.*$/, "", t)
      keep = (index(t, "plugins.\"io.containerd.grpc.v1.cri\"") == 1)
      if (t == "plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes." h ||
          t == "plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes." h ".options")
        keep = 0
    }
    keep { print }' "$1"
}

# The drop-in in the version the node's containerd reads.  containerd 1.x
# merges an imported file's plugin sections whole, not key by key
# (containerd#5837): a version 2 drop-in carries the CRI section in force
# (that of the last file loaded that has one: the main config, then
# conf.d/*.toml in order; ours sorts last) with the handler added, so the
# node keeps every runtime and setting it had.  containerd 2.x merges
# imports key by key (containerd#9982): a version 3 drop-in is the
# handler's tables alone.
containerd_dropin () {
  ver=$(containerd_config_version)
  src= sd3=
  sdre='^[[:space:]]*SystemdCgroup[[:space:]]*=[[:space:]]*\(true\|false\).*'
  for f in "$HOST$CTD/config.toml" "$HOST$CTD"/conf.d/*.toml; do
    [ -f "$f" ] && [ "$f" != "$HOST$DROPIN" ] || continue
    grep -q '^[[:space:]]*\[plugins\."io\.containerd\.grpc\.v1\.cri"' "$f" && src=$f
  done
  cri=$(mktemp "${TMPDIR:-/tmp}/roce-cri.XXXXXX")
  if [ "$ver" = 3 ]; then
    # runc's cgroup driver in force: the last file that sets it.
    for f in "$HOST$CTD/config.toml" "$HOST$CTD"/conf.d/*.toml; do
      [ -f "$f" ] && [ "$f" != "$HOST$DROPIN" ] || continue
      _s=$(sed -n "s/$sdre/\\1/p" "$f" | head -1)
      [ -z "$_s" ] || sd3=$_s
    done
  elif [ -n "$src" ]; then
    cri_tables "$src" > "$cri"
  fi
  # The handler's cgroup driver: that of runc's options in force (the
  # kubelet's cgroupDriver must match), else containerd's default (false).
  sd=${ROCE_SYSTEMD_CGROUP:-${sd3:-$(sed -n "s/$sdre/\\1/p" "$cri" | head -1)}}
  {
    echo "$MARK: the \"$HANDLER\" runtime handler, written by contrib/k8s/install.sh;"
    if [ "$ver" = 3 ]; then
      echo "$MARK: removed by its cleanup.  containerd 2.x reads configuration version 3 and"
      echo "$MARK: merges imported files key by key."
    else
      echo "$MARK: removed by its cleanup.  The CRI section in force is copied from ${src#"$HOST"}"
      echo "$MARK: (containerd 1.x replaces a plugin's section whole on import)."
    fi
    echo "version = $ver"
    echo
    cat "$cri"
    # The default runtime must stay: containerd's own runc when nothing set it.
    if [ "$ver" = 2 ] && ! grep -q 'containerd\.runtimes\.runc\]' "$cri" && ! grep -q 'default_runtime_name' "$cri"; then
      printf '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
    fi
    handler_tables "${sd:-false}" "$ver"
  } | put_text "$DROPIN" 0644 && rc=0 || rc=$?
  rm -f "$cri"
  return $rc
}

# config.toml imports the drop-in directory (containerd 2.x's default config
# does; 1.x needs the line).  What was added is recorded for the cleanup.
containerd_imports () {
  cfg=$HOST$CTD/config.toml
  if [ -f "$cfg" ] && grep -q "^[[:space:]]*imports[[:space:]]*=.*\"$IMPORT_RE\"" "$cfg"; then
    return 1
  fi
  new=$(mktemp "${TMPDIR:-/tmp}/roce-cfg.XXXXXX")
  if [ ! -f "$cfg" ]; then
    printf 'version = %s\nimports = ["%s"] %s\n' "$(containerd_config_version)" "$IMPORT_GLOB" "$MARK" > "$new"
    how=created
  elif grep -q '^[[:space:]]*imports[[:space:]]*=[[:space:]]*\[.*\]' "$cfg"; then
    sed "s|^\([[:space:]]*imports[[:space:]]*=[[:space:]]*\[\)|\1\"$IMPORT_GLOB\", |" "$cfg" > "$new"
    how=entry
  elif grep -q '^[[:space:]]*imports[[:space:]]*=' "$cfg"; then
    rm -f "$new"
    die "$cfg: imports on one line vs a list over several lines (fix: add \"$IMPORT_GLOB\" to it by hand)"
  elif grep -q '^[[:space:]]*version[[:space:]]*=[[:space:]]*[23]' "$cfg"; then
    awk -v line="imports = [\"$IMPORT_GLOB\"] $MARK" '
      { print } !done && /^[ \t]*version[ \t]*=/ { print line; done = 1 }' "$cfg" > "$new"
    how=line
  else
    rm -f "$new"
    die "$cfg: containerd config version 2 vs version 1 (no version line) (fix: containerd config migrate, then run the install again)"
  fi
  put "$new" "$CTD/config.toml" 0644 || true
  rm -f "$new"
  echo "$how" | put_text "$CTD/.roce-hook-imports" 0644 || true
  return 0
}

# RKE2 and k3s write config.toml from config.toml.tmpl at every start: the
# handler goes into the template, after the base k3s generates.
k3s_template () {
  tmpl=$1/agent/etc/containerd/config.toml.tmpl
  t=$(mktemp "${TMPDIR:-/tmp}/roce-tmpl.XXXXXX")
  if [ -f "$HOST$tmpl" ]; then
    sed "/^$MARK begin/,/^$MARK end/d" "$HOST$tmpl" > "$t"
  else
    printf '%s created\n{{ template "base" . }}\n' "$MARK" > "$t"
  fi
  { echo "$MARK begin"; handler_tables "${ROCE_SYSTEMD_CGROUP:-true}"; echo "$MARK end"; } >> "$t"
  rc=0
  put "$t" "$tmpl" 0644 || rc=$?
  rm -f "$t"
  return $rc
}

restart_containerd () {
  unit=$1
  if [ -n "${ROCE_RESTART_CMD:-}" ]; then
    sh -c "$ROCE_RESTART_CMD" || die "restart $unit: done vs '$ROCE_RESTART_CMD' failed (fix: restart it by hand)"
    return 0
  fi
  case $RESTART in
    systemd)
      # Running pods keep running: their shims are not containerd's children.
      nsenter -t 1 -m -u -i -n -p -- systemctl restart "$unit" ||
        die "restart $unit: done vs systemctl failed (fix: systemctl restart $unit on the node)" ;;
    *) say "$unit: restart it to load roce-hook's drop-in (ROCE_RESTART=$RESTART)" ;;
  esac
}

# The active unit among $@ (k3s or k3s-agent; rke2-server or rke2-agent).
active_unit () {
  [ -z "${ROCE_RESTART_CMD:-}" ] || { echo "$1"; return; }
  for u in "$@"; do
    if nsenter -t 1 -m -- systemctl is-active -q "$u" 2>/dev/null; then echo "$u"; return; fi
  done
  echo "$1"
}

install_handler () {
  kind=$(detect_containerd)
  case $kind in
    containerd)
      c=0
      ! containerd_imports || c=1
      ! containerd_dropin || c=1
      [ $c = 0 ] || { say "containerd: handler $HANDLER in $DROPIN"; restart_containerd containerd; } ;;
    k3s) ! k3s_template /var/lib/rancher/k3s || { say "k3s: handler $HANDLER in its config.toml.tmpl"; restart_containerd "$(active_unit k3s k3s-agent)"; } ;;
    rke2) ! k3s_template /var/lib/rancher/rke2 || { say "rke2: handler $HANDLER in its config.toml.tmpl"; restart_containerd "$(active_unit rke2-server rke2-agent)"; } ;;
    none) ;;
    *) die "ROCE_CONTAINERD: one of auto, containerd, k3s, rke2, none vs '$kind' (fix: set it in the DaemonSet)" ;;
  esac
}

# ---- NRI (ROCE_MODE=nri) ------------------------------------------------------------

# containerd 2.x and CRI-O 1.30+ run NRI by default; containerd 1.7 has it
# off: a drop-in of its own (version 2) switches it on, the NRI section in
# force copied into it (1.x replaces a plugin's section whole on import).
nri_dropin () {
  {
    echo "$MARK: NRI switched on for roce-hook nri, written by contrib/k8s/install.sh;"
    echo "$MARK: removed by its cleanup (containerd 1.7 ships NRI off)."
    echo "version = 2"
    echo
    echo '[plugins."io.containerd.nri.v1.nri"]'
    echo '  disable = false'
    for f in "$HOST$CTD/config.toml" "$HOST$CTD"/conf.d/*.toml; do
      [ -f "$f" ] && [ "$f" != "$HOST$NRI_DROPIN" ] || continue
      awk '/^[ \t]*\[/ { keep = ($0 ~ /^[ \t]*\[plugins\."io\.containerd\.nri\.v1\.nri"\][ \t]*$/); next }
           keep && $1 != "disable" && NF { print }' "$f"
    done
  } | put_text "$NRI_DROPIN" 0644
}

install_nri () {
  kind=$(detect_containerd)
  case $kind in
    containerd)
      major=$(containerd_major)
      case $major in [2-9] | [1-9][0-9]) return 0 ;; esac # on by default
      c=0
      ! containerd_imports || c=1
      ! nri_dropin || c=1
      [ $c = 0 ] || { say "containerd ${major:-?}.x: NRI switched on in $NRI_DROPIN"; restart_containerd containerd; } ;;
    k3s | rke2)
      say "$kind: NRI is on in its containerd 2.x; with containerd 1.7, set [plugins.\"io.containerd.nri.v1.nri\"] disable = false in its config.toml.tmpl" ;;
    none) ;;
    *) die "ROCE_CONTAINERD: one of auto, containerd, k3s, rke2, none vs '$kind' (fix: set it in the DaemonSet)" ;;
  esac
}

# ---- node-feature-discovery labels --------------------------------------------

# policy_path KEY DEFAULT: a path key of the node's policy (a plain JSON
# string), else its default.
policy_path () {
  _v=$(sed -n 's/.*"'"$1"'"[[:space:]]*:[[:space:]]*"\([^"\\]*\)".*/\1/p' "$HOST$ETC/config.json" 2>/dev/null | head -1)
  printf '%s\n' "${_v:-$2}"
}

# node_view PATH: empty when PATH seen here is the node's own (the same
# directory as $HOST/PATH, or both absent), else why not.  check reads the
# node's files at the policy's paths: from a view of other files (the
# container's own /var/lib), its labels would describe another node.
node_view () {
  _here=$(stat -Lc %d:%i "$1" 2>/dev/null) || _here=absent
  _node=$(stat -Lc %d:%i "$HOST$1" 2>/dev/null) || _node=absent
  [ "$_here" = "$_node" ] && return 0
  if [ "$_here" = absent ]; then
    printf '%s is not mounted here (the node has it)' "$1"
  else
    printf '%s here is not the node'"'"'s (%s vs %s)' "$1" "$_here" "$_node"
  fi
}

# roce.io/ready and the rest from `roce-hook check --nfd FILE`; a roce-hook
# without --nfd: roce.io/ready from check's exit status alone.  Only from the
# node's own view of the policy's state_dir (the LLDP records, the leases)
# and sysfs_root: otherwise the labels say not ready, and why.
install_labels () {
  [ -n "$NFD_FILE" ] || return 0
  d=$(dirname "$HOST$NFD_FILE")
  mkdir -p "$d"
  t=$d/.$(basename "$NFD_FILE").roce-new.$$
  rc=0
  why=$(node_view "$(policy_path state_dir /var/lib/roce-hook)")
  [ -n "$why" ] || why=$(node_view "$(policy_path sysfs_root /sys)")
  if [ -n "$why" ]; then
    printf 'roce-hook-install: NFD labels: check on the node'"'"'s files vs %s (fix: mount it in this container at the same path, as contrib/k8s/roce-hook.yaml does)\n' "$why" >&2
    printf '# roce-hook check not run: %s\nroce.io/ready=false\nroce.io/lossless=false\nroce.io/switch-pfc=unknown\n' "$why" > "$t"
  else
    "$SRC/roce-hook" --config "$HOST$ETC/config.json" check --nfd "$t" > /dev/null 2>&1 || rc=$?
  fi
  if [ ! -s "$t" ]; then
    rc=0
    "$SRC/roce-hook" --config "$HOST$ETC/config.json" check > /dev/null 2>&1 || rc=$?
    if [ $rc = 0 ]; then ready=true; else ready=false; fi
    printf '# roce-hook check (exit %s); written by contrib/k8s/install.sh\nroce.io/ready=%s\n' "$rc" "$ready" > "$t"
  fi
  if cmp -s "$t" "$HOST$NFD_FILE"; then rm -f "$t"; else mv -f "$t" "$HOST$NFD_FILE"; fi
}

# ---- cleanup --------------------------------------------------------------------

# Containers containerd runs through roce-runtime: their shim calls it for
# kill and delete, so the programs stay while any is left.
containers_on_roce () {
  for b in "$HOST${ROCE_CONTAINERD_STATE:-/run/containerd}"/io.containerd.runtime.v2.task/*/*/; do
    [ -d "$b" ] || continue
    # The shim keeps the runtime's path in the bundle: options.json (its
    # options, BinaryName among them) and, for runc's shim, `runtime`.
    if grep -qs "\"$BIN/roce-runtime\"" "$b/options.json" || grep -qsx "$BIN/roce-runtime" "$b/runtime"; then
      basename "$b"
    fi
  done
  return 0
}

cleanup () {
  # References first: nothing may name a program that is gone.
  for f in "$SRC"/hooks.d/*.json; do
    [ -e "$f" ] || continue
    rm -f "$HOST$HOOKSD/$(basename "$f")"
  done
  [ -z "$NFD_FILE" ] || rm -f "$HOST$NFD_FILE"
  kind=$(detect_containerd)
  case $kind in
    containerd)
      c=0
      [ ! -e "$HOST$DROPIN" ] || { rm -f "$HOST$DROPIN"; c=1; }
      [ ! -e "$HOST$NRI_DROPIN" ] || { rm -f "$HOST$NRI_DROPIN"; c=1; }
      how=$(cat "$HOST$CTD/.roce-hook-imports" 2>/dev/null || true)
      cfg=$HOST$CTD/config.toml
      t=$(mktemp "${TMPDIR:-/tmp}/roce-cfg.XXXXXX")
      case $how in
        created | line) awk -v l="imports = [\"$IMPORT_GLOB\"] $MARK" '$0 != l' "$cfg" > "$t" ;;
        entry) sed "s|\"$IMPORT_RE\", ||" "$cfg" > "$t" ;;
        *) rm -f "$t"; t= ;;
      esac
      if [ -n "$t" ]; then
        if [ "$how" = created ] && [ "$(grep -cv '^version = [23]$' "$t")" = 0 ]; then
          rm -f "$cfg"
        else
          put "$t" "$CTD/config.toml" 0644 || true
        fi
        rm -f "$t" "$HOST$CTD/.roce-hook-imports"
        c=1
      fi
      [ $c = 0 ] || restart_containerd containerd ;;
    k3s | rke2)
      tmpl=$HOST/var/lib/rancher/$kind/agent/etc/containerd/config.toml.tmpl
      if [ -f "$tmpl" ] && grep -q "^$MARK" "$tmpl"; then
        if grep -q "^$MARK created" "$tmpl"; then
          rm -f "$tmpl"
        else
          t=$(mktemp "${TMPDIR:-/tmp}/roce-tmpl.XXXXXX")
          sed "/^$MARK begin/,/^$MARK end/d" "$tmpl" > "$t"
          put "$t" "${tmpl#"$HOST"}" 0644 || true
          rm -f "$t"
        fi
        if [ "$kind" = k3s ]; then restart_containerd "$(active_unit k3s k3s-agent)"
        else restart_containerd "$(active_unit rke2-server rke2-agent)"; fi
      fi ;;
  esac
  left=$(containers_on_roce | tr '\n' ' ')
  if [ -n "$left" ]; then
    die "cleanup: no container running through $BIN/roce-runtime vs ${left% } (fix: delete those pods, then run the cleanup again; the programs and the policy stay until then, the handler and hooks.d files are gone)"
  fi
  # Then what they named: the fronts before the engines they run.
  for p in roce-runtime roce-hook roce-runtime-engine roce-hook-engine; do
    rm -f "$HOST$BIN/$p"
  done
  rm -rf "$HOST$LIB"
  rm -rf "$HOST$ETC"
  say "removed: hooks.d files, the $HANDLER handler, labels, programs, $ETC (the leases in $STATE stay)"
}

# ---- the steps --------------------------------------------------------------------

install () {
  preflight
  install_programs
  install_policy || true
  install_tls || true
  case $MODE in
    shim) install_hooksd; install_handler ;;
    nri) install_nri ;;
    *) die "ROCE_MODE: shim or nri vs '$MODE' (fix: set it in the DaemonSet)" ;;
  esac
  install_labels
}

sync_loop () {
  install
  n=0
  stop=0
  trap 'stop=1' TERM INT
  while [ $stop = 0 ]; do
    sleep "$INTERVAL" &
    wait $! || true
    [ $stop = 0 ] || break
    # Each step in a subshell: a ConfigMap the hook refuses is said (one
    # line) and the policy in force stays; the loop goes on.
    (install_policy) || true
    (install_tls) || true
    # A containerd config changed by someone else (the GPU operator adding
    # its runtime) is copied into the drop-in again.
    [ "$MODE" != shim ] || (install_handler) || true
    n=$((n + 1))
    if [ $((n % NFD_EVERY)) = 0 ]; then (install_labels) || true; fi
  done
  if [ "${ROCE_CLEANUP_ON_TERM:-0}" = 1 ]; then cleanup; fi
}

case ${1:-} in
  install) install ;;
  sync) sync_loop ;;
  cleanup) cleanup ;;
  handler) install_handler ;;
  nri) install_nri ;;
  users) containers_on_roce ;;
  *) echo "usage: install.sh install|sync|cleanup|handler|nri|users" >&2; exit 2 ;;
esac
