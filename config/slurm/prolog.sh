#!/bin/bash
# Slurm Prolog: start a private meshdockd for the job on this node (docs/deployment.md, "Slurm").
#
# slurm.conf:
#   Prolog=/etc/slurm/meshdock/prolog.sh          # root, once per node at job allocation
#   Epilog=/etc/slurm/meshdock/epilog.sh          # root, at job end: stops it, cleans /dev/shm
#   TaskProlog=/etc/slurm/meshdock/taskprolog.sh  # job user, before each task: exports the address
#   PrologFlags=Alloc                             # run the Prolog at allocation, on every node
#
# The Prolog's output never reaches the job's environment (slurmd runs it as root, outside the
# job); the TaskProlog's does: each line it prints as "export NAME=value" is set in the task's
# environment. So this script writes the address to a root-owned file and taskprolog.sh prints it.
#
# What it makes, for job J of user U:
#   /run/meshdock-J/                 root:root 0755: meshdockd.json, meshdockd.pid, env, meshdockd.log
#   /run/meshdock-J/sock/            U 0700: meshdockd.sock (mode 0600), reachable by U's processes only
#   /dev/shm/mdJ.*                   the daemon's segments (prefix "mdJ.", mode 0600), owned by U
# The pid file sits in the root-owned directory so the job cannot point the Epilog (root) at
# another process; the Epilog also checks the pid's name and uid before it signals anything.
#
# Which jobs get a daemon: MESHDOCK_SLURM_WHEN=constraint (default) starts one only for jobs
# that ask for the node feature "meshdock" (sbatch --constraint=meshdock; give the feature to
# the nodes that have the package); "always" starts one for every job.
#
# Settings: /etc/default/meshdock-slurm (MESHDOCK_SLURM_DEFAULTS) is sourced if it exists,
# then these defaults apply to what is still unset:
#   MESHDOCKD=/usr/bin/meshdockd  MESHDOCKCTL=/usr/bin/meshdockctl
#   MESHDOCK_SLURM_RUNDIR=/run    MESHDOCK_SLURM_WHEN=constraint
#   MESHDOCK_SLURM_ROOTS=<home>   colon-separated directories the daemon may read; those that
#                                 do not exist are skipped; none left is an error
#   MESHDOCK_SLURM_DEVICE=auto    meshdockd's "device" (auto, cpu, cuda:N)
#   MESHDOCK_SLURM_START_TIMEOUT=60  seconds to wait for health SERVING
# A non-zero exit makes Slurm drain the node and requeue the job: this script fails only when
# the daemon cannot start (a node problem: missing package, GPU not answering).
set -euo pipefail
umask 022
PATH=/usr/sbin:/usr/bin:/sbin:/bin

defaults=${MESHDOCK_SLURM_DEFAULTS:-/etc/default/meshdock-slurm}
if [ -r "$defaults" ]; then
  # shellcheck source=/dev/null
  . "$defaults"
fi
: "${MESHDOCKD:=/usr/bin/meshdockd}"
: "${MESHDOCKCTL:=/usr/bin/meshdockctl}"
: "${MESHDOCK_SLURM_RUNDIR:=/run}"
: "${MESHDOCK_SLURM_WHEN:=constraint}"
: "${MESHDOCK_SLURM_DEVICE:=auto}"
: "${MESHDOCK_SLURM_START_TIMEOUT:=60}"

job=${SLURM_JOB_ID:?SLURM_JOB_ID is not set}
user=${SLURM_JOB_USER:?SLURM_JOB_USER is not set}
uid=${SLURM_JOB_UID:?SLURM_JOB_UID is not set}

log() { echo "meshdock prolog: job $job: $*" >&2; }
die() {
  log "$*"
  exit 1
}

[[ $job =~ ^[0-9]+$ ]] || die "SLURM_JOB_ID '$job' is not a number"
[[ $uid =~ ^[0-9]+$ ]] || die "SLURM_JOB_UID '$uid' is not a number"
[ "$(id -u -- "$user")" = "$uid" ] || die "user '$user' does not have uid $uid"
gid=${SLURM_JOB_GID:-$(id -g -- "$user")}
[[ $gid =~ ^[0-9]+$ ]] || die "SLURM_JOB_GID '$gid' is not a number"

case $MESHDOCK_SLURM_WHEN in
  always) ;;
  constraint)
    # Features are words joined by & | , [ ] ( ) * and counts (e.g. "gpu&meshdock").
    if ! [[ ${SLURM_JOB_CONSTRAINTS:-} =~ (^|[^A-Za-z0-9_.-])meshdock($|[^A-Za-z0-9_.-]) ]]; then
      exit 0
    fi
    ;;
  *) die "MESHDOCK_SLURM_WHEN '$MESHDOCK_SLURM_WHEN' is not 'constraint' or 'always'" ;;
esac

[[ $MESHDOCK_SLURM_RUNDIR =~ [[:cntrl:]] ]] && die "MESHDOCK_SLURM_RUNDIR holds a control character"
dir=$MESHDOCK_SLURM_RUNDIR/meshdock-$job
sock=$dir/sock/meshdockd.sock
prefix=md$job.
ctl() { "$MESHDOCKCTL" --addr "unix:$sock" --timeout 2 "$@"; }

# Run twice for one job (a step prolog without PrologFlags=Alloc, a retry): keep a daemon
# that answers.
if [ -f "$dir/env" ] && ctl health >/dev/null 2>&1; then
  log "meshdockd already serving on $sock"
  exit 0
fi
# Leftovers of an earlier run of this job id (a requeue whose Epilog did not finish).
if [ -e "$dir" ]; then
  log "removing the stale $dir"
  rm -rf -- "$dir"
fi

home=$(getent passwd "$user" | cut -d: -f6)
roots=()
IFS=: read -r -a wanted <<<"${MESHDOCK_SLURM_ROOTS:-$home}"
for r in "${wanted[@]}"; do
  if [[ $r =~ [[:cntrl:]] ]]; then
    log "root '$r' holds a control character; skipped"
  elif [ -n "$r" ] && [ -d "$r" ]; then
    roots+=("$r")
  else
    log "root '$r' is not a directory; skipped"
  fi
done
[ "${#roots[@]}" -gt 0 ] || die "no root directory exists (MESHDOCK_SLURM_ROOTS='${MESHDOCK_SLURM_ROOTS:-$home}')"

# JSON strings: escape \ and " (control characters are refused above and in the run dir).
json_string() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  printf '"%s"' "$s"
}

mkdir -p -- "$MESHDOCK_SLURM_RUNDIR"
mkdir -m 0755 -- "$dir"
install -d -m 0700 -o "$uid" -g "$gid" -- "$dir/sock"
{
  printf '{\n  "listen": %s,\n' "$(json_string "unix:$sock")"
  printf '  "socket_mode": "0600",\n  "shm_mode": "0600",\n'
  printf '  "prefix": %s,\n' "$(json_string "$prefix")"
  printf '  "device": %s,\n' "$(json_string "$MESHDOCK_SLURM_DEVICE")"
  printf '  "roots": ['
  sep=
  for r in "${roots[@]}"; do
    printf '%s%s' "$sep" "$(json_string "$r")"
    sep=", "
  done
  printf ']\n}\n'
} >"$dir/meshdockd.json"

# The daemon gets a clean environment: the job's user and GPUs, nothing of slurmd's.
# SLURM_JOB_GPUS lists the GPUs the job was given; with CUDA_DEVICE_ORDER=PCI_BUS_ID the daemon
# numbers them as the job's tasks do under ConstrainDevices (cuda:0 = the job's first GPU).
envs=(PATH=/usr/bin:/bin "HOME=$home" "USER=$user" "LOGNAME=$user" CUDA_DEVICE_ORDER=PCI_BUS_ID)
if [ -n "${SLURM_JOB_GPUS:-}" ]; then envs+=("CUDA_VISIBLE_DEVICES=$SLURM_JOB_GPUS"); fi
as_user=()
if [ "$(id -u)" != "$uid" ]; then
  as_user=(setpriv "--reuid=$uid" "--regid=$gid" --init-groups --)
fi
# setsid: its own session, so nothing aimed at slurmd's process group reaches it. Not a
# process-group leader here (no job control), so setsid execs in place and $! is the daemon.
setsid "${as_user[@]}" env -i "${envs[@]}" "$MESHDOCKD" --config "$dir/meshdockd.json" \
  </dev/null >>"$dir/meshdockd.log" 2>&1 &
pid=$!
echo "$pid" >"$dir/meshdockd.pid"

deadline=$((SECONDS + MESHDOCK_SLURM_START_TIMEOUT))
until ctl health >/dev/null 2>&1; do
  if ! kill -0 "$pid" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
    log "meshdockd did not come up (log follows)"
    tail -n 20 -- "$dir/meshdockd.log" >&2 || true
    kill -TERM "$pid" 2>/dev/null || true
    rm -rf -- "$dir"
    exit 1
  fi
  sleep 0.2
done
printf 'MESHDOCK_ADDR=unix:%s\nMESHDOCK_PREFIX=%s\n' "$sock" "$prefix" >"$dir/env"
log "meshdockd pid $pid serving on $sock for $user (prefix $prefix)"
