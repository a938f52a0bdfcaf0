"""patchforge.rebase"""
