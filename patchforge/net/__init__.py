"""patchforge.net"""
