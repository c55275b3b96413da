#!/bin/sh
# Runs a zcclrun job whose rank 1 has a /dev/shm of its own (a tmpfs in a private mount
# namespace) while the node map still puts it beside rank 0: ranks of one node that cannot map
# one segment, as containers that do not share /dev/shm are.
#   private_dev_shm.sh ZCCLRUN RANKS PROGRAM [ARGS...]
# Needs root (unshare -m, mount); exits 77 (ctest's skip) where it cannot make the namespace.
set -eu
if [ "${ZCCL_PRIVATE_DEV_SHM_RANK:-}" = wrap ]; then
  if [ "$ZCCL_RANK" = 1 ]; then
    exec unshare --mount --propagation private \
      sh -c 'mount -t tmpfs tmpfs /dev/shm && exec "$@"' sh "$@"
  fi
  exec "$@"
fi
zcclrun=$1 ranks=$2
shift 2
if ! unshare --mount --propagation private sh -c 'mount -t tmpfs tmpfs /dev/shm' 2>/dev/null; then
  echo "private_dev_shm.sh: cannot make a mount namespace with a /dev/shm of its own" \
    "(needs root): skipped"
  exit 77
fi
export ZCCL_PRIVATE_DEV_SHM_RANK=wrap ZCCL_TEST_PRIVATE_DEV_SHM=1
exec "$zcclrun" -n "$ranks" --timeout 600 "$0" "$@"
