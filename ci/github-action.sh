#!/usr/bin/env bash
# Run each line of $COMMANDS as one patchforge command (the reusable action in action.yml).
# lint, status, overlays and verify get `--format github` (annotations and a job summary); every
# command runs even when an earlier one failed, and the step fails with the worst exit code.
set -uo pipefail
set -f  # a command line is split into words, never globbed
worst=0
# Split a line as a shell splits it (quotes, backslashes, a `#` comment) with nothing in it
# expanded or run: Python's shlex, with one difference from its own comments, which also cut
# `out#1.html` to `out`: like a shell, a comment starts only where an unquoted word starts
# with `#`. Blanks are space and tab, as for a shell. Words go out NUL-separated (an empty word
# such as `--title ""` at the end of a line survives); the reason a line cannot be split
# goes to stderr. A line ending in a backslash that is no word's (not escaped, not inside
# single quotes, not in a comment) goes on on the next line, as in a shell: exit 3, and the
# caller joins the two without the backslash and the line end.
split_line='
import shlex, sys
line = sys.argv[1]
quote, at, word_start = None, 0, True
while at < len(line):
    char, starts, word_start = line[at], word_start, False
    if quote == "\x27":
        quote = None if char == "\x27" else quote
    elif char == "\\":
        if at == len(line) - 1:
            sys.exit(3)
        at += 1
    elif quote == "\"":
        quote = None if char == "\"" else quote
    elif char in "\x27\"":
        quote = char
    elif char in " \t":
        word_start = True
    elif char == "#" and starts:
        break
    at += 1
lex = shlex.shlex(line, posix=True)
lex.whitespace, lex.whitespace_split, lex.commenters = " \t", True, ""
words = []
try:
    while not line[lex.instream.tell():].lstrip(" \t").startswith("#"):
        word = lex.get_token()
        if word is None:
            break
        words.append(word)
except ValueError as error:
    sys.exit(str(error))
sys.stdout.write("".join(word + "\0" for word in words))
'
words_file=$(mktemp)
trap 'rm -f "$words_file"' EXIT
continued=""
while IFS= read -r line || [ -n "$continued" ]; do
  line="$continued$line"
  continued=""
  [ -z "${line//[[:space:]]/}" ] && continue
  why=$(python3 -c "$split_line" "$line" 2>&1 >"$words_file")
  case $? in
    0) ;;
    3) continued="${line%\\}"; continue ;;  # (the last line's, as a shell's, ends there)
    *) echo "::error title=patchforge::cannot read the command line: ${line} (${why})"
       [ 2 -gt "$worst" ] && worst=2
       continue ;;
  esac
  mapfile -d '' -t words < "$words_file"
  [ "${#words[@]}" -eq 0 ] && continue
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
  # The lines still to run are on stdin: a command reading its own must not eat them.
  patchforge "${words[@]}" </dev/null
  code=$?
  echo "::endgroup::"
  if [ "$code" -ne 0 ]; then
    echo "::error title=patchforge ${command:-${words[0]}}::patchforge ${words[*]} exited with $code"
    [ "$code" -gt "$worst" ] && worst=$code
  fi
done <<< "$COMMANDS"
exit "$worst"
