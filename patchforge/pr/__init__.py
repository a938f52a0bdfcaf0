"""patchforge.pr: drafting upstream pull requests for single fixes.

- `draft`: where the PR goes (the upstream's git head), carrying the patch there with the rebase
  engine's pieces, the commit and its `git format-patch` text;
- `message`: author, date, message and trailers from the DEP-3 header;
- `body`: the upstream's pull-request template filled from the patch (or a plain body);
- `submit`: writing the draft out, pushing the branch, opening or updating the draft PR, and
  recording it in the patch header.
"""
