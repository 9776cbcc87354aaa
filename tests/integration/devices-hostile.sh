# SPDX-License-Identifier: Apache-2.0
# A hostile image: /dev, /dev/infiniband or the node's own name is a symlink
# (absolute, relative, "..", to /etc or /proc), a regular file or a fifo.
# In every case the container is refused with one clear line or the node
# lands inside the rootfs, and nothing outside the rootfs changes: the host
# paths the links point at are compared before and after.
#
# /dev itself is tested against the hook directly (fake_runtime): runc 1.1.5
# follows an image's /dev symlink on its own when it creates /dev/fd,
# /dev/stdin... and /dev/ptmx, before any hook runs, and so writes onto the
# host; that is runc's, not the hook's, and no test here makes it do so.
# roce-suite: each-runtime test_dev_through_runc test_dev_infiniband_is_hostile
# roce-suite: memcheck test_dev_itself_is_hostile test_the_node_name_is_hostile
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/devices.sh"

NOT_A_DIR="a directory, or nothing vs"
NOT_A_NODE="a device node, a regular file or nothing vs"

setup_victim () {
  dev_host
  mkdir -p "$T/victim/infiniband"
  echo host > "$T/victim/x"
}

snapshot () { host_digest /etc "$T/victim" /dev/infiniband /proc/sys/kernel/hostname; }

check_host () { # NAME BEFORE
  local after
  after=$(snapshot)
  [ "$2" = "$after" ] || fail "[$1] the host changed: $(diff <(echo "$2") <(echo "$after"))"
  [ ! -e /etc/uverbs0 ] && [ ! -e /etc/infiniband ] || fail "[$1] a node landed in the host's /etc"
}

check_outcome () { # NAME EXPECT RC ID SEEN
  local name=$1 expect=$2 rc=$3 id=$4 seen=$5
  case $expect in
    start)
      [ "$rc" -eq 0 ] || fail "[$name] refused: $(cat "$T/$id.err")"
      assert_eq "character special file e7:c0" "$seen" "[$name] uverbs0 in the container"
      ;;
    refuse:*)
      [ "$rc" -ne 0 ] || fail "[$name] started: $seen"
      one_hook_line "$id"
      assert_file_contains "$T/$id.err" "${expect#refuse:}"
      ;;
    runtime:*)
      [ "$rc" -ne 0 ] || fail "[$name] started: $seen"
      assert_not_contains "$(cat "$T/$id.err")" "roce-hook:" "[$name] stderr"
      assert_file_contains "$T/$id.err" "${expect#runtime:}"
      ;;
    *) fail "bad expectation $expect" ;;
  esac
  echo "  $name: ${expect%%:*}"
}

# hostile NAME TMPFS SETUP EXPECT: through runc.
#   TMPFS   yes: the spec mounts a tmpfs on /dev (runc's default); no: it does not
#   SETUP   shell, run with R=<rootfs>
#   EXPECT  start            the container starts and sees uverbs0 (231:192)
#           refuse:<text>    one roce-hook line with <text>
#           runtime:<text>   runc itself refuses the image, before any hook
hostile () {
  local name=$1 tmpfs=$2 setup=$3 expect=$4 id b rc=0 before
  b=$T/$name
  id=$(new_id)
  ANNOTATIONS="roce.io/hca=mlx5_0" CMD='stat -c "%F %t:%T" /dev/infiniband/uverbs0' make_bundle "$b" "$POLICY"
  [ "$tmpfs" = yes ] || bundle_drop_dev_tmpfs "$b"
  (R=$b/rootfs && eval "$setup") || fail "[$name] setup failed"
  before=$(snapshot)
  run_container "$id" "$b" || rc=$?
  runtime delete -f "$id" >/dev/null 2>&1 || true
  check_host "$name" "$before"
  check_outcome "$name" "$expect" "$rc" "$id" "$(cat "$T/$id.out")"
}

# hostile_direct NAME SETUP EXPECT: the hook against fake_runtime.
hostile_direct () {
  local name=$1 setup=$2 expect=$3 id b rc=0 before seen=""
  b=$T/$name
  id=$(new_id)
  HOOKS=0 make_bundle "$b" "$POLICY"
  (R=$b/rootfs && eval "$setup") || fail "[$name] setup failed"
  before=$(snapshot)
  fake_runtime "$b"
  hook_prestart "$id" "$b" "$FR_PID" ${WRAP:-} || rc=$?
  # What the container would see once it pivots into the rootfs.
  seen=$(nsenter -t "$FR_PID" -m chroot "$b/rootfs" /bin/stat -c '%F %t:%T' /dev/infiniband/uverbs0 2>&1) || true
  kill -KILL "$FR_PID" 2>/dev/null || true
  wait "$FR_WAIT" 2>/dev/null || true
  check_host "$name" "$before"
  check_outcome "$name" "$expect" "$rc" "$id" "$seen"
}

dev_cases () {
  hostile_direct dev_abs_etc 'rmdir $R/dev && ln -s /etc $R/dev' start
  [ -e "$T/dev_abs_etc/rootfs/etc/infiniband/uverbs0" ] || fail "the mount point is not in the image's /etc"
  hostile_direct dev_abs_host_path "rmdir \$R/dev && ln -s $T/victim \$R/dev" \
    "refuse:\`/dev\` in the container's rootfs: $NOT_A_DIR a symlink that leads nowhere inside the rootfs"
  hostile_direct dev_rel_escape 'rmdir $R/dev && ln -s ../../../victim $R/dev' \
    "refuse:\`/dev\` in the container's rootfs: $NOT_A_DIR a symlink that leads nowhere inside the rootfs"
  hostile_direct dev_rel_escape_existing 'rmdir $R/dev && ln -s ../../../victim $R/dev && mkdir $R/victim' start
  hostile_direct dev_dotdot 'rmdir $R/dev && ln -s .. $R/dev' start
  hostile_direct dev_proc 'rmdir $R/dev && ln -s /proc $R/dev' \
    "refuse:\`/dev/infiniband\` in the container's rootfs: $NOT_A_DIR a path into /proc or /sys"
  hostile_direct dev_proc_self 'rmdir $R/dev && ln -s /proc/self $R/dev' \
    "refuse:\`/dev"
  hostile_direct dev_dangling 'rmdir $R/dev && ln -s /nonexistent $R/dev' \
    "refuse:\`/dev\` in the container's rootfs: $NOT_A_DIR a symlink that leads nowhere inside the rootfs"
  hostile_direct dev_loop 'rmdir $R/dev && ln -s dev $R/dev' \
    "refuse:\`/dev\` in the container's rootfs: $NOT_A_DIR a symlink loop"
  hostile_direct dev_file 'rmdir $R/dev && echo x > $R/dev' \
    "refuse:\`/dev\` in the container's rootfs: $NOT_A_DIR a regular file"
  hostile_direct dev_fifo 'rmdir $R/dev && mkfifo $R/dev' \
    "refuse:\`/dev\` in the container's rootfs: $NOT_A_DIR a fifo"
}

# dev_cases run the hook against fake_runtime: the same under every
# runtime, so once, under runc.
direct_once () {
  [ "$OCI_RUNTIME" = runc ] || skip "the hook alone against a stand-in runtime: the same under every runtime, run under runc"
}

test_dev_itself_is_hostile () {
  direct_once
  setup_victim
  dev_cases
}

# The same where openat2, open_tree and move_mount are missing: the fd walk
# resolves, and the bind mount goes through /proc/self/fd.
test_dev_itself_is_hostile_without_openat2 () {
  direct_once
  setup_victim
  WRAP=$BUILD/helpers/enosys dev_cases
}

# What the runtime itself can take: a relative link inside the rootfs, and
# /dev as a file or fifo (the runtime refuses those itself: "[Nn]ot a
# directory").
test_dev_through_runc () {
  setup_victim
  hostile dev_rel_inside yes 'rmdir $R/dev && mkdir $R/mydev && ln -s mydev $R/dev' start
  hostile dev_file no 'rmdir $R/dev && echo x > $R/dev' "runtime:ot a directory"
  hostile dev_fifo no 'rmdir $R/dev && mkfifo $R/dev' "runtime:ot a directory"
}

ib_cases () {
  hostile ib_abs_etc no 'mkdir -p $R/dev && ln -s /etc $R/dev/infiniband' start
  [ -e "$T/ib_abs_etc/rootfs/etc/uverbs0" ] || fail "the mount point is not in the image's /etc"
  hostile ib_abs_host_path no "ln -s $T/victim/infiniband \$R/dev/infiniband" \
    "refuse:\`/dev/infiniband\` in the container's rootfs: $NOT_A_DIR a symlink that leads nowhere inside the rootfs"
  hostile ib_rel_escape no 'ln -s ../../../../victim/infiniband $R/dev/infiniband' \
    "refuse:\`/dev/infiniband\` in the container's rootfs: $NOT_A_DIR a symlink that leads nowhere inside the rootfs"
  hostile ib_rel_escape_existing no 'ln -s ../../../../victim/infiniband $R/dev/infiniband && mkdir -p $R/victim/infiniband' start
  hostile ib_dotdot no 'ln -s ../.. $R/dev/infiniband' start
  hostile ib_proc no 'ln -s /proc $R/dev/infiniband' \
    "refuse:\`/dev/infiniband\` in the container's rootfs: $NOT_A_DIR a path into /proc or /sys"
  hostile ib_proc_self_fd no 'ln -s /proc/self/fd $R/dev/infiniband' \
    "refuse:\`/dev/infiniband\` in the container's rootfs: $NOT_A_DIR"
  hostile ib_loop no 'ln -s infiniband $R/dev/infiniband' \
    "refuse:\`/dev/infiniband\` in the container's rootfs: $NOT_A_DIR a symlink loop"
  hostile ib_file no 'echo x > $R/dev/infiniband' \
    "refuse:\`/dev/infiniband\` in the container's rootfs: $NOT_A_DIR a regular file"
  hostile ib_fifo no 'mkfifo $R/dev/infiniband' \
    "refuse:\`/dev/infiniband\` in the container's rootfs: $NOT_A_DIR a fifo"
  # Under runc's /dev tmpfs the image's /dev/infiniband is out of sight.
  hostile ib_abs_etc_tmpfs yes 'ln -s /etc $R/dev/infiniband' start
}

test_dev_infiniband_is_hostile () {
  setup_victim
  ib_cases
}

node_cases () {
  local mk='mkdir -p $R/dev/infiniband && '
  hostile node_abs_etc_passwd no "$mk"'ln -s /etc/passwd $R/dev/infiniband/uverbs0' \
    "refuse:\`/dev/infiniband/uverbs0\` in the container's rootfs: $NOT_A_NODE a symlink"
  hostile node_rel_escape no "$mk"'ln -s ../../../../victim/x $R/dev/infiniband/uverbs0' \
    "refuse:\`/dev/infiniband/uverbs0\` in the container's rootfs: $NOT_A_NODE a symlink"
  hostile node_dotdot no "$mk"'ln -s .. $R/dev/infiniband/uverbs0' \
    "refuse:\`/dev/infiniband/uverbs0\` in the container's rootfs: $NOT_A_NODE a symlink"
  hostile node_proc no "$mk"'ln -s /proc/sys/kernel/hostname $R/dev/infiniband/uverbs0' \
    "refuse:\`/dev/infiniband/uverbs0\` in the container's rootfs: $NOT_A_NODE a symlink"
  hostile node_dangling no "$mk"'ln -s /nonexistent $R/dev/infiniband/uverbs0' \
    "refuse:\`/dev/infiniband/uverbs0\` in the container's rootfs: $NOT_A_NODE a symlink"
  hostile node_fifo no "$mk"'mkfifo $R/dev/infiniband/uverbs0' \
    "refuse:\`/dev/infiniband/uverbs0\` in the container's rootfs: $NOT_A_NODE a fifo"
  hostile node_dir no "$mk"'mkdir $R/dev/infiniband/uverbs0' \
    "refuse:\`/dev/infiniband/uverbs0\` in the container's rootfs: $NOT_A_NODE a directory"
  hostile node_regular_file no "$mk"'echo image > $R/dev/infiniband/uverbs0' start
  assert_eq "image" "$(cat "$T/node_regular_file/rootfs/dev/infiniband/uverbs0")" "the image's file under the mount"
  hostile node_other_char_device no "$mk"'mknod $R/dev/infiniband/uverbs0 c 1 3' start
  # The second node is the hostile one: the first one's mount comes back out.
  hostile rdma_cm_abs_etc no "$mk"'ln -s /etc/shadow $R/dev/infiniband/rdma_cm' \
    "refuse:\`/dev/infiniband/rdma_cm\` in the container's rootfs: $NOT_A_NODE a symlink"
  [ ! -e "$T/rdma_cm_abs_etc/rootfs/dev/infiniband/uverbs0" ] || fail "uverbs0's mount point was left behind"
}

test_the_node_name_is_hostile () {
  setup_victim
  node_cases
}

# A filesystem of the host's under the rootfs, told without the host's mount
# table (hook/sys/rootfs.h): a tmpfs the host has mounted below a directory
# the spec rbind-mounts, reached through an image's /dev/infiniband link,
# and a tmpfs the host has mounted under root.path itself (the runtime's
# bind of the rootfs copies it into the container's namespace).  Nothing is
# made in either.
host_tmpfs_cases () {
  local src=$T/hostsrc-$1 keep
  mkdir -p "$src/sub"
  mount -t tmpfs -o mode=0755 roce-hostsub "$src/sub" || fail "tmpfs"
  defer umount -l "$src/sub"
  touch "$src/sub/kept"
  hostile "ib_rbind_submount_$1" no \
    "jq --arg s $src '.mounts += [{\"destination\":\"/host\",\"type\":\"bind\",\"source\":\$s,\"options\":[\"rbind\",\"rw\"]}]' \$b/config.json > \$b/c.json && mv \$b/c.json \$b/config.json && mkdir -p \$R/host && ln -s /host/sub \$R/dev/infiniband" \
    "refuse:\`/dev/infiniband\` in the container: on the container's own rootfs or a tmpfs of its own vs a mount from elsewhere"
  assert_eq "./kept" "$(cd "$src/sub" && find . -mindepth 1)" "the host tmpfs below the rbind mount"
  keep=$T/ib_host_mount_under_rootfs_$1/rootfs/dev/infiniband
  defer "umount -l $keep 2>/dev/null"
  hostile "ib_host_mount_under_rootfs_$1" no \
    "mkdir -p \$R/dev/infiniband && mount -t tmpfs -o mode=0755 roce-hostib \$R/dev/infiniband && touch \$R/dev/infiniband/kept" \
    "refuse:\`/dev/infiniband\` in the container: on the container's own rootfs or a tmpfs of its own vs a mount from elsewhere"
  assert_eq "./kept" "$(cd "$keep" && find . -mindepth 1)" "the host tmpfs under root.path"
}

test_a_host_tmpfs_under_the_rootfs_gets_nothing_made_in_it () {
  setup_victim
  need_cmd jq
  host_tmpfs_cases statmount
  # The same where the kernel has no statmount: the host's mount table.
  local real
  real=$(command -v "$OCI_RUNTIME")
  mkdir "$T/enosys-bin"
  printf '#!/bin/sh\nexec %s %s "$@"\n' "$BUILD/helpers/enosys" "$real" > "$T/enosys-bin/$OCI_RUNTIME"
  chmod +x "$T/enosys-bin/$OCI_RUNTIME"
  PATH=$T/enosys-bin:$PATH host_tmpfs_cases table
}

# /dev/infiniband and the node again, with the runtime (and so the hook)
# where openat2, open_tree and move_mount are missing.
test_infiniband_and_node_without_openat2 () {
  setup_victim
  local real
  real=$(command -v "$OCI_RUNTIME")
  mkdir "$T/enosys-bin"
  printf '#!/bin/sh\nexec %s %s "$@"\n' "$BUILD/helpers/enosys" "$real" > "$T/enosys-bin/$OCI_RUNTIME"
  chmod +x "$T/enosys-bin/$OCI_RUNTIME"
  PATH=$T/enosys-bin:$PATH ib_cases
  PATH=$T/enosys-bin:$PATH node_cases
}

run_tests
