#!/usr/bin/env bash
# SSH agent benchmarks (issue 27; docs/ssh.md, docs/benchmarks.md):
#
#   scripts/bench-ssh.sh path/to/release/coffer
#
# One Ed25519 key made in a vault (`coffer ssh-keygen`) and served by
# `coffer ssh-agent`, and the same key held by OpenSSH's `ssh-agent`.
# Measures, same run:
#   ssh-keygen -Y sign through each agent (whole process, median)   target <= 1.5x OpenSSH's
#   the agent's own SIGN_REQUEST round trip on an open connection (p50)  target <= 1 ms
#   100 clients signing at once: all answered
#   the idle agent's resident memory (VmRSS)                          target <= 30 MB
set -euo pipefail
COFFER="$(realpath "${1:?usage: bench-ssh.sh path/to/release/coffer}")"
RUNS="${RUNS:-30}"
command -v ssh-agent >/dev/null && command -v ssh-keygen >/dev/null || { echo "ssh: skipped (no openssh-client)"; exit 0; }
W="$(mktemp -d /tmp/coffer-bench-ssh.XXXXXX)"
COFFER_AGENT=""; OPENSSH_AGENT=""
cleanup() {
  [ -n "$COFFER_AGENT" ] && kill "$COFFER_AGENT" 2>/dev/null || true
  [ -n "$OPENSSH_AGENT" ] && kill "$OPENSSH_AGENT" 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT
export HOME="$W/home" XDG_DATA_HOME="$W/home/.local/share" XDG_RUNTIME_DIR="$W/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" "$W/pub" "$W/agents"; chmod 700 "$XDG_RUNTIME_DIR" "$W/agents"
unset COFFER_VAULT COFFER_SESSION SSH_AUTH_SOCK
export COFFER_PASSPHRASE="bench passphrase"

echo "ssh agent: Ed25519; machine $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$COFFER" init --kdf-memory 19M --kdf-iterations 2 --kdf-parallelism 1 >/dev/null 2>&1
"$COFFER" ssh-keygen bench/ed > "$W/pub/key.pub" 2>/dev/null
"$COFFER" get bench/ed > "$W/key" 2>/dev/null; chmod 600 "$W/key"

"$COFFER" ssh-agent --socket "$W/agents/coffer.sock" >/dev/null 2>"$W/coffer-agent.log" &
COFFER_AGENT=$!
ssh-agent -D -a "$W/agents/openssh.sock" >/dev/null 2>&1 &
OPENSSH_AGENT=$!
for _ in $(seq 200); do [ -S "$W/agents/coffer.sock" ] && [ -S "$W/agents/openssh.sock" ] && break; sleep 0.05; done
SSH_AUTH_SOCK="$W/agents/openssh.sock" ssh-add -q "$W/key"
rm -f "$W/key"
sleep 1
idle_rss=$(awk '/VmRSS/ {print $2}' "/proc/$COFFER_AGENT/status")
openssh_rss=$(awk '/VmRSS/ {print $2}' "/proc/$OPENSSH_AGENT/status")

PYTHONPATH="$(dirname "$0")" python3 - "$W" "$RUNS" "$idle_rss" "$openssh_rss" "$COFFER_AGENT" <<'PY'
import os, socket, statistics, struct, sys, threading, time
import benchlib
w, runs, idle_rss, openssh_rss, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
message = b"a commit to sign\n" * 20
rows = []
for label, sock in [("ssh-keygen -Y sign via OpenSSH ssh-agent", "openssh.sock"), ("ssh-keygen -Y sign via coffer ssh-agent", "coffer.sock")]:
    env = dict(os.environ, SSH_AUTH_SOCK=f"{w}/agents/{sock}")
    rows.append(benchlib.measure(label, ["/usr/bin/ssh-keygen", "-Y", "sign", "-f", f"{w}/pub/key.pub", "-n", "file"], env, runs=runs, stdin_bytes=message))
benchlib.report(rows, rows[0]["label"])

def frame(body): return struct.pack(">I", len(body)) + body
def string(b): return struct.pack(">I", len(b)) + b
def recv(s):
    head = b""
    while len(head) < 4:
        chunk = s.recv(4 - len(head))
        if not chunk: raise EOFError
        head += chunk
    n = struct.unpack(">I", head)[0]; body = b""
    while len(body) < n:
        chunk = s.recv(n - len(body))
        if not chunk: raise EOFError
        body += chunk
    return body
def blob(s):
    s.sendall(frame(b"\x0b")); r = recv(s)
    n = struct.unpack(">I", r[1:5])[0]; assert n >= 1, "no identities"
    l = struct.unpack(">I", r[5:9])[0]
    return r[9:9 + l]

for name in ["openssh.sock", "coffer.sock"]:
    s = socket.socket(socket.AF_UNIX); s.connect(f"{w}/agents/{name}")
    req = frame(b"\x0d" + string(blob(s)) + string(b"x" * 64) + struct.pack(">I", 0))
    lat = []
    for _ in range(2000):
        t = time.perf_counter(); s.sendall(req); r = recv(s); lat.append(time.perf_counter() - t)
        assert r[0] == 14, "sign failed"
    lat.sort()
    print(f"  agent SIGN_REQUEST round trip ({name.split('.')[0]}): p50 {lat[len(lat)//2]*1e6:.0f} us, p99 {lat[int(len(lat)*0.99)]*1e6:.0f} us")

answered = 0; lock = threading.Lock()
def client(i):
    global answered
    s = socket.socket(socket.AF_UNIX); s.connect(f"{w}/agents/coffer.sock")
    s.sendall(frame(b"\x0d" + string(blob(s)) + string(bytes([i])) + struct.pack(">I", 0)))
    if recv(s)[0] == 14:
        with lock: answered += 1
    s.close()
ts = [threading.Thread(target=client, args=(i,)) for i in range(100)]
start = time.perf_counter()
for t in ts: t.start()
for t in ts: t.join()
print(f"  100 concurrent clients: {answered} answered in {(time.perf_counter()-start)*1000:.0f} ms")
busy = int(next(l.split()[1] for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")))
print(f"  coffer ssh-agent resident memory: idle {idle_rss/1024:.1f} MB, after the runs {busy/1024:.1f} MB (OpenSSH ssh-agent idle {openssh_rss/1024:.1f} MB)")
PY
