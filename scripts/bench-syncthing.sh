#!/usr/bin/env bash
# Edit-to-readable latency through two real Syncthing daemons (issue 14).
#
#   scripts/bench-syncthing.sh path/to/release/coffer [items]
#
# Two replicas of a vault of ITEMS (default 1,000) items, each with its own
# Syncthing daemon on loopback (own --home, GUI and sync on 127.0.0.1 at free
# ports; discovery, relays, NAT, upgrades, usage and crash reporting off; the
# folder shared both ways, watched with a 1 s delay and rescanned every 2 s).
# Each run: A edits one item and runs `coffer sync`; the clock starts when
# that sync returns; B runs `coffer sync` + `coffer get` every 100 ms until it
# reads the new value. Reported: the median of RUNS (default 5) of that
# latency, and of A's and B's last `sync` alone. Skipped (exit 0 with a note)
# when syncthing is not installed. Daemons are always stopped.
set -euo pipefail
COFFER="${1:?usage: bench-syncthing.sh path/to/coffer [items]}"
BENCH="$(dirname "$COFFER")/coffer-bench"
N="${2:-1000}"
RUNS="${RUNS:-5}"
if ! command -v syncthing >/dev/null; then echo "bench-syncthing: syncthing not installed, skipped"; exit 0; fi
W="$(mktemp -d /tmp/coffer-bench-st.XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done; rm -rf "$W"; }
trap cleanup EXIT
export HOME="$W/home" XDG_DATA_HOME="$W/home/.local/share" XDG_RUNTIME_DIR="$W/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_SESSION
export COFFER_PASSPHRASE="bench passphrase" STNODEFAULTFOLDER=1 STNOUPGRADE=1 STNORESTART=1
KDF=(--kdf-memory 19M --kdf-iterations 2 --kdf-parallelism 1)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
now() { date +%s.%N; }

declare -A ID LPORT GPORT
for n in a b; do
  mkdir -p "$W/sync-$n/.stfolder"
  ID[$n]=$(syncthing generate --home="$W/st-$n" --no-default-folder --skip-port-probing 2>&1 | sed -n 's/.*Device ID: *//p' | head -1)
  LPORT[$n]=$(free_port); GPORT[$n]=$(free_port)
done
config() { # self peer
  local s=$1 p=$2
  cat > "$W/st-$s/config.xml" <<XML
<configuration version="36">
  <folder id="coffer" label="coffer" path="$W/sync-$s" type="sendreceive" rescanIntervalS="2" fsWatcherEnabled="true" fsWatcherDelayS="1">
    <device id="${ID[$s]}"></device><device id="${ID[$p]}"></device>
    <minDiskFree unit="%">0</minDiskFree><markerName>.stfolder</markerName><maxConflicts>10</maxConflicts>
  </folder>
  <device id="${ID[$s]}" name="self"><address>dynamic</address></device>
  <device id="${ID[$p]}" name="peer"><address>tcp://127.0.0.1:${LPORT[$p]}</address></device>
  <gui enabled="true" tls="false"><address>127.0.0.1:${GPORT[$s]}</address><apikey>bench-$s</apikey></gui>
  <options>
    <listenAddress>tcp://127.0.0.1:${LPORT[$s]}</listenAddress>
    <globalAnnounceEnabled>false</globalAnnounceEnabled><localAnnounceEnabled>false</localAnnounceEnabled>
    <relaysEnabled>false</relaysEnabled><natEnabled>false</natEnabled><startBrowser>false</startBrowser>
    <urAccepted>-1</urAccepted><autoUpgradeIntervalH>0</autoUpgradeIntervalH>
    <crashReportingEnabled>false</crashReportingEnabled><reconnectionIntervalS>1</reconnectionIntervalS>
    <minHomeDiskFree unit="%">0</minHomeDiskFree>
  </options>
</configuration>
XML
}
config a b; config b a
for n in a b; do
  syncthing serve --home="$W/st-$n" --no-browser --no-restart --no-upgrade --logfile="$W/st-$n/log" >/dev/null 2>&1 &
  PIDS+=($!)
done
wait_for() { # seconds command...
  local end=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || { echo "bench-syncthing: timed out waiting for: $*" >&2; return 1; }
    sleep 0.1
  done
}
bundles() { ls "$1"/*.coffer-bundle 2>/dev/null | wc -l; }
has_bundles() { [ "$(bundles "$1")" -ge "$2" ]; }

A="$W/a.coffer"; B="$W/b.coffer"
"$COFFER" init --vault "$A" "${KDF[@]}" >/dev/null 2>&1
"$BENCH" fill --vault "$A" "$N" 2>/dev/null
"$COFFER" sync --vault "$A" "$W/sync-a" 2>/dev/null
wait_for 60 has_bundles "$W/sync-b" 1
"$COFFER" clone --vault "$B" "$W/sync-b" >/dev/null 2>&1
"$COFFER" sync --vault "$B" "$W/sync-b" 2>/dev/null
wait_for 60 has_bundles "$W/sync-a" 2
"$COFFER" sync --vault "$A" "$W/sync-a" 2>/dev/null

lat=(); sa=(); sb=()
reads() { [ "$("$COFFER" get --vault "$B" bench/item-0 --field note 2>/dev/null)" = "$1" ]; }
for i in $(seq 1 "$RUNS"); do
  "$COFFER" edit --vault "$A" bench/item-0 --field "note=run-$i" 2>/dev/null
  t=$(now); "$COFFER" sync --vault "$A" "$W/sync-a" 2>/dev/null; t0=$(now)
  sa+=("$(python3 -c "print($t0-$t)")")
  end=$(( $(date +%s) + 60 ))
  while :; do
    s=$(now); "$COFFER" sync --vault "$B" "$W/sync-b" 2>/dev/null || true; e=$(now)
    if reads "run-$i"; then t1=$(now); break; fi
    [ "$(date +%s)" -lt "$end" ] || { echo "bench-syncthing: the edit did not arrive within 60 s" >&2; exit 1; }
    sleep 0.1
  done
  sb+=("$(python3 -c "print($e-$s)")")
  lat+=("$(python3 -c "print($t1-$t0)")")
  # Let B's bundle travel back before the next run.
  sleep 2; "$COFFER" sync --vault "$A" "$W/sync-a" >/dev/null 2>&1 || true
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {printf "%.2f", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mn() { printf '%s\n' "$@" | sort -g | head -1 | awk '{printf "%.2f", $1}'; }
mx() { printf '%s\n' "$@" | sort -g | tail -1 | awk '{printf "%.2f", $1}'; }
echo "items=$N runs=$RUNS (Syncthing $(syncthing --version | awk '{print $2}'), loopback, watcher delay 1 s)"
printf '%-44s %8s %8s %8s\n' benchmark median_s min_s max_s
printf '%-44s %8s %8s %8s\n' "edit on A -> readable on B (after A's sync)" "$(med "${lat[@]}")" "$(mn "${lat[@]}")" "$(mx "${lat[@]}")"
printf '%-44s %8s %8s %8s\n' "A's sync (merge + own bundle)" "$(med "${sa[@]}")" "$(mn "${sa[@]}")" "$(mx "${sa[@]}")"
printf '%-44s %8s %8s %8s\n' "B's sync that merged it" "$(med "${sb[@]}")" "$(mn "${sb[@]}")" "$(mx "${sb[@]}")"
