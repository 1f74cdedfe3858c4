#!/usr/bin/env bash
# Install what is missing, then start advisor. With no arguments: the desktop app (advisor-gui);
# otherwise: `advisor ARGS...` (the command line).
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh
if [ $# -eq 0 ]; then exec .venv/bin/advisor-gui; fi
exec .venv/bin/advisor "$@"
