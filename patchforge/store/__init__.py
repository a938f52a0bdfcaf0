"""patchforge.store: the git layer (the upstream object store, gitstore, and its parts by concern:
git, diff, catfile, imports, rangediff), the upstream kinds (sources), git URLs (giturl) and a
user's own repository (userrepo)."""
