#!/usr/bin/env bash
# Install the command-line tools the offline deploy checks use (tests/deploy), when missing:
#   prometheus + promtool (Debian package `prometheus`), kubectl for `kubectl kustomize`
#   (Debian package `kubernetes-client`). Non-interactive; never fails the build: without root,
#   apt-get or network it says what it skipped, and those tests skip with the same reason.
set -u

missing=()
command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
command -v kubectl >/dev/null 2>&1 || command -v kustomize >/dev/null 2>&1 || missing+=(kubernetes-client)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install_tools: skipped ${missing[*]} (needs root and apt-get); tests/deploy will skip what needs them"
  exit 0
fi

# The package would start a system-wide Prometheus on :9090; the tests start their own, so keep
# the service from starting during the install (policy-rc.d exit 101 = "not allowed").
created_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && created_policy=1
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
  apt-get update -q >/dev/null 2>&1
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || echo "install_tools: apt-get install ${missing[*]} failed (offline?); tests/deploy will skip what needs them"
fi
[ "$created_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
exit 0
