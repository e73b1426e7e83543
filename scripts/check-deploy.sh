#!/usr/bin/env bash
# Checks the shipped files of deploy/ with the real tools (docs/deploy.md):
#   - systemd-analyze verify on every unit, in a stand-in root laid out as the guide installs Parley,
#     after checking that every path a unit names is one the guide creates (the code paths against
#     this checkout: run after `npm run build`); any warning fails;
#   - caddy validate and caddy adapt on both Caddyfiles, with PARLEY_DOMAIN set;
#   - nginx -t on the nginx site inside a minimal nginx.conf (its certificate paths pointed at a
#     certificate made here).
# caddy and nginx come from Debian's packages, installed when missing (as root) and never started.
# Usage: bash scripts/check-deploy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=$(mktemp -d)
cleanup() {
  rm -rf "$work"
  if [ -n "${made_policy:-}" ]; then rm -f /usr/sbin/policy-rc.d; fi
}
trap cleanup EXIT

install_missing() {
  local missing=()
  command -v caddy >/dev/null 2>&1 || missing+=(caddy)
  command -v nginx >/dev/null 2>&1 || missing+=(nginx-light)
  command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
  [ ${#missing[@]} -eq 0 ] && return
  echo "installing ${missing[*]} from Debian's packages"
  # Packages start their service on install unless policy-rc.d forbids it: a check starts nothing.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    made_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
install_missing

fail() {
  echo "check-deploy: $*" >&2
  exit 1
}

echo "== systemd units (systemd-analyze verify)"
root="$work/root"
mkdir -p "$root/etc/systemd/system" "$root/usr/lib/systemd" "$root/usr/bin" "$root/etc/parley" \
  "$root/var/lib/parley" "$root/var/backups/parley" "$root/opt/parley/dist" "$root/opt/parley/bin"
# systemd's own units (sysinit.target and the rest), which every service depends on.
cp -r /usr/lib/systemd/system "$root/usr/lib/systemd/"
# The guide's layout: Node.js at /usr/bin/node (a stand-in), the checkout at /opt/parley, its
# settings at /etc/parley/parley.env, data and backups under /var.
printf '#!/bin/sh\n' >"$root/usr/bin/node"
chmod 755 "$root/usr/bin/node"
cp deploy/parley.env "$root/etc/parley/parley.env"
units=(parley.service parley@.service parley-backup.service parley-backup.timer)
for unit in "${units[@]}"; do cp "deploy/$unit" "$root/etc/systemd/system/"; done
for unit in "${units[@]}"; do
  # Every absolute path a unit names must exist in the guide's layout; /opt/parley is this checkout.
  while read -r p; do
    case "$p" in
    /opt/parley/*)
      rel=${p#/opt/parley/}
      [ -e "$repo/$rel" ] || fail "$unit names $p, but this checkout has no $rel (built?)"
      mkdir -p "$(dirname "$root/$p")" && cp "$repo/$rel" "$root/$p"
      ;;
    /opt/parley) ;;
    *) [ -e "$root$p" ] || fail "$unit names $p, which the guide's layout does not have" ;;
    esac
  done < <(grep -E '^(ExecStart|WorkingDirectory|EnvironmentFile|ReadWritePaths)=' "deploy/$unit" |
    cut -d= -f2- | tr ' ' '\n' | grep -E '^-?/' | sed 's/^-//')
done
out=$(cd "$work" && systemd-analyze verify --root="$root" parley.service parley@8081.service parley-backup.service parley-backup.timer 2>&1) ||
  fail "systemd-analyze verify failed: $out"
[ -z "$out" ] || fail "systemd-analyze verify warned: $out"
echo "ok: ${units[*]}"

echo "== Caddyfiles (caddy validate, caddy adapt)"
for file in deploy/Caddyfile deploy/Caddyfile.balanced; do
  PARLEY_DOMAIN=parley.example.com caddy validate --config "$file" --adapter caddyfile >"$work/caddy.log" 2>&1 ||
    fail "caddy validate $file: $(cat "$work/caddy.log")"
  # adapt prints the JSON it makes and warns (unformatted input, ignored directives) on stderr.
  PARLEY_DOMAIN=parley.example.com caddy adapt --config "$file" --adapter caddyfile >"$work/caddy.json" 2>"$work/caddy.err" ||
    fail "caddy adapt $file: $(cat "$work/caddy.err")"
  ! grep -q '"level":"warn"' "$work/caddy.err" || fail "caddy adapt $file warned: $(cat "$work/caddy.err")"
  grep -q '"parley.example.com"' "$work/caddy.json" || fail "$file does not serve the domain of PARLEY_DOMAIN"
  echo "ok: $file"
done

echo "== nginx site (nginx -t)"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=parley.example.com \
  -keyout "$work/privkey.pem" -out "$work/fullchain.pem" >/dev/null 2>&1
sed "s|/etc/letsencrypt/live/parley.example.com/|$work/|" deploy/nginx-parley.conf >"$work/parley.conf"
grep -q "$work/fullchain.pem" "$work/parley.conf" || fail "deploy/nginx-parley.conf no longer names certbot's certificate paths"
cat >"$work/nginx.conf" <<EOF
pid $work/nginx.pid;
error_log stderr;
events {}
http {
    access_log off;
    client_body_temp_path $work/body;
    proxy_temp_path $work/proxy;
    include $work/parley.conf;
}
EOF
nginx -t -q -p "$work" -c "$work/nginx.conf" -e stderr >"$work/nginx.log" 2>&1 || fail "nginx -t: $(cat "$work/nginx.log")"
echo "ok: deploy/nginx-parley.conf"
