#!/usr/bin/env bash
# Checks that backends/cpu/FILE compiles, with the build's real flags and warnings as errors:
#   bash backends/cpu/onednn/check.sh onednn/conv.cc
# (-fsyntax-only: no object, no ninja; safe to run beside other checks.)
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
file="$root/backends/cpu/$1"
python3 - "$root/build/release/compile_commands.json" "$file" <<'PY'
import json, shlex, subprocess, sys
db, path = sys.argv[1], sys.argv[2]
for e in json.load(open(db)):
    if e["file"] == path:
        args = shlex.split(e["command"])
        out = args.index("-o")
        del args[out:out + 2]
        args = [a for a in args if a not in ("ccache",)]
        args.insert(1, "-fsyntax-only")
        sys.exit(subprocess.call(args, cwd=e["directory"]))
sys.exit(f"{path}: not in {db} (is it listed in its CMakeLists.txt?)")
PY
