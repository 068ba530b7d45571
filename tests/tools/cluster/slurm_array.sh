#!/usr/bin/env bash
# nonlocal-refine under a real Slurm: a one-node cluster (slurmctld, slurmd and munged of
# Debian's slurmctld, slurmd, slurm-client and munge packages) started in a scratch folder on
# this machine, on ports of its own, and stopped at the end. Then
#   1. the Slurm array script of docs/tools/nonlocal-refine.md, as written, refines a list of
#      PAIRS pairs (--shard auto from the array's variables); every output must equal an
#      unsharded run's byte for byte, and --summary of the report must count each pair done;
#   2. the same script with each pair made slower: one array task is cancelled while it runs
#      (scancel), requeued (scontrol requeue: the same task of the same array again), and the
#      outputs compared again, with no .partial or .claim file left behind.
# Exit status 0 when both hold, 1 when one does not, 77 (skipped, with the reason) when Slurm
# is not installed or cannot start here.
#
#   slurm_array.sh TOOL GUIDE DEPTH WORK DOCS [PAIRS]
set -uo pipefail
tool=$(realpath "$1") guide=$(realpath "$2") depth=$(realpath "$3") work=$4 docs=$5 pairs=${6:-40}

skip() { echo "skipped: $*"; exit 77; }
fail() { echo "FAILED: $*"; exit 1; }
for command in slurmctld slurmd munged sbatch scancel squeue sinfo; do
  command -v "$command" > /dev/null || skip "$command is not installed (Debian: slurmctld slurmd slurm-client munge, which scripts/setup installs)"
done

rm -rf "$work" && mkdir -p "$work/cluster/state" "$work/cluster/spool" "$work/whole" "$work/runs"
work=$(cd "$work" && pwd)
cluster=$work/cluster
host=$(hostname)
# Ports of this run's own: 17000 + a number from the process id, both free.
port=$((17000 + ($$ % 2000) * 2))

stop_cluster() {
  scancel --partition=test 2> /dev/null
  local pids=()
  for daemon in slurmd slurmctld munged; do
    [[ -f $cluster/$daemon.pid ]] && pids+=("$(cat "$cluster/$daemon.pid")")
  done
  kill "${pids[@]}" 2> /dev/null
  for _ in $(seq 50); do
    kill -0 "${pids[@]}" 2> /dev/null || break
    sleep 0.1
  done
}

# Whether array job $1 has ended: squeue answers, and lists none of its tasks.
ended() {
  local listed
  listed=$(squeue -h -j "$1" -o %i 2> /dev/null) || return 1
  [[ -z $listed ]]
}
wait_for() {
  for _ in $(seq 1500); do
    ended "$1" && return 0
    sleep 0.2
  done
  fail "array job $1 did not end in 300 s"
}
trap stop_cluster EXIT

dd if=/dev/urandom of="$cluster/munge.key" bs=1024 count=1 2> /dev/null && chmod 400 "$cluster/munge.key"
munged --force --key-file="$cluster/munge.key" --socket="$cluster/munge.socket" --pid-file="$cluster/munged.pid" \
  --log-file="$cluster/munged.log" --seed-file="$cluster/munged.seed" || skip "munged cannot start: $(tail -1 "$cluster/munged.log")"
cat > "$cluster/slurm.conf" << EOF
ClusterName=nonlocal
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$cluster/munge.socket
CredType=cred/munge
StateSaveLocation=$cluster/state
SlurmdSpoolDir=$cluster/spool
SlurmctldPidFile=$cluster/slurmctld.pid
SlurmdPidFile=$cluster/slurmd.pid
SlurmUser=$(id -un)
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
# Sixteen slots on this node, whatever its cores, so that short tasks overlap; tasks start
# as soon as others end.
SlurmdParameters=config_overrides
SchedulerParameters=sched_min_interval=0
MinJobAge=5
KillWait=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldLogFile=$cluster/slurmctld.log
SlurmdLogFile=$cluster/slurmd.log
NodeName=$host CPUs=16 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$cluster/slurm.conf
slurmctld -c -f "$SLURM_CONF" || skip "slurmctld cannot start: $(tail -2 "$cluster/slurmctld.log" 2> /dev/null)"
slurmd -f "$SLURM_CONF" || skip "slurmd cannot start (it needs root): $(tail -2 "$cluster/slurmd.log" 2> /dev/null)"
for _ in $(seq 100); do
  [[ $(sinfo -h -o %t 2> /dev/null) == idle ]] && break
  sleep 0.2
done
[[ $(sinfo -h -o %t 2> /dev/null) == idle ]] || skip "the node did not come up: $(tail -2 "$cluster/slurmd.log" 2> /dev/null)"

# The list, and the outputs of one unsharded run to compare with.
for ((i = 0; i < pairs; ++i)); do
  echo "$guide $depth $work/whole/$i.npy" >> "$work/whole.txt"
  echo "$guide $depth runs/$i.npy" >> "$work/pairs.txt"
done
"$tool" --batch "$work/whole.txt" --jobs 2 --quiet || fail "the unsharded run failed"

# The docs' script, as written: the indented block after "A Slurm array of 64 tasks".
awk '/^A Slurm array of/ {found = 1; next} found && /^    / {sub(/^    /, ""); print; started = 1; next}
     found && started {exit}' "$docs/tools/nonlocal-refine.md" > "$work/refine.sh"
grep -q -- "--shard auto" "$work/refine.sh" || fail "no Slurm array script found in $docs/tools/nonlocal-refine.md"
export PATH="$(dirname "$tool"):$PATH"

# Submits `script` (with sbatch's `options`) from $work and waits for its tasks to end.
run_array() {
  local script=$1; shift
  local job
  job=$(sbatch --parsable --chdir="$work" --output="$cluster/slurm-%A_%a.out" "$@" "$script") || fail "sbatch refused $script"
  wait_for "$job"
  echo "$job"
}

compare() {   # the outputs against the unsharded run's
  for ((i = 0; i < pairs; ++i)); do
    cmp -s "$work/runs/$i.npy" "$work/whole/$i.npy" || fail "$1: runs/$i.npy differs from the unsharded run's (or is missing)"
  done
  local left
  left=$(ls "$work/runs" | grep -E '\.(partial|claim)$')
  [[ -z $left ]] || fail "$1: left behind: $left"
  echo "$1: $pairs outputs equal the unsharded run's, nothing left behind"
}

run_array "$work/refine.sh" > /dev/null
compare "the docs' array script"
summary=$("$tool" --summary "$work/run.jsonl") || fail "--summary: $summary"
[[ $summary == "$pairs pairs in 1 report: $pairs done, 0 failed"* ]] || fail "--summary says: $summary"
echo "$summary" | head -1

# Again, each pair slower, eight tasks; one task cancelled while it runs, then run again.
slow="--depth-passes 4 --solver pcg-jacobi"
rm -f "$work/runs/"* "$work/whole/"* "$work/run.jsonl"
# shellcheck disable=SC2086
"$tool" --batch "$work/whole.txt" --jobs 2 --quiet $slow || fail "the unsharded run of the slower pairs failed"
sed -e 's/--array=0-63/--array=0-7/' -e "s/--skip-existing/--skip-existing $slow/" "$work/refine.sh" > "$work/slow.sh"
job=$(sbatch --parsable --chdir="$work" --output="$cluster/slurm-%A_%a.out" "$work/slow.sh") || fail "sbatch refused slow.sh"
cancelled=""
for _ in $(seq 500); do
  running=$(squeue -h -j "$job" -t RUNNING -o %K 2> /dev/null | head -1)
  if [[ -n $running && -n $(ls "$work/runs" 2> /dev/null | grep -E '\.(partial|claim)$') ]]; then
    scancel "${job}_${running}" && cancelled=$running
    break
  fi
  sleep 0.05
done
[[ -n $cancelled ]] || fail "no task was seen running to cancel"
sleep 0.5
scontrol requeue "${job}_${cancelled}" || fail "scontrol requeue ${job}_${cancelled} refused"
scontrol update JobId="${job}_${cancelled}" StartTime=now > /dev/null   # no wait before the retry
wait_for "$job"
echo "task $cancelled cancelled while it ran, then requeued"
compare "cancelled and requeued"
