#!/usr/bin/env bash
# Run the README's and deploy/'s setup steps as a new user would, on this machine, and fail loudly
# at the first step that does not work as written.
#
# usage: deploy/check-setup.sh [--keep]
#
# In a scratch directory it:
#   1. clones the committed checkout (what a user gets; uncommitted changes are not in it);
#   2. quick start: a fresh venv, `pip install .`, then the README's `slackzilla ask … --repo .`;
#   3. "Run it in Slack" step 1: `slackzilla manifest --url …` outside any checkout (valid JSON, the
#      clone's deploy/manifest.json untouched);
#   4. step 3-5: copies deploy/.env.example to .env, fills it in and runs `slackzilla serve` against a
#      local stand-in for Slack's Web API: with a token Slack rejects it must exit 1 with one clear
#      line; with a good one /healthz must answer 200;
#   5. the systemd install lines of deploy/slackzilla.service, verbatim except that /etc and /opt are
#      moved under the scratch directory and the owner/group is the current user's (no user is
#      created and no service is started on this machine), then `systemd-analyze verify` on the unit
#      when systemd-analyze is installed.
# The Docker image is not built here (it needs a Docker daemon); docker build is the only deploy step
# this script does not run.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sz-setup.XXXXXX")
KEEP=${1:-}
SERVE_PID=""
FAKE_PID=""
cleanup() {
  [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null || true
  [ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null || true
  if [ "$KEEP" = "--keep" ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
step() { printf '\n== %s\n' "$*"; }
fail() { echo "FAILED: $*" >&2; exit 1; }

step "1. clone the committed checkout"
if git -C "$SRC" rev-parse --git-dir > /dev/null 2>&1; then
  git clone -q "$SRC" "$WORK/slackzilla"
else  # an exported tree (no .git): copy it without local venvs and indexes
  mkdir "$WORK/slackzilla"
  tar -C "$SRC" --exclude=./.venv --exclude=./.ci-venv --exclude=./.rag -cf - . | tar -C "$WORK/slackzilla" -xf -
fi
cd "$WORK/slackzilla"

step "2. quick start: pip install . && slackzilla ask … --repo ."
python3 -m venv "$WORK/venv"
# shellcheck disable=SC1091
. "$WORK/venv/bin/activate"
python -m pip install -q --upgrade pip
pip install -q .
slackzilla ask "How does the index stay up to date?" --repo . > "$WORK/ask.txt" \
  || fail "the quick-start ask exited non-zero"
grep -q ':[0-9]' "$WORK/ask.txt" || fail "the quick-start ask printed no cited source"
echo "ok: $(wc -l < "$WORK/ask.txt") lines, first: $(head -1 "$WORK/ask.txt")"

step "3. slackzilla manifest --url outside a checkout"
mkdir "$WORK/elsewhere"
before=$(sha256sum deploy/manifest.json)
(cd "$WORK/elsewhere" && slackzilla manifest --url https://bot.example.test/slack/events)
python -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["settings"]["event_subscriptions"]["request_url"].startswith("https://bot.example.test/")' \
  "$WORK/elsewhere/slackzilla-manifest.json" || fail "the manifest is not valid or lacks the request URL"
[ "$before" = "$(sha256sum deploy/manifest.json)" ] || fail "manifest overwrote deploy/manifest.json"
echo "ok: $WORK/elsewhere/slackzilla-manifest.json"

step "4. .env from deploy/.env.example, then slackzilla serve against a Slack stand-in"
# A stand-in for Slack's Web API: auth.test answers ok for xoxb-good and invalid_auth otherwise.
cat > "$WORK/fake_slack.py" <<'EOF'
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Slack(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        good = self.headers.get("Authorization", "") == "Bearer xoxb-good"
        if self.path.endswith("/auth.test"):
            body = ({"ok": True, "user_id": "UBOT", "team_id": "T1", "team": "t", "user": "slackzilla",
                     "bot_id": "B1", "url": "https://t.slack.com/"} if good else {"ok": False, "error": "invalid_auth"})
        else:
            body = {"ok": True}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Slack)
print(server.server_address[1], flush=True)
server.serve_forever()
EOF
python "$WORK/fake_slack.py" > "$WORK/fake.port" &
FAKE_PID=$!
for _ in $(seq 50); do [ -s "$WORK/fake.port" ] && break; sleep 0.1; done
FAKE_URL="http://127.0.0.1:$(cat "$WORK/fake.port")/api/"
PORT=$(python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

mkdir "$WORK/run"
cp deploy/.env.example "$WORK/run/.env"
fill() { sed -i "s|^$1=.*|$1=$2|" "$WORK/run/.env"; grep -q "^$1=$2\$" "$WORK/run/.env" || echo "$1=$2" >> "$WORK/run/.env"; }
fill SLACK_BOT_TOKEN xoxb-revoked
fill SLACK_SIGNING_SECRET 0123456789abcdef0123456789abcdef
fill REPO_PATH "$WORK/slackzilla"
fill PORT "$PORT"
echo "SLACK_API_URL=$FAKE_URL" >> "$WORK/run/.env"
set +e
(cd "$WORK/run" && timeout 120 slackzilla serve > "$WORK/serve-bad.log" 2>&1)
rc=$?
set -e
[ "$rc" = 1 ] || { cat "$WORK/serve-bad.log"; fail "serve with a rejected token exited $rc, not 1"; }
grep -q "Slack rejected SLACK_BOT_TOKEN (invalid_auth)" "$WORK/serve-bad.log" \
  || { cat "$WORK/serve-bad.log"; fail "serve with a rejected token did not say so"; }
echo "ok: a rejected token: exit 1, '$(grep -m1 'Slack rejected' "$WORK/serve-bad.log")'"

fill SLACK_BOT_TOKEN xoxb-good
(cd "$WORK/run" && exec slackzilla serve > "$WORK/serve.log" 2>&1) &
SERVE_PID=$!
code=""
for _ in $(seq 240); do
  code=$(curl -s -o "$WORK/healthz.json" -w '%{http_code}' "http://127.0.0.1:$PORT/healthz" || true)
  [ "$code" = 200 ] && break
  kill -0 "$SERVE_PID" 2>/dev/null || { cat "$WORK/serve.log"; fail "serve exited before /healthz answered"; }
  sleep 0.5
done
[ "$code" = 200 ] || { cat "$WORK/serve.log"; fail "/healthz answered '$code', not 200"; }
echo "ok: /healthz $(cat "$WORK/healthz.json")"
kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true; SERVE_PID=""

step "5. systemd install lines of deploy/slackzilla.service (moved under $WORK/root)"
ROOT="$WORK/root"
mkdir -p "$ROOT"
me=$(id -un); group=$(id -gn)
# The unit's own "Install:" comment lines, as written.
sed -n 's/^#   sudo //p' deploy/slackzilla.service > "$WORK/install-lines.txt"
grep -q 'install -d' "$WORK/install-lines.txt" || fail "no install lines found in the unit's comment"
while IFS= read -r line; do
  case "$line" in
    useradd*|*systemctl*) echo "skip (changes this machine): $line"; continue ;;
  esac
  line=${line//\/path\/to\/slackzilla/$WORK\/slackzilla}
  line=${line//-o root -g slackzilla/-o $me -g $group}
  line=${line//\/etc\//$ROOT\/etc\/}
  line=${line//\/opt\//$ROOT\/opt\/}
  line=${line//python3.11 /python3 }
  line=${line//sudo /}
  line=${line%%#*}
  echo "+ $line"
  (cd "$WORK/slackzilla" && eval "$line") || fail "as written, this step fails: $line"
done < "$WORK/install-lines.txt"
[ -x "$ROOT/opt/slackzilla/venv/bin/slackzilla" ] || fail "the venv has no slackzilla command"
[ -f "$ROOT/etc/slackzilla/env" ] || fail "/etc/slackzilla/env was not installed"
if command -v systemd-analyze > /dev/null; then
  sed -e "s|/opt/|$ROOT/opt/|g" -e "s|/etc/slackzilla/env|$ROOT/etc/slackzilla/env|" \
      deploy/slackzilla.service > "$WORK/slackzilla.service"
  out=$(systemd-analyze verify "$WORK/slackzilla.service" 2>&1 | grep -v -E "Unknown (user|group)|User=|Group=" || true)
  [ -z "$out" ] || { echo "$out"; fail "systemd-analyze verify found problems in the unit"; }
  echo "ok: systemd-analyze verify"
else
  echo "skip: systemd-analyze is not installed"
fi

printf '\nall setup steps work as written\n'
