#!/usr/bin/env bash
# Run each line of $COMMANDS as one patchforge command (the reusable action in action.yml).
# lint, status, overlays and verify get `--format github` (annotations and a job summary); every
# command runs even when an earlier one failed, and the step fails with the worst exit code.
set -uo pipefail
set -f  # a command line is split into words, never globbed
worst=0
while IFS= read -r line; do
  [ -z "${line//[[:space:]]/}" ] && continue
  # Split as a shell splits a line, quotes and `#` comments included (`--html "my report.html"`
  # is one word, without its quotes), but nothing expanded or run: Python's shlex.
  # (A line holds no newline, so neither does a word: one word a line.)
  if ! split=$(python3 -c 'import shlex, sys; print("\n".join(shlex.split(sys.argv[1], comments=True)))' "$line" 2>&1); then
    echo "::error title=patchforge::cannot read the command line: ${line} (${split##*: })"
    [ 2 -gt "$worst" ] && worst=2
    continue
  fi
  [ -z "$split" ] && continue
  mapfile -t words <<< "$split"
  # The command is the first word after patchforge's own options (`--offline lint`,
  # `--root stack overlays --check`, `-q status`), which come before it.
  at=0
  while [ "$at" -lt "${#words[@]}" ]; do
    case "${words[$at]}" in
      --root) at=$((at + 2)) ;;
      --root=*|--offline|--no-color|--verbose|--quiet|-v*|-q*) at=$((at + 1)) ;;
      *) break ;;
    esac
  done
  command="${words[$at]:-}"
  case "$command" in
    lint|status|overlays|verify) words+=(--format github) ;;
  esac
  echo "::group::patchforge ${words[*]}"
  patchforge "${words[@]}"
  code=$?
  echo "::endgroup::"
  if [ "$code" -ne 0 ]; then
    echo "::error title=patchforge ${command:-${words[0]}}::patchforge ${words[*]} exited with $code"
    [ "$code" -gt "$worst" ] && worst=$code
  fi
done <<< "$COMMANDS"
exit "$worst"
