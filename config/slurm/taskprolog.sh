#!/bin/bash
# Slurm TaskProlog: hand the job's meshdockd to each task (docs/deployment.md, "Slurm").
#
# Runs as the job's user before every task. slurmstepd reads its standard output: a line
# "export NAME=value" sets NAME in the task's environment (a line "print ..." goes to the
# task's output). The Prolog cannot do this itself: its output never reaches the job.
# Prints nothing when the job has no daemon on this node.
#
#   MESHDOCK_ADDR    unix:/run/meshdock-<jobid>/sock/meshdockd.sock (meshdockctl, meshdock.Client,
#                    and the SDK's choice of whose segments to trust: the socket's owner)
#   MESHDOCK_PREFIX  md<jobid>.  pass it to attach: meshdock.attach(name, prefix=...)
set -u
defaults=${MESHDOCK_SLURM_DEFAULTS:-/etc/default/meshdock-slurm}
if [ -r "$defaults" ]; then
  # shellcheck source=/dev/null
  . "$defaults"
fi
dir=${MESHDOCK_SLURM_RUNDIR:-/run}/meshdock-${SLURM_JOB_ID:?SLURM_JOB_ID is not set}
[ -r "$dir/env" ] || exit 0
while IFS= read -r line; do
  case $line in
    MESHDOCK_ADDR=* | MESHDOCK_PREFIX=*) echo "export $line" ;;
  esac
done <"$dir/env"
