#!/usr/bin/env bash
# build/prometheus.sh: makes sure Debian's prometheus package is installed (apt-get, waiting while
# another apt/dpkg holds the lock). The package's own system service is of no use to the tests and
# would sit on :9090: if it is running (started by the package's postinst), it is stopped and
# disabled through the init system. No process is killed by name; bin/start-prometheus always
# runs its own prometheus on its own free port and data dir.
source "$(dirname "$0")/../lib.sh"

install_prometheus() {
  local i
  [ "$(id -u)" = 0 ] || die "prometheus is not installed and we are not root: apt-get install prometheus"
  for i in $(seq 1 60); do
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus; then
      return 0
    fi
    # A missing package list (fresh machine) is fixed by an update; a held lock by waiting.
    if [ "$i" = 1 ] || [ $((i % 10)) = 0 ]; then
      DEBIAN_FRONTEND=noninteractive apt-get update -q || true
    fi
    log "apt-get install prometheus failed (dpkg lock held?); retrying in 10s ($i/60)"
    sleep 10
  done
  die "could not install prometheus with apt-get"
}

# stop_system_service: stops/disables the Debian service, if the init system says it runs.
stop_system_service() {
  if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
    if systemctl is-active --quiet prometheus; then
      log "stopping and disabling the system prometheus service"
      systemctl stop prometheus || true
    fi
    systemctl disable --quiet prometheus 2>/dev/null || true
  elif [ -x /etc/init.d/prometheus ]; then
    if /etc/init.d/prometheus status >/dev/null 2>&1; then
      log "stopping the system prometheus service (init.d)"
      /etc/init.d/prometheus stop || true
    fi
    command -v update-rc.d >/dev/null && update-rc.d prometheus disable >/dev/null 2>&1 || true
  fi
}

if ! command -v prometheus >/dev/null; then
  timed "apt-get install prometheus" install_prometheus
  stop_system_service
elif [ -n "$(pgrep -x -u prometheus prometheus 2>/dev/null || true)" ]; then
  stop_system_service
fi
command -v prometheus >/dev/null || die "prometheus is still not installed"
log "prometheus ready: $(command -v prometheus) ($(prometheus --version 2>&1 | head -n1))"
