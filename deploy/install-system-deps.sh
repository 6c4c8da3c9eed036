#!/usr/bin/env bash
# Installs the Debian packages ragprep uses (Tesseract with Korean and English models)
# when they are missing and we are root; otherwise prints the exact command and carries
# on: ragprep then runs with OCR marked unavailable on every row that needed it.
# With --browser (`make test`) it also installs the test-only tools: Debian's chromium for the review
# report's browser test and strace for the no-outbound-network test (tests/reliability/).
set -u
missing=()
if [ "${1:-}" = "--browser" ] && [ ! -x /usr/bin/chromium ]; then
  missing+=(chromium)
fi
if [ "${1:-}" = "--browser" ] && ! command -v strace >/dev/null 2>&1; then
  missing+=(strace)
fi
command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr)
if command -v tesseract >/dev/null 2>&1; then
  langs=$(tesseract --list-langs 2>/dev/null)
  grep -qx kor <<<"$langs" || missing+=(tesseract-ocr-kor)
  grep -qx eng <<<"$langs" || missing+=(tesseract-ocr-eng)
else
  missing+=(tesseract-ocr-kor tesseract-ocr-eng)
fi
[ ${#missing[@]} -eq 0 ] && exit 0
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} ..."
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && $cmd -qq; } >/tmp/ragprep-apt.log 2>&1 \
    || { echo "apt-get failed (see /tmp/ragprep-apt.log); OCR will be marked unavailable"; exit 0; }
else
  echo "OCR needs: sudo apt-get update && sudo $cmd"
  echo "continuing without it: OCR will be marked unavailable (and browser and strace tests skipped)"
fi
exit 0
