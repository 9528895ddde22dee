#!/bin/bash
# The versions trial of docs/versions.md with the real CLI: docs/versions_trial.sh [DIR]
# (in DIR, else a new temporary one; ORCHESTRA= the orchestra command, else the one on PATH).
# Needs sqlite3 (to find the run ids) and setsid.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
O=${ORCHESTRA:-orchestra}   # the CLI of the venv the repo is installed in
T=tests.versions.trial_pipeline:build
export PYTHONPATH=$REPO
unset ORCHESTRA_MODEL ORCHESTRA_LOG
cd "${1:-$(mktemp -d)}" && rm -f trial.db* *.effects *.hold *.log
say() { echo; echo "\$ $*"; }
kill_in_writer() {  # name code: a run of code SIGKILLed in the writer's second tool call
  local name=$1 code=$2
  touch $name.hold
  TRIAL_CODE=$code setsid $O run --pipeline $T --db trial.db --lease 3 \
    --input "{\"effects\": \"$name.effects\", \"hold_work\": \"$name.hold\"}" > $name.log 2>&1 &
  local pid=$!
  for i in $(seq 1 600); do grep -q "work 2 start" $name.effects 2>/dev/null && break; sleep 0.05; done
  kill -9 -- -$pid; wait $pid 2>/dev/null; rm -f $name.hold
  sqlite3 trial.db "SELECT id FROM runs WHERE input LIKE '%$name.effects%'"
}
effects() { echo "effects ($(wc -l < $1.effects) lines): $(paste -sd, $1.effects | sed 's/,/, /g')"; }

say "TRIAL_CODE=v1 orchestra run --pipeline $T --db trial.db --lease 3 --input '{\"effects\": \"first.effects\", \"hold_work\": ...}'   # kill -9 in work 2"
FIRST=$(kill_in_writer first v1); effects first
say "orchestra runs --db trial.db"; TRIAL_CODE=v1 $O runs --db trial.db
sleep 3.5   # the killed process's lease runs out
say "TRIAL_CODE=v2 orchestra worker --db trial.db --idle-exit 1 --lease 3"
TRIAL_CODE=v2 $O worker --db trial.db --idle-exit 1 --lease 3; echo "(exit $?)"; effects first
say "orchestra show $FIRST --db trial.db"; TRIAL_CODE=v2 $O show $FIRST --db trial.db
say "TRIAL_CODE=v2 orchestra resume $FIRST --db trial.db"
TRIAL_CODE=v2 $O resume $FIRST --db trial.db; echo "(exit $?)"
say "TRIAL_CODE=v2 orchestra upgrade $FIRST --db trial.db"
TRIAL_CODE=v2 $O upgrade $FIRST --db trial.db; echo "(exit $?)"
say "TRIAL_CODE=v1 orchestra worker --db trial.db --idle-exit 1 --lease 3"
TRIAL_CODE=v1 $O worker --db trial.db --idle-exit 1 --lease 3; echo "(exit $?)"; effects first

say "TRIAL_CODE=v1 orchestra run ... second.effects ...   # killed at the same point"
SECOND=$(kill_in_writer second v1); effects second; sleep 3.5
say "TRIAL_CODE=v3 orchestra upgrade $SECOND --db trial.db"
TRIAL_CODE=v3 $O upgrade $SECOND --db trial.db; echo "(exit $?)"
say "TRIAL_CODE=v3 orchestra worker --db trial.db --idle-exit 1 --lease 3"
TRIAL_CODE=v3 $O worker --db trial.db --idle-exit 1 --lease 3; echo "(exit $?)"; effects second

say "TRIAL_CODE=v1 orchestra run ... third.effects ...   # killed at the same point"
THIRD=$(kill_in_writer third v1); effects third; sleep 3.5
say "TRIAL_CODE=v4 orchestra upgrade $THIRD --db trial.db"
TRIAL_CODE=v4 $O upgrade $THIRD --db trial.db; echo "(exit $?)"
say "TRIAL_CODE=v4 orchestra upgrade $THIRD --db trial.db --patched"
TRIAL_CODE=v4 $O upgrade $THIRD --db trial.db --patched; echo "(exit $?)"
say "TRIAL_CODE=v4 orchestra worker --db trial.db --idle-exit 1 --lease 3"
TRIAL_CODE=v4 $O worker --db trial.db --idle-exit 1 --lease 3; echo "(exit $?)"; effects third

say "TRIAL_CODE=v1 orchestra run ... fourth.effects ...   # killed at the same point"
FOURTH=$(kill_in_writer fourth v1); effects fourth
touch held.hold
TRIAL_CODE=v2 setsid $O run --pipeline $T --db trial.db --lease 3 \
  --input '{"effects": "v2run.effects", "hold": "held.hold"}' > v2run.log 2>&1 &
V2=$!
for i in $(seq 1 600); do grep -q "model writer 2" v2run.effects 2>/dev/null && break; sleep 0.05; done
sleep 3.5
say "orchestra runs --db trial.db --active   # a version-2 process serves a run of its own (held in its critic)"
TRIAL_CODE=v2 $O runs --db trial.db --active
rm -f held.hold; wait $V2; echo "(the version-2 run: exit $?)"
say "orchestra runs --db trial.db --active   # once the version-2 process ended"
TRIAL_CODE=v2 $O runs --db trial.db --active
