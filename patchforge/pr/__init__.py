"""patchforge.pr"""
