#!/usr/bin/env bash
# Install advisor for this user (no root):   ./install.sh
# Remove it again:                           ./install.sh --uninstall
#   ~/.local/opt/advisor/                               the app (advisor-gui, advisor)
#   ~/.local/bin/advisor, ~/.local/bin/advisor-gui       links to the launchers
#   ~/.local/share/applications/advisor.desktop         the menu entry
#   ~/.local/share/icons/hicolor/{256x256,scalable}/apps/advisor.{png,svg}
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LOCAL=$HOME/.local
DATA=${XDG_DATA_HOME:-$LOCAL/share}
APP=$LOCAL/opt/advisor
BIN=$LOCAL/bin
DESKTOP=$DATA/applications/advisor.desktop
ICON_PNG=$DATA/icons/hicolor/256x256/apps/advisor.png
ICON_SVG=$DATA/icons/hicolor/scalable/apps/advisor.svg

refresh() {
  command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q "$DATA/applications" 2>/dev/null || true
  # refresh an icon cache only where one exists already; a new one in ~/.local would go stale later
  if [ -f "$DATA/icons/hicolor/icon-theme.cache" ] && command -v gtk-update-icon-cache >/dev/null 2>&1; then
    gtk-update-icon-cache -q -t "$DATA/icons/hicolor" 2>/dev/null || true
  fi
  touch "$DATA/icons/hicolor" 2>/dev/null || true
}

if [ "${1:-}" = "--uninstall" ]; then
  for l in "$BIN/advisor" "$BIN/advisor-gui"; do
    # only our links, never a different advisor someone put there
    if [ -L "$l" ] && [ "$(readlink "$l")" = "$APP/$(basename "$l")" ]; then rm -f "$l"; fi
  done
  rm -rf "$APP"
  rm -f "$DESKTOP" "$ICON_PNG" "$ICON_SVG"
  refresh
  echo "advisor removed (your settings and saved data are kept)"
  exit 0
fi

[ -x "$HERE/advisor/advisor-gui" ] || { echo "install.sh: no advisor/ folder next to this script" >&2; exit 1; }
mkdir -p "$LOCAL/opt" "$BIN" "$(dirname "$DESKTOP")" "$(dirname "$ICON_PNG")" "$(dirname "$ICON_SVG")"
rm -rf "$APP.new"
cp -a "$HERE/advisor" "$APP.new"
rm -rf "$APP"
mv "$APP.new" "$APP"
ln -sfn "$APP/advisor" "$BIN/advisor"
ln -sfn "$APP/advisor-gui" "$BIN/advisor-gui"
install -m 644 "$HERE/advisor.png" "$ICON_PNG"
install -m 644 "$HERE/advisor.svg" "$ICON_SVG"
sed "s|@BINDIR@|$APP|g" "$HERE/advisor.desktop" > "$DESKTOP.tmp" && mv "$DESKTOP.tmp" "$DESKTOP"
chmod 644 "$DESKTOP"
refresh

echo "advisor $("$APP/advisor" --version 2>/dev/null | sed 's/^advisor //') installed in $APP"
echo "  menu entry: $DESKTOP"
echo "  commands:   $BIN/advisor, $BIN/advisor-gui"
case ":$PATH:" in
  *":$BIN:"*) ;;
  *) echo "  note: $BIN is not on your PATH; add it (e.g. in ~/.profile: export PATH=\"\$HOME/.local/bin:\$PATH\")" ;;
esac
echo "Qt needs a few system libraries most desktops already have: libGL, libEGL, libxcb, fontconfig and a font."
