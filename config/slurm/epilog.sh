#!/bin/bash
# Slurm Epilog: stop the job's private meshdockd and clean up after it (docs/deployment.md,
# "Slurm"; prolog.sh says what the Prolog made).
#
#   1. meshdockctl shutdown over the job's socket: the daemon sets every slot's shutdown flag,
#      wakes consumers, removes its segments and socket, and exits 0;
#   2. if it is still there after MESHDOCK_SLURM_STOP_TIMEOUT seconds (default 10): SIGTERM
#      (the same graceful stop), then after 5 s more SIGKILL;
#   3. every /dev/shm object under the job's prefix "md<jobid>." owned by the job's uid is
#      removed (what a killed daemon leaves); MESHDOCK_SLURM_LOGDIR, when set, keeps a copy of
#      the daemon's log as <dir>/meshdockd-<jobid>.log; the run directory goes.
# A pid is signalled only if it is a process named meshdockd running as the job's uid (the
# pid file is root's, but the pid may have been reused since).
# Always exits 0 once the job's daemon is gone: an Epilog failure drains the node.
set -uo pipefail
PATH=/usr/sbin:/usr/bin:/sbin:/bin

defaults=${MESHDOCK_SLURM_DEFAULTS:-/etc/default/meshdock-slurm}
if [ -r "$defaults" ]; then
  # shellcheck source=/dev/null
  . "$defaults"
fi
: "${MESHDOCKCTL:=/usr/bin/meshdockctl}"
: "${MESHDOCK_SLURM_RUNDIR:=/run}"
: "${MESHDOCK_SLURM_STOP_TIMEOUT:=10}"

job=${SLURM_JOB_ID:?SLURM_JOB_ID is not set}
uid=${SLURM_JOB_UID:?SLURM_JOB_UID is not set}
log() { echo "meshdock epilog: job $job: $*" >&2; }
[[ $job =~ ^[0-9]+$ ]] || { log "SLURM_JOB_ID '$job' is not a number"; exit 1; }
[[ $uid =~ ^[0-9]+$ ]] || { log "SLURM_JOB_UID '$uid' is not a number"; exit 1; }

dir=$MESHDOCK_SLURM_RUNDIR/meshdock-$job
sock=$dir/sock/meshdockd.sock
prefix=md$job.
[ -d "$dir" ] || exit 0 # no daemon for this job on this node

# Is $1 the job's meshdockd, still running (a zombie has exited)?
ours() {
  local pid=$1 comm state ruid
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
  [ "$comm" = meshdockd ] || return 1
  state=$(awk '/^State:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || return 1
  [ "$state" != Z ] && [ "$state" != X ] || return 1
  ruid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || return 1
  [ "$ruid" = "$uid" ]
}

# Waits up to $2 seconds for $1 to stop being ours; status 0 when it has.
gone_within() {
  local pid=$1 end=$((SECONDS + $2))
  while ours "$pid"; do
    [ "$SECONDS" -lt "$end" ] || return 1
    sleep 0.1
  done
}

pid=$(cat "$dir/meshdockd.pid" 2>/dev/null || true)
if ours "$pid"; then
  if [ -S "$sock" ]; then
    "$MESHDOCKCTL" --addr "unix:$sock" --timeout 2 shutdown >/dev/null 2>&1 ||
      log "shutdown over $sock did not answer"
  fi
  if ! gone_within "$pid" "$MESHDOCK_SLURM_STOP_TIMEOUT"; then
    log "meshdockd pid $pid still running after ${MESHDOCK_SLURM_STOP_TIMEOUT} s: SIGTERM"
    kill -TERM "$pid" 2>/dev/null
    if ! gone_within "$pid" 5; then
      log "meshdockd pid $pid ignored SIGTERM: SIGKILL"
      kill -KILL "$pid" 2>/dev/null
      gone_within "$pid" 5 || { log "meshdockd pid $pid survives SIGKILL"; exit 1; }
    fi
  fi
elif [ -n "$pid" ]; then
  log "pid file names $pid, which is not this job's meshdockd: not signalled"
fi

# What a killed daemon leaves: segments under the job's prefix, owned by the job's user.
shopt -s nullglob
removed=0
for f in /dev/shm/"$prefix"*; do
  if [ -f "$f" ] && [ ! -L "$f" ] && [ "$(stat -c %u -- "$f")" = "$uid" ]; then
    rm -f -- "$f" && removed=$((removed + 1))
  fi
done
[ "$removed" -eq 0 ] || log "removed $removed leftover segment(s) /dev/shm/$prefix*"

if [ -n "${MESHDOCK_SLURM_LOGDIR:-}" ] && [ -f "$dir/meshdockd.log" ]; then
  cp -- "$dir/meshdockd.log" "$MESHDOCK_SLURM_LOGDIR/meshdockd-$job.log" ||
    log "cannot keep the log in $MESHDOCK_SLURM_LOGDIR"
fi
rm -rf -- "$dir"
exit 0
