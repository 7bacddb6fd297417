#!/usr/bin/env bash
# Build dist/Hearth.app with PyInstaller and wrap it in dist/Hearth-<version>.dmg.
# macOS only (PyInstaller cannot cross-build; hdiutil is macOS's). Not run on the Linux dev
# machine: see packaging/macos/README.md for what is and is not verified.
#
#   packaging/macos/build_dmg.sh            # unsigned (opens with right-click > Open)
#   SIGN_ID="Developer ID Application: NAME (TEAMID)" packaging/macos/build_dmg.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

[ "$(uname)" = Darwin ] || { echo "build_dmg.sh runs on macOS only" >&2; exit 2; }
PY=.venv/bin/python
VERSION=$($PY -c 'import tomllib;print(tomllib.load(open("pyproject.toml","rb"))["project"]["version"])')

$PY -m PyInstaller --noconfirm --clean packaging/hearth.spec --distpath dist --workpath build

if [ -n "${SIGN_ID:-}" ]; then
  # Hardened runtime is required for notarization; torch needs no extra entitlements on CPU.
  codesign --force --deep --options runtime --timestamp --sign "$SIGN_ID" dist/Hearth.app
fi

STAGE=$(mktemp -d)
cp -R dist/Hearth.app "$STAGE/"
ln -s /Applications "$STAGE/Applications"  # drag-to-install layout
hdiutil create -volname Hearth -srcfolder "$STAGE" -ov -format UDZO "dist/Hearth-$VERSION.dmg"
rm -rf "$STAGE"
echo "dist/Hearth-$VERSION.dmg"
