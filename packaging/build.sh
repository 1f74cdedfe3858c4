#!/usr/bin/env bash
# Build the frozen Linux app and its per-user installer tarball:
#   dist/advisor/                                  one folder, launchers advisor-gui and advisor
#   dist/advisor-<version>-linux-x86_64.tar.gz     that folder + advisor.desktop + icon + install.sh
# Everything it writes goes under dist/ and build/ (both git-ignored). Needs the project venv
# (scripts/bootstrap.sh makes it); installs PyInstaller into it when missing.
#   packaging/build.sh            build (clean) and package
#   packaging/build.sh --no-tar   build only
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MAKE_TAR=1
[ "${1:-}" = "--no-tar" ] && MAKE_TAR=0

[ -x .venv/bin/python ] || scripts/bootstrap.sh
PY=.venv/bin/python

# PyInstaller needs objdump (binutils) and, with Debian's own Python, the shared libpython.
if command -v apt-get >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1; then
  need=()
  command -v objdump >/dev/null 2>&1 || need+=(binutils)
  base=$("$PY" -c 'import sys; print(sys.base_prefix)')
  if [ "$base" = /usr ]; then
    pyver=$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
    dpkg-query -W -f='${Status}' "libpython$pyver" 2>/dev/null | grep -q "install ok installed" || need+=("libpython$pyver")
  fi
  if [ ${#need[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    echo "build: installing system packages: ${need[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
fi

if ! "$PY" -c 'import PyInstaller' 2>/dev/null; then
  echo "build: installing PyInstaller into .venv"
  "$PY" -m pip install -q 'pyinstaller>=6.10,<7'
fi

VERSION=$("$PY" -c 'import sys; sys.path.insert(0, "."); import advisor; print(advisor.__version__)')
ARCH=$(uname -m)
NAME="advisor-$VERSION-linux-$ARCH"

[ -f packaging/advisor.png ] || QT_QPA_PLATFORM=offscreen "$PY" packaging/make_icon.py >/dev/null

echo "build: advisor $VERSION, PyInstaller $("$PY" -c 'import PyInstaller; print(PyInstaller.__version__)')"
t0=$(date +%s.%N)
rm -rf dist/advisor build/pyinstaller
"$PY" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath dist --workpath build/pyinstaller packaging/advisor.spec 2>&1 \
  | grep -v -e "could not resolve 'libg[dt]k-3.so.0'" -e "pyqtgraph.opengl" || true
[ -x dist/advisor/advisor ] && [ -x dist/advisor/advisor-gui ] || { echo "build: PyInstaller failed" >&2; exit 1; }
t1=$(date +%s.%N)
got=$(dist/advisor/advisor --version)
[ "$got" = "advisor $VERSION" ] || { echo "build: dist/advisor/advisor --version said '$got'" >&2; exit 1; }
printf 'build: dist/advisor (%s) in %.1f s\n' "$(du -sh dist/advisor | cut -f1)" "$("$PY" -c "print($t1 - $t0)")"

# What the bundle expects from the system (informational): NEEDED libraries that it does not carry itself.
if command -v objdump >/dev/null 2>&1; then
  carried=$(find dist/advisor/_internal -name '*.so*' -printf '%f\n' | sort -u)
  expected=$(find dist/advisor -name '*.so*' -type f -exec objdump -p {} + 2>/dev/null | awk '/NEEDED/{print $2}' \
    | sort -u | grep -vxF -f <(printf '%s\n' "$carried") \
    | grep -v -e '^libc\.so' -e '^libm\.so' -e '^libdl\.so' -e '^libpthread\.so' -e '^librt\.so' -e '^ld-linux' \
      -e '^libresolv\.so' -e '^libutil\.so' | tr '\n' ' ' || true)
  echo "build: the bundle uses from the system: ${expected:-nothing beyond glibc}"
fi

[ "$MAKE_TAR" = 1 ] || exit 0

stage=build/pkg/$NAME
rm -rf build/pkg && mkdir -p "$stage"
cp -a dist/advisor "$stage/advisor"
cp packaging/advisor.png packaging/advisor.svg packaging/advisor.desktop packaging/install.sh "$stage/"
chmod +x "$stage/install.sh"
tar -C build/pkg -czf "dist/$NAME.tar.gz" "$NAME"
rm -rf build/pkg
t2=$(date +%s.%N)
printf 'build: dist/%s.tar.gz (%s) in %.1f s\n' "$NAME" "$(du -h "dist/$NAME.tar.gz" | cut -f1)" \
  "$("$PY" -c "print($t2 - $t1)")"
echo "build: install with: tar xzf dist/$NAME.tar.gz && ./$NAME/install.sh"
